"""A machine's actors (threads or spawned processes), kept alive.

`ActorPool` runs a family's `Roles.run_actor` for every task, restarts
those that die, and stops them; `actor_envs` says which of the run's envs
a task steps and how they are seeded (a restart's anew); `check_task`
refuses a task index outside the run's actors; `actor_lock` keeps one
process per task of a run; `exit_when_orphaned` ends an actor subprocess
whose launcher is gone.
"""

import contextlib
import multiprocessing
import os
import signal
import threading
import time
from typing import NamedTuple, Optional

from absl import logging
import gin

from tfa_explore import errors
from tfa_explore.process import run_lock
from tfa_explore.replay import sequence_storage

# Under root_dir: actors/<task>/ holds an actor's lock and summaries.
ACTOR_DIR = 'actors'

# How much longer a stopping run waits for an actor thread past its
# deadline, rather than exit under it: longer than the bounded calls an
# actor told to stop can still be in (a server wait of 1 s after a 2 s
# reachability probe, an actor's flush deadline, an env step); one
# blocked for good is not worth waiting for.
_THREAD_GRACE_SECONDS = 10.0


class ActorEnvs(NamedTuple):
  """Where an actor's batch of envs sits among all actors' envs.

  Attributes:
    first: index j of its env 0 among the run's envs (slots); its env k
      is j + k.
    seed: the seed of its env 0 (`batched.make_batched_env`'s `seed`: env
      k gets `seed + k`).
  """
  first: int
  seed: int


def actor_envs(task: int, num_actors: int, envs_per_actor: int, seed: int,
               incarnation: int = 0) -> ActorEnvs:
  """Actor `task`'s envs, the one layout of every distributed family.

  Env k of actor i is env j = i * envs_per_actor + k of the run's
  N = num_actors * envs_per_actor (R2D2: the paper's actor j, its epsilon
  slot; on-policy: env j of the learner's batch), seeded `seed + j` as the
  loop in one process seeds its env j. A restarted actor (`incarnation`
  n) adds n * N, seeds no other actor or incarnation uses, so it does not
  replay its predecessor's episodes.
  """
  first = task * envs_per_actor
  return ActorEnvs(
      first=first,
      seed=seed + first + incarnation * num_actors * envs_per_actor)


def check_task(settings, task: int) -> None:
  """Raises ConfigError unless actor `task` is one of the run's.

  Args:
    settings: the family's settings (`roles.DistributedSettings`).
    task: an actor's index (`train/actor.py --task`).

  Raises:
    errors.ConfigError: `task` not in [0, num_actors), naming the setting.
  """
  if not 0 <= task < settings.num_actors:
    raise errors.ConfigError(
        f'--task must be in [0, {settings.setting("num_actors")} = '
        f'{settings.num_actors}), got {task}.')


def actor_lock(root_dir: Optional[str], task: int):
  """A context holding actor `task`'s lock under root_dir (none without).

  One process per task: a second actor with the same task (a copy-paste
  of a command) would repeat its seeds and its share of the work. The
  lock is the process's, so a restarted actor thread retakes it.

  Raises:
    errors.ConfigError: the task is running already.
  """
  if root_dir is None:
    return contextlib.nullcontext()
  try:
    return run_lock.RunLock(
        os.path.join(root_dir, ACTOR_DIR, str(task))).acquire()
  except errors.RunDirectoryError as e:
    raise errors.ConfigError(
        f'Actor --task={task} of this run is already running: '
        f'{errors.user_message(e)}') from e


def exit_when_orphaned(parent_pid: int, poll_seconds: float = 1.0) -> None:
  """Ends this process once `parent_pid` is gone (a daemon thread).

  A killed launcher (SIGKILL, or SIGTERM without Python's clean-up) takes
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


def _actor_process_main(roles, config_str, task, replay_server, root_dir,
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
  roles.run_actor(roles.settings_from_gin(), task, replay_server, root_dir,
                  incarnation=incarnation)


class _ActorThread(threading.Thread):
  """`run_actor` in a thread; keeps its exception for the health check."""

  def __init__(self, roles, settings, task, replay_server, root_dir,
               stop_event, incarnation):
    super().__init__(name=f'{roles.name}_actor_{task}', daemon=True)
    self._run_actor = roles.run_actor
    self._args = (settings, task, replay_server, root_dir, stop_event)
    self._incarnation = incarnation
    self.error = None

  def run(self):
    try:
      self._run_actor(*self._args, incarnation=self._incarnation)
    except Exception as e:  # pylint: disable=broad-except
      self.error = e
      logging.exception('Actor thread %s failed.', self.name)


class ActorPool:
  """This machine's actors (threads or spawned processes), kept alive.

  `check()` (the learner calls it while it runs) restarts an actor that
  died: a killed process, a thread that raised. The new one takes the
  same task with envs seeded anew (`run_actor`'s `incarnation`). More
  than `max_actor_restarts` restarts stop the run, as an error that keeps
  recurring would.
  """

  def __init__(self, roles, settings, address: str, root_dir: str):
    """Starts `settings.num_actors` actors.

    Args:
      roles: the family's `roles.Roles`.
      settings: its `roles.DistributedSettings`.
      address: 'host:port' of the replay server.
      root_dir: the run directory (actor locks and summaries).
    """
    self._roles = roles
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
      actor = _ActorThread(self._roles, self._settings, task, self._address,
                           self._root_dir, self._stop_event, incarnation)
    else:
      context = multiprocessing.get_context('spawn')
      actor = context.Process(
          target=_actor_process_main,
          args=(self._roles, self._config_str, task, self._address,
                self._root_dir, os.getpid(), incarnation),
          name=f'{self._roles.name}_actor_{task}', daemon=True)
    actor.start()
    return actor

  def check(self) -> None:
    """Restarts dead actors; raises RuntimeError past `max_actor_restarts`."""
    for task, actor in enumerate(self._actors):
      if actor.is_alive():
        continue
      cause = (repr(actor.error) if getattr(actor, 'error', None) is not None
               else f'exit code {getattr(actor, "exitcode", None)}')
      limit = self._settings.max_actor_restarts
      if self.restarts >= limit:
        raise RuntimeError(
            f'{actor.name} exited before the learner finished ({cause}), '
            f'after {self.restarts} actor restarts '
            f'({self._settings.setting("max_actor_restarts")} = {limit}).')
      self.restarts += 1
      self._incarnations[task] += 1
      logging.warning('%s exited (%s); restarting it (restart %d of at most '
                      '%d).', actor.name, cause, self.restarts, limit)
      self._actors[task] = self._start(task)

  def request_stop(self) -> None:
    """Tells actor threads to stop (processes are ended by `stop`)."""
    self._stop_event.set()

  def stop(self, timeout_seconds: float) -> None:
    """Asks the actors to stop; processes still alive after it are ended."""
    self._stop_event.set()
    # One timeout for all of them: each join takes what the ones before it
    # left.
    deadline = sequence_storage.Deadline(timeout_seconds * 1000)
    for actor in self._actors:
      actor.join(timeout=max(deadline.remaining_ms() / 1000, 0.1))
      if isinstance(actor, multiprocessing.process.BaseProcess):
        if actor.is_alive():
          actor.terminate()
          actor.join(timeout=10)
      elif actor.is_alive():
        # A thread cannot be ended from outside, and an interpreter that
        # exits while one runs inside TensorFlow or Reverb can abort at
        # exit ("terminate called without an active exception"). Its own
        # deadlines (server waits, its flush deadline) end it.
        logging.warning('%s is still stopping; waiting up to %.0f s more.',
                        actor.name, _THREAD_GRACE_SECONDS)
        actor.join(timeout=_THREAD_GRACE_SECONDS)
        if actor.is_alive():
          logging.warning('%s did not stop.', actor.name)
