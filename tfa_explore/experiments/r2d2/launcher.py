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

from typing import Any, Callable, Dict, Optional, Sequence

import gin

from tfa_explore.config import experiment as experiment_lib
from tfa_explore.experiments import run_kit
from tfa_explore.experiments.distributed import actor_pool
from tfa_explore.experiments.distributed import launch
from tfa_explore.experiments.distributed import roles as roles_lib
from tfa_explore.experiments.r2d2 import actor as actor_lib
from tfa_explore.experiments.r2d2 import builder as builder_lib
from tfa_explore.experiments.r2d2 import learner as learner_lib
from tfa_explore.experiments.r2d2 import settings as r2d2_settings

# The shared launch pieces, by their R2D2-era names.
REPLAY_CHECKPOINT_DIR = launch.REPLAY_CHECKPOINT_DIR
serve_until_stopped = launch.serve_until_stopped
exit_when_orphaned = actor_pool.exit_when_orphaned


def make_replay_server(settings, port: Optional[int] = None,
                       checkpoint_dir: Optional[str] = None):
  """The run's Reverb server (`train/replay_server.py`'s job).

  With `checkpoint_dir` it restores the tables of the newest complete
  checkpoint there, and checkpoints into it when the learner asks.
  """
  return builder_lib.Builder(settings).make_replay_server(port,
                                                          checkpoint_dir)


class R2D2Roles(roles_lib.Roles):
  """The R2D2 family's roles (R2D3 is a replay strategy of the same)."""

  name = 'r2d2'
  settings_from_gin = staticmethod(r2d2_settings.settings_from_gin)
  run_learner = staticmethod(learner_lib.run_learner)
  run_actor = staticmethod(actor_lib.run_actor)

  def check_setup(self, settings):
    builder_lib.Builder(settings).check_setup()

  def make_replay_server(self, settings, port=None, checkpoint_dir=None):
    return make_replay_server(settings, port, checkpoint_dir)

  def ray_resources(self):
    return r2d2_settings.RayResources()


ROLES = R2D2Roles()


@gin.configurable(module='r2d2', allowlist=[])
def train_eval(root_dir: str,
               settings: Optional[r2d2_settings.Settings] = None
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
  return launch.train_eval_on_one_machine(
      ROLES, settings or r2d2_settings.settings_from_gin(), root_dir)


def check_before_start() -> None:
  """Every value of the run checked before it starts (`config.run` calls
  it before it writes anything): the settings, the replay strategy's
  checks of the env and its inputs, and the agent built on one env's
  specs, whose factories check their values and the sequence against the
  env's episode limit (`Builder.make_agent`).
  """
  settings = r2d2_settings.settings_from_gin()
  builder = builder_lib.Builder(settings)
  builder.check_setup()
  # Seeded as the learner seeds (on_policy.check_before_start says why).
  run_kit.set_global_seeds(settings.seed)
  builder.make_agent()


EXPERIMENT = experiment_lib.declare_experiment(train_eval, check_before_start,
                                               roles=ROLES)


def run_job(gin_files: Sequence[str], gin_bindings: Sequence[str],
            job: Callable[[r2d2_settings.Settings], Any]) -> Any:
  """`launch.run_job` of an R2D2 job `job(settings)` (exit code 2 on a
  bad gin file, binding or setting)."""
  name = getattr(job, 'func', job).__name__.replace('_', ' ')
  return launch.run_job(gin_files, gin_bindings, name,
                        lambda roles, settings: job(settings), roles=ROLES)
