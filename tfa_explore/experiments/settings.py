"""`RunSettings`: what every experiment loop is configured with.

Each loop family declares its settings as one frozen dataclass, a
subclass of `RunSettings` registered with gin as `<family>.Settings`
(`on_policy.Settings`, `r2d2.Settings`); a gin file binds
`<family>.Settings.<field>`. The settings every loop has (the env, the
agent, the budget, evaluation and checkpoints) are declared here once,
with their checks; a family adds its own fields and checks.
"""

import dataclasses
from typing import Any, Callable, Optional, Type, TypeVar

import gin

from tfa_explore import errors

REQUIRED = gin.REQUIRED
SettingsType = TypeVar('SettingsType', bound='RunSettings')


@dataclasses.dataclass(frozen=True)
class RunSettings:
  """The settings every loop shares, checked when built.

  Attributes:
    env_loader: `env_loader(seed=...)` -> PyEnvironment, e.g.
      `@suite_gymnasium.load`; each family says which seed each env gets.
    agent_fn: `agent_fn(time_step_spec=, action_spec=, train_step_counter=)`
      -> an initialized TF-Agents agent, e.g. `@ppo.ppo_clip_agent`.
    num_env_steps: the run ends once this many env steps (all envs,
      auto-reset steps excluded) were taken.
    seed: seeds TF ops and the environments.
    eval_interval: greedy evaluation every this many env steps (and at the
      end).
    num_eval_episodes: episodes per evaluation (one per eval env).
    checkpoint_interval: checkpoint and policy export every this many env
      steps (and at the end).
    log_interval: a progress line every this many env steps.
    max_checkpoints_to_keep: older checkpoints are deleted.
    eval_success_threshold: if set, evaluations also report `SuccessRate`,
      the fraction of episodes whose return exceeds it (MiniGrid: 0, reward
      only at the goal).
    num_episodes: the run also ends once this many episodes (all envs)
      ended. None: the env's own budget if it has one (bsuite's for its id,
      `run_kit.episode_budget`), else none.
  """
  # The name gin files bind the subclass by, in its messages.
  gin_name = 'RunSettings'

  env_loader: Callable[..., Any] = REQUIRED
  agent_fn: Callable[..., Any] = REQUIRED
  num_env_steps: int = REQUIRED
  seed: int = REQUIRED
  eval_interval: int = REQUIRED
  num_eval_episodes: int = REQUIRED
  checkpoint_interval: int = REQUIRED
  log_interval: int = 10_000
  max_checkpoints_to_keep: int = 3
  eval_success_threshold: Optional[float] = None
  num_episodes: Optional[int] = None

  def __post_init__(self):
    for name in ('num_env_steps', 'eval_interval', 'num_eval_episodes',
                 'checkpoint_interval', 'log_interval',
                 'max_checkpoints_to_keep'):
      self.check_count(name)
    if self.num_episodes is not None:
      self.check_count('num_episodes')

  def setting(self, name: str) -> str:
    """'on_policy.Settings.seed': the field as a gin file binds it."""
    return f'{self.gin_name}.{name}'

  def check_count(self, name: str, minimum: int = 1) -> None:
    """Raises ValueError unless field `name` is an integer >= `minimum`."""
    errors.check_count(self.setting(name), getattr(self, name),
                       minimum=minimum)


def build_from_gin(settings_class: Type[SettingsType]) -> SettingsType:
  """Builds `settings_class()` from the parsed gin config, checked.

  Raises:
    errors.ConfigError: a required setting is unbound or a value is out of
      range (the message names the `<family>.Settings` field).
  """
  try:
    return settings_class()
  except ValueError as e:
    raise errors.ConfigError(str(e)) from e
  except RuntimeError as e:
    if errors.is_missing_binding(e):
      raise errors.ConfigError(f'Missing gin binding: {e}') from e
    raise
