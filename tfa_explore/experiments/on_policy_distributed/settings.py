"""The distributed on-policy loop's settings: `on_policy.Settings` + these.

The batch, the agent and the schedule stay `on_policy.Settings`' (one gin
surface with the loop in one process): `num_envs` rollouts of
`rollout_length` steps per learner update. `on_policy.Distributed` says
how that batch is collected: `num_actors` actors, each stepping
`num_envs / num_actors` of the envs. `Setup` holds both, checked
together, and is what every role of a run builds from the same gin file.
"""

import dataclasses

import gin

from tfa_explore import errors
from tfa_explore.experiments import on_policy
from tfa_explore.experiments import settings as settings_lib
from tfa_explore.experiments.distributed import ray_resources

REQUIRED = gin.REQUIRED


@gin.configurable(module='on_policy')
@dataclasses.dataclass(frozen=True)
class Distributed:
  """How the on-policy batch is collected by actors, checked when built.

  Attributes:
    num_actors: actor threads, processes or Ray actors; actor i steps
      envs i * E .. (i + 1) * E - 1 of the batch, E = num_envs /
      num_actors, seeded as the loop in one process seeds them.
    actor_mode: 'thread' (actors as threads of the launcher) or 'process'
      (spawned subprocesses that parse the same gin config); one machine.
    rollout_timeout_seconds: while the learner waits for a batch's
      rollouts longer than this, it logs which actors it waits for (and
      keeps waiting; dead actors are restarted meanwhile).
    actor_poll_seconds: how often an idle actor asks the server whether
      the learner published new weights (a look at the server's table
      counts, not the weights).
    shutdown_timeout_seconds: how long a finished run waits for its actors
      to stop, and an actor for its last write.
    replay_retry_seconds: how long an actor or the learner keeps retrying
      an unreachable replay server (with back-off) before it gives up.
    max_actor_restarts: on one machine, dead actors are restarted until
      this many restarts in total; then the run stops.
  """
  gin_name = 'on_policy.Distributed'

  num_actors: int = REQUIRED
  actor_mode: str = 'thread'
  rollout_timeout_seconds: float = 60.0
  actor_poll_seconds: float = 0.05
  shutdown_timeout_seconds: float = 30.0
  replay_retry_seconds: float = 600.0
  max_actor_restarts: int = 20

  def __post_init__(self):
    errors.check_count(self.setting('num_actors'), self.num_actors)
    errors.check_count(self.setting('max_actor_restarts'),
                       self.max_actor_restarts, minimum=0)
    for name in ('rollout_timeout_seconds', 'actor_poll_seconds',
                 'shutdown_timeout_seconds', 'replay_retry_seconds'):
      errors.check_number(self.setting(name), getattr(self, name))
      if getattr(self, name) < 0:
        raise ValueError(f'{self.setting(name)} must be >= 0, got '
                         f'{getattr(self, name)}.')
    if self.actor_mode not in ('thread', 'process'):
      raise ValueError(f"{self.setting('actor_mode')} must be 'thread' or "
                       f"'process', got {self.actor_mode!r}.")

  def setting(self, name: str) -> str:
    """'on_policy.Distributed.num_actors': the field as gin binds it."""
    return f'{self.gin_name}.{name}'


@gin.configurable(module='on_policy')
@dataclasses.dataclass(frozen=True)
class RayResources(ray_resources.RayResources):
  """What each on-policy role asks Ray for (`ray_resources.RayResources`)."""
  gin_name = 'on_policy.RayResources'


@dataclasses.dataclass(frozen=True)
class Setup:
  """A distributed on-policy run: the loop's settings and the actors'.

  Has what the shared launchers read of any family
  (`roles.DistributedSettings`), from `distributed`.
  """
  settings: on_policy.Settings
  distributed: Distributed

  def __post_init__(self):
    num_envs, num_actors = self.settings.num_envs, self.distributed.num_actors
    if num_envs % num_actors:
      raise ValueError(
          f'{self.settings.setting("num_envs")} = {num_envs} rollouts of '
          f'{self.settings.setting("rollout_length")} = '
          f'{self.settings.rollout_length} steps make one learner batch, '
          f'which {self.distributed.setting("num_actors")} = {num_actors} '
          'actors cannot share evenly: bind a num_envs that num_actors '
          f'divides (e.g. {num_actors * max(num_envs // num_actors, 1)}).')

  @property
  def envs_per_actor(self) -> int:
    return self.settings.num_envs // self.distributed.num_actors

  @property
  def num_actors(self) -> int:
    return self.distributed.num_actors

  @property
  def actor_mode(self) -> str:
    return self.distributed.actor_mode

  @property
  def max_actor_restarts(self) -> int:
    return self.distributed.max_actor_restarts

  @property
  def shutdown_timeout_seconds(self) -> float:
    return self.distributed.shutdown_timeout_seconds

  @property
  def replay_retry_seconds(self) -> float:
    return self.distributed.replay_retry_seconds

  def setting(self, name: str) -> str:
    return self.distributed.setting(name)


def setup_from_gin() -> Setup:
  """The run's `Setup` from the parsed gin config.

  Raises:
    errors.ConfigError: a bad or missing value, naming its binding.
  """
  settings = settings_lib.build_from_gin(on_policy.Settings)
  distributed = settings_lib.build_from_gin(Distributed)
  try:
    return Setup(settings, distributed)
  except ValueError as e:
    raise errors.ConfigError(str(e)) from e
