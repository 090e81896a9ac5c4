"""Starting a distributed family's run: one machine, or one role per process.

* `train_eval_on_one_machine(roles, settings, root_dir)`: the Reverb
  server in this process, `num_actors` actors (threads, or spawned
  processes with `actor_mode = 'process'`) and the learner;
* `run_job(gin_files, gin_bindings, job)`: what the three binaries
  (`train/replay_server.py`, `train/actor.py`, `train/learner.py`) do:
  parse gin, find the bound experiment's roles, call one of them.

Every process builds the same settings from the same gin config, so they
agree on tables, specs and schedules.
"""

import os
import signal
import time
from typing import Any, Callable, Dict, Optional, Sequence

from absl import logging
import gin
import reverb

from tfa_explore import errors
from tfa_explore.config import exits
from tfa_explore.config import experiment as experiment_lib
from tfa_explore.config import gin_files as gin_files_lib
from tfa_explore.experiments.distributed import actor_pool
from tfa_explore.experiments.distributed import roles as roles_lib
from tfa_explore.process import stop_signals

# How long a run stopped by a signal waits for its actors before ending
# their processes: it saved everything they would add.
_STOPPED_ACTORS_SECONDS = 5.0

# Under root_dir on one machine: the Reverb checkpoints of the tables.
REPLAY_CHECKPOINT_DIR = 'replay_checkpoints'


def train_eval_on_one_machine(roles: roles_lib.Roles, settings,
                              root_dir: str) -> Dict[str, float]:
  """Server, actors and learner of `roles` on this machine.

  Args:
    roles: the family's `Roles`.
    settings: its settings (`roles.DistributedSettings`).
    root_dir: run directory; the server checkpoints its tables (if the
      family does) under root_dir/replay_checkpoints.

  Returns:
    The learner's final evaluation.
  """
  # Before any actor starts: actors block until the learner's first
  # weights, so a bad input found by the learner would keep them waiting.
  roles.check_setup(settings)
  server = roles.make_replay_server(
      settings, checkpoint_dir=os.path.join(root_dir, REPLAY_CHECKPOINT_DIR))
  address = f'localhost:{server.port}'
  actors = actor_pool.ActorPool(roles, settings, address, root_dir)
  actors_seconds = settings.shutdown_timeout_seconds
  try:
    return roles.run_learner(settings, address, root_dir, actors=actors)
  except stop_signals.RunStopped:
    # Saved: the actors need not finish anything. The server goes first,
    # so that an actor blocked at an insert gives up.
    actors.request_stop()
    server.stop()
    actors_seconds = _STOPPED_ACTORS_SECONDS
    raise
  finally:
    actors.stop(actors_seconds)
    server.stop()


def serve_until_stopped(server, checkpoint_dir: Optional[str]) -> int:
  """Serves until SIGINT or SIGTERM; then checkpoints and stops.

  With `checkpoint_dir` the tables are checkpointed first, so a restarted
  server restores what the actors wrote since the learner's last
  checkpoint. One line says what stopped it and what was saved.

  Returns:
    The exit code of the policy (`exits.signal_exit_code`: 128 + the
    signal), for the binary to exit with.
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
  return exits.signal_exit_code(stop.signum)


def bound_roles() -> roles_lib.Roles:
  """The roles of the experiment the parsed gin config binds.

  An experiment that runs as several roles declares them with its checks
  (`declare_experiment(..., roles=)`, `r2d2.launcher.EXPERIMENT`).

  Raises:
    errors.ConfigError: no experiment is bound, or it runs in one process
      only.
  """
  experiment = experiment_lib.bound_experiment()
  if experiment is None:
    raise errors.ConfigError(
        'The gin file binds no run_experiment.experiment (e.g. '
        '@r2d2.train_eval).')
  if experiment.roles is None:
    bound = gin.query_parameter('run_experiment.experiment').selector
    raise errors.ConfigError(
        f'run_experiment.experiment = @{bound} runs in one process '
        '(train/train_eval.py); '
        'the role binaries run experiments of several roles: '
        '@r2d2.train_eval, @on_policy.distributed_train_eval.')
  return experiment.roles


def check_server_address(address: Optional[str],
                         flag: str = '--replay_server') -> None:
  """Raises ConfigError unless `address` is HOST:PORT."""
  host, _, port = (address or '').rpartition(':')
  if not host or not port.isdigit():
    raise errors.ConfigError(
        f'{flag} must be HOST:PORT of train/replay_server.py, got '
        f'{address!r}.')


def run_job(gin_files: Sequence[str], gin_bindings: Sequence[str],
            role: str, job: Callable[[roles_lib.Roles, Any], Any],
            replay_server: Optional[str] = None,
            roles: Optional[roles_lib.Roles] = None) -> Any:
  """What the role binaries do: parse gin, run `job(roles, settings)`.

  Args:
    gin_files: the run's gin files.
    gin_bindings: and its bindings.
    role: what the job is, for the first line ('learner', 'actor 0').
    job: the role, e.g. `lambda roles, settings: roles.run_learner(...)`.
    replay_server: the --replay_server flag, checked first when given.
    roles: the family's roles; None: those of the bound experiment.

  A bad flag, gin file, binding or setting prints one message and exits
  with code 2, like train/train_eval.py.
  """
  with exits.exit_codes():
    if replay_server is not None:
      check_server_address(replay_server)
    gin_files_lib.parse_gin(gin_files, gin_bindings)
    roles = roles or bound_roles()
    settings = roles.settings_from_gin()
    # The first line within seconds: building the agent and reaching the
    # server take a while on a loaded machine.
    logging.info('Starting: %s %s (gin: %s).', roles.name, role,
                 ' '.join(gin_files))
    return job(roles, settings)
