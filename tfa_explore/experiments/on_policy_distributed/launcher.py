"""The distributed on-policy loop's roles and its gin experiment.

`run_experiment.experiment = @on_policy.distributed_train_eval` runs the
`on_policy.Settings` of a gin file as a Reverb server, `on_policy.
Distributed.num_actors` actors and a learner on one machine
(`launch.train_eval_on_one_machine`); the same gin file runs on the role
binaries (`train/replay_server.py`, `learner.py`, `actor.py`) and on Ray
(`train/ray_launch.py`) through `ROLES`.
"""

from typing import Dict, Optional

import gin

from tfa_explore.config import experiment as experiment_lib
from tfa_explore.experiments import on_policy
from tfa_explore.experiments.distributed import launch
from tfa_explore.experiments.distributed import roles as roles_lib
from tfa_explore.experiments.on_policy_distributed import actor as actor_lib
from tfa_explore.experiments.on_policy_distributed import builder
from tfa_explore.experiments.on_policy_distributed import learner as learner_lib
from tfa_explore.experiments.on_policy_distributed import settings as distributed_settings


class OnPolicyRoles(roles_lib.Roles):
  """The on-policy family's roles (RND-PPO and its PPO twin)."""

  name = 'on_policy'
  settings_from_gin = staticmethod(distributed_settings.setup_from_gin)
  run_learner = staticmethod(learner_lib.run_learner)
  run_actor = staticmethod(actor_lib.run_actor)

  def check_setup(self, settings):
    # One env's specs and the agent on them: the factories check their
    # values, the agent its minibatches against num_envs.
    builder.make_agent(settings)

  def make_replay_server(self, settings, port=None, checkpoint_dir=None):
    del checkpoint_dir  # Nothing in it outlives an iteration.
    return builder.make_replay_server(settings, port)

  def ray_resources(self):
    return distributed_settings.RayResources()


ROLES = OnPolicyRoles()


@gin.configurable(module='on_policy', allowlist=[])
def distributed_train_eval(root_dir: str,
                           setup: Optional[distributed_settings.Setup] = None
                           ) -> Dict[str, float]:
  """The on-policy loop with its collection spread over actors.

  Args:
    root_dir: run directory (the one-process loop's layout, plus
      actors/<i>/, the actors' locks); resumes from its latest checkpoint,
      which is the one-process loop's.
    setup: the run's `Setup`; None builds it from gin
      (`on_policy.Settings.*`, `on_policy.Distributed.*`).

  Returns:
    The final evaluation, as `on_policy.train_eval`'s.
  """
  return launch.train_eval_on_one_machine(
      ROLES, setup or distributed_settings.setup_from_gin(), root_dir)


def check_before_start() -> None:
  """Every value of the run checked before it starts (`config.run`): the
  loop's own checks (settings, one env, the agent on its specs), then the
  actors' settings and how they share the batch."""
  on_policy.check_before_start()
  distributed_settings.setup_from_gin()


EXPERIMENT = experiment_lib.declare_experiment(
    distributed_train_eval, check_before_start, roles=ROLES)
