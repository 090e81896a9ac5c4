"""Starting an R2D2-family run: one machine, or one role per process.

* `train_eval(root_dir)` (the gin experiment, `run_experiment.experiment =
  @r2d2.train_eval`): the Reverb server, `num_actors` actors (threads, or
  spawned processes with `actor_mode = 'process'`) and the learner, all on
  this machine.
* `run_job(gin_files, gin_bindings, job)`: what the three binaries
  (`train/replay_server.py`, `train/actor.py`, `train/learner.py`) do:
  parse the gin file and call one role with the same `Settings`.

Every process builds `Settings()` from the same gin config, so they agree
on tables, specs and schedules.
"""

import functools
import multiprocessing
import os
import sys
import threading
import time
from typing import Any, Callable, Dict, Optional, Sequence

from absl import logging
import gin

from tfa_explore.experiments import errors
from tfa_explore.experiments import runner
from tfa_explore.experiments.r2d2 import actor as actor_lib
from tfa_explore.experiments.r2d2 import builder as builder_lib
from tfa_explore.experiments.r2d2 import learner as learner_lib
from tfa_explore.experiments.r2d2 import settings as settings_lib


def make_replay_server(settings, port: Optional[int] = None):
  """The run's Reverb server (`train/replay_server.py`'s job)."""
  return builder_lib.Builder(settings).make_replay_server(port)


def exit_when_orphaned(parent_pid: int, poll_seconds: float = 1.0) -> None:
  """Ends this process once `parent_pid` is gone (a daemon thread).

  A killed train_eval (SIGKILL, or SIGTERM without Python's clean-up) takes
  the in-process Reverb server with it but cannot stop its actor
  subprocesses, which would then wait on the dead server forever. The
  actor holds nothing that outlives the replay it was feeding, so it
  exits at once.
  """
  def watch():
    while os.getppid() == parent_pid:
      time.sleep(poll_seconds)
    logging.warning('Parent process %d is gone: actor exits.', parent_pid)
    os._exit(1)  # pylint: disable=protected-access

  threading.Thread(target=watch, name='orphan_watchdog', daemon=True).start()


def _actor_process_main(config_str, task, replay_server, root_dir,
                        parent_pid=None):
  """Entry point of an actor subprocess (spawned: a fresh interpreter)."""
  if parent_pid is not None:
    exit_when_orphaned(parent_pid)
  # The config string starts with the gin file's imports, which register
  # every configurable it names.
  gin.parse_config(config_str)
  actor_lib.run_actor(settings_lib.from_gin(), task, replay_server, root_dir)


class _ActorThread(threading.Thread):
  """`run_actor` in a thread; keeps its exception for the health check."""

  def __init__(self, settings, task, replay_server, root_dir, stop_event):
    super().__init__(name=f'r2d2_actor_{task}', daemon=True)
    self._args = (settings, task, replay_server, root_dir, stop_event)
    self.error = None

  def run(self):
    try:
      actor_lib.run_actor(*self._args)
    except Exception as e:  # pylint: disable=broad-except
      self.error = e
      logging.exception('Actor thread %s failed.', self.name)


def _start_actors(settings, address, root_dir, stop_event):
  if settings.actor_mode == 'thread':
    actors = [_ActorThread(settings, task, address, root_dir, stop_event)
              for task in range(settings.num_actors)]
  else:
    context = multiprocessing.get_context('spawn')
    config_str = gin.config_str()
    actors = [
        context.Process(target=_actor_process_main,
                        args=(config_str, task, address, root_dir,
                              os.getpid()),
                        name=f'r2d2_actor_{task}', daemon=True)
        for task in range(settings.num_actors)]
  for actor in actors:
    actor.start()
  return actors


def _health_check(actors):
  for actor in actors:
    error = getattr(actor, 'error', None)
    if error is not None:
      raise RuntimeError(f'{actor.name} failed: {error!r}') from error
    if not actor.is_alive():
      raise RuntimeError(
          f'{actor.name} exited before the learner finished '
          f'(exit code {getattr(actor, "exitcode", None)}).')


def _stop_actors(actors, stop_event, timeout_seconds):
  stop_event.set()
  deadline = time.time() + timeout_seconds
  for actor in actors:
    actor.join(timeout=max(deadline - time.time(), 0.1))
    if isinstance(actor, multiprocessing.process.BaseProcess):
      if actor.is_alive():
        actor.terminate()
        actor.join(timeout=10)


@gin.configurable(module='r2d2', allowlist=[])
def train_eval(root_dir: str,
               settings: Optional[settings_lib.Settings] = None
               ) -> Dict[str, float]:
  """R2D2 (or R2D3) on one machine: server, actors and learner.

  Args:
    root_dir: run directory (`run_kit` layout, plus actors/<i>/ actor
      summaries); resumes from its latest checkpoint.
    settings: the run's `Settings`; None builds them from gin
      (`r2d2.Settings.*`).

  Returns:
    The final evaluation {'AverageReturn', 'AverageEpisodeLength',
    'EnvironmentSteps'} (+ 'SuccessRate').
  """
  settings = settings or settings_lib.from_gin()
  builder = builder_lib.Builder(settings)
  # Before any actor starts: actors block until the learner's first
  # weights, so a bad input found by the learner would keep them waiting.
  env = settings.env_loader(seed=settings.seed)
  try:
    settings.replay.check_setup(env.time_step_spec(), env.action_spec(),
                                getattr(env, 'env_id', None))
  finally:
    env.close()
  server = builder.make_replay_server()
  address = f'localhost:{server.port}'
  stop_event = threading.Event()
  actors = _start_actors(settings, address, root_dir, stop_event)
  try:
    return learner_lib.run_learner(
        settings, address, root_dir,
        health_check=functools.partial(_health_check, actors))
  finally:
    _stop_actors(actors, stop_event, settings.shutdown_timeout_seconds)
    server.stop()


def run_job(gin_files: Sequence[str], gin_bindings: Sequence[str],
            job: Callable[[settings_lib.Settings], Any]) -> Any:
  """What the multi-machine binaries do: parse gin, run `job(settings)`.

  A bad gin file, binding or setting prints one message and exits with
  code 2, like train/train_eval.py.
  """
  try:
    runner.parse_gin(gin_files, gin_bindings)
    return job(settings_lib.from_gin())
  except errors.ConfigError as e:
    logging.error('%s', e)
    print(f'ERROR: {e}', file=sys.stderr)
    sys.exit(errors.CONFIG_ERROR_EXIT_CODE)
