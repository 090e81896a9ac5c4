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

import multiprocessing
import os
import signal
import sys
import threading
import time
from typing import Any, Callable, Dict, Optional, Sequence

from absl import logging
import gin
import reverb

from tfa_explore.config import exits
from tfa_explore.config import experiment as experiment_lib
from tfa_explore.config import gin_files as gin_files_lib
from tfa_explore.process import stop_signals
from tfa_explore.experiments.r2d2 import actor as actor_lib
from tfa_explore.experiments.r2d2 import builder as builder_lib
from tfa_explore.experiments.r2d2 import learner as learner_lib
from tfa_explore.experiments.r2d2 import settings as settings_lib


# How long a run stopped by a signal waits for its actors before ending
# their processes: it saved everything they would add.
_STOPPED_ACTORS_SECONDS = 5.0

# How much longer a stopping run waits for an actor thread past its
# deadline, rather than exit under it: longer than the bounded calls an
# actor told to stop can still be in (a server wait of 1 s after a 2 s
# reachability probe, `actor._TOLD_TO_STOP_SECONDS` of flushing, an env
# step); one blocked for good is not worth waiting for.
_THREAD_GRACE_SECONDS = 10.0

# Under root_dir on one machine: the Reverb checkpoints of the tables.
REPLAY_CHECKPOINT_DIR = 'replay_checkpoints'


def make_replay_server(settings, port: Optional[int] = None,
                       checkpoint_dir: Optional[str] = None):
  """The run's Reverb server (`train/replay_server.py`'s job).

  With `checkpoint_dir` it restores the tables of the newest complete
  checkpoint there, and checkpoints into it when the learner asks.
  """
  return builder_lib.Builder(settings).make_replay_server(port,
                                                          checkpoint_dir)


def serve_until_stopped(server, checkpoint_dir: Optional[str]) -> None:
  """Serves until SIGINT or SIGTERM; then checkpoints, stops, exits.

  With `checkpoint_dir` the tables are checkpointed first, so a restarted
  server restores what the actors wrote since the learner's last
  checkpoint. Exits with 128 + the signal, after one line.
  """
  with stop_signals.StopSignals() as stop:
    while not stop.requested:
      time.sleep(0.5)  # Back in Python often enough to see a signal.
  saved = ''
  if checkpoint_dir is not None:
    path = reverb.Client(f'localhost:{server.port}').checkpoint()
    saved = f'; its tables were checkpointed to {path}'
  server.stop()
  logging.warning('Replay server stopped by %s%s.',
                  signal.Signals(stop.signum).name, saved)
  sys.exit(128 + stop.signum)


def exit_when_orphaned(parent_pid: int, poll_seconds: float = 1.0) -> None:
  """Ends this process once `parent_pid` is gone (a daemon thread).

  A killed train_eval (SIGKILL, or SIGTERM without Python's clean-up) takes
  the in-process Reverb server with it but cannot stop its actor
  subprocesses, which would then wait on the dead server forever. The
  actor holds nothing that outlives the replay it was feeding, so it
  exits at once, even when its line cannot be written: a kill of the
  learner and its stderr line filter (`console`) leaves a broken pipe,
  and absl's handler raises on it.
  """
  def watch():
    while os.getppid() == parent_pid:
      time.sleep(poll_seconds)
    try:
      logging.warning('Parent process %d is gone: actor exits.', parent_pid)
    finally:
      os._exit(1)  # pylint: disable=protected-access

  threading.Thread(target=watch, name='orphan_watchdog', daemon=True).start()


def _actor_process_main(config_str, task, replay_server, root_dir,
                        parent_pid=None, incarnation=0):
  """Entry point of an actor subprocess (spawned: a fresh interpreter)."""
  # A terminal's Ctrl-C reaches the whole process group; the learner
  # saves the run and stops its actors (`ActorPool.stop`).
  signal.signal(signal.SIGINT, signal.SIG_IGN)
  if parent_pid is not None:
    exit_when_orphaned(parent_pid)
  # The config string starts with the gin file's imports, which register
  # every configurable it names.
  gin.parse_config(config_str)
  actor_lib.run_actor(settings_lib.from_gin(), task, replay_server, root_dir,
                      incarnation=incarnation)


class _ActorThread(threading.Thread):
  """`run_actor` in a thread; keeps its exception for the health check."""

  def __init__(self, settings, task, replay_server, root_dir, stop_event,
               incarnation):
    super().__init__(name=f'r2d2_actor_{task}', daemon=True)
    self._args = (settings, task, replay_server, root_dir, stop_event)
    self._incarnation = incarnation
    self.error = None

  def run(self):
    try:
      actor_lib.run_actor(*self._args, incarnation=self._incarnation)
    except Exception as e:  # pylint: disable=broad-except
      self.error = e
      logging.exception('Actor thread %s failed.', self.name)


class ActorPool:
  """This machine's actors (threads or spawned processes), kept alive.

  `check()` (the learner calls it at every iteration) restarts an actor
  that died: a killed process, a thread that raised. The new one takes
  the same task, so the same epsilon slots, with envs seeded anew
  (`run_actor`'s `incarnation`), and the learner's env step count goes on
  from the reports the old one sent. More than `max_actor_restarts`
  restarts stop the run, as an error that keeps recurring would.
  """

  def __init__(self, settings, address: str, root_dir: str):
    self._settings = settings
    self._address = address
    self._root_dir = root_dir
    self._stop_event = threading.Event()
    self._config_str = gin.config_str()
    self._incarnations = [0] * settings.num_actors
    self.restarts = 0
    self._actors = [self._start(task) for task in range(settings.num_actors)]

  def _start(self, task):
    incarnation = self._incarnations[task]
    if self._settings.actor_mode == 'thread':
      actor = _ActorThread(self._settings, task, self._address,
                           self._root_dir, self._stop_event, incarnation)
    else:
      context = multiprocessing.get_context('spawn')
      actor = context.Process(
          target=_actor_process_main,
          args=(self._config_str, task, self._address, self._root_dir,
                os.getpid(), incarnation),
          name=f'r2d2_actor_{task}', daemon=True)
    actor.start()
    return actor

  def check(self) -> None:
    """Restarts dead actors; raises RuntimeError past `max_actor_restarts`."""
    for task, actor in enumerate(self._actors):
      if actor.is_alive():
        continue
      cause = (repr(actor.error) if getattr(actor, 'error', None) is not None
               else f'exit code {getattr(actor, "exitcode", None)}')
      if self.restarts >= self._settings.max_actor_restarts:
        raise RuntimeError(
            f'{actor.name} exited before the learner finished ({cause}), '
            f'after {self.restarts} actor restarts '
            f'(r2d2.Settings.max_actor_restarts = '
            f'{self._settings.max_actor_restarts}).')
      self.restarts += 1
      self._incarnations[task] += 1
      logging.warning('%s exited (%s); restarting it (restart %d of at most '
                      '%d).', actor.name, cause, self.restarts,
                      self._settings.max_actor_restarts)
      self._actors[task] = self._start(task)

  def request_stop(self) -> None:
    """Tells actor threads to stop (processes are ended by `stop`)."""
    self._stop_event.set()

  def stop(self, timeout_seconds: float) -> None:
    """Asks the actors to stop; processes still alive after it are ended."""
    self._stop_event.set()
    deadline = time.time() + timeout_seconds
    for actor in self._actors:
      actor.join(timeout=max(deadline - time.time(), 0.1))
      if isinstance(actor, multiprocessing.process.BaseProcess):
        if actor.is_alive():
          actor.terminate()
          actor.join(timeout=10)
      elif actor.is_alive():
        # A thread cannot be ended from outside, and an interpreter that
        # exits while one runs inside TensorFlow or Reverb can abort at
        # exit ("terminate called without an active exception"). Its own
        # deadlines (server waits, `actor._TOLD_TO_STOP_SECONDS`) end it.
        logging.warning('%s is still stopping; waiting up to %.0f s more.',
                        actor.name, _THREAD_GRACE_SECONDS)
        actor.join(timeout=_THREAD_GRACE_SECONDS)
        if actor.is_alive():
          logging.warning('%s did not stop.', actor.name)


@gin.configurable(module='r2d2', allowlist=[])
def train_eval(root_dir: str,
               settings: Optional[settings_lib.Settings] = None
               ) -> Dict[str, float]:
  """R2D2 (or R2D3) on one machine: server, actors and learner.

  Args:
    root_dir: run directory (`run_kit` layout, plus actors/<i>/ actor
      summaries and replay_checkpoints/, the Reverb tables); resumes from
      its latest checkpoints.
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
  builder.check_setup()
  server = builder.make_replay_server(
      checkpoint_dir=os.path.join(root_dir, REPLAY_CHECKPOINT_DIR))
  address = f'localhost:{server.port}'
  actors = ActorPool(settings, address, root_dir)
  actors_seconds = settings.shutdown_timeout_seconds
  try:
    return learner_lib.run_learner(settings, address, root_dir, actors=actors)
  except stop_signals.RunStopped:
    # Saved (learner and replay): the actors need not finish anything. The
    # server goes first, so that an actor blocked at an insert gives up.
    actors.request_stop()
    server.stop()
    actors_seconds = _STOPPED_ACTORS_SECONDS
    raise
  finally:
    actors.stop(actors_seconds)
    server.stop()


def check_before_start() -> None:
  """Every value of the run checked before it starts (`config.run` calls
  it before it writes anything): the settings, the replay strategy's
  checks of the env and its inputs, and the agent built on one env's
  specs, whose factories check their values and the sequence against the
  env's episode limit (`Builder.make_agent`).
  """
  builder = builder_lib.Builder(settings_lib.from_gin())
  builder.check_setup()
  builder.make_agent()


EXPERIMENT = experiment_lib.declare_experiment(train_eval, check_before_start)


def run_job(gin_files: Sequence[str], gin_bindings: Sequence[str],
            job: Callable[[settings_lib.Settings], Any]) -> Any:
  """What the multi-machine binaries do: parse gin, run `job(settings)`.

  A bad gin file, binding or setting prints one message and exits with
  code 2, like train/train_eval.py.
  """
  with exits.exit_codes():
    gin_files_lib.parse_gin(gin_files, gin_bindings)
    settings = settings_lib.from_gin()
    # The first line within seconds: building the agent and reaching the
    # server take a while on a loaded machine.
    name = getattr(job, 'func', job).__name__.replace('_', ' ')
    logging.info('Starting: %s (gin: %s).', name, ' '.join(gin_files))
    return job(settings)
