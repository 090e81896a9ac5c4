"""`Settings`: everything an R2D2-family run is configured with.

This dataclass is the run's one gin surface: a gin file binds
`r2d2.Settings.<field>`, and every process of a run (the single-machine
launcher, the three binaries, spawned actor processes) builds the same
`Settings()` from the same gin file, so they agree on tables, specs and
schedules. Each field is declared here once.
"""

import dataclasses
from typing import Any, Callable, Optional

import gin

from tfa_explore import errors
from tfa_explore.experiments.r2d2 import replay as replay_lib

REQUIRED = gin.REQUIRED


@gin.configurable(module='r2d2')
@dataclasses.dataclass(frozen=True)
class Settings:
  """R2D2 (and R2D3) run settings, checked when built.

  Attributes:
    env_loader: `env_loader(seed=...)` -> PyEnvironment; actor slot j gets
      seed `seed + j`, eval env j `seed + 1000003 + j`.
    agent_fn: `agent_fn(time_step_spec=, action_spec=, train_step_counter=)`
      -> initialized `R2D2Agent`, e.g. `@r2d2.r2d2_agent_fn`.
    num_env_steps: the run ends once the actors together took this many env
      steps (auto-reset steps excluded).
    num_episodes: the run also ends once the actors together ended this
      many episodes. None: the env's own budget if it has one (bsuite's for
      its id, `run_kit.episode_budget`), else none.
    seed: seeds TF ops and environments.
    num_actors: actor threads or processes.
    batch_size: sequences per learner step (paper: 64).
    replay_capacity: sequences in the agent table (FIFO eviction).
    samples_per_insert: sequences the learner samples per sequence the
      actors insert (Reverb's `SampleToInsertRatio` on the agent table);
      with `batch_size` it sets learner steps per env step.
    min_size_to_sample: sequences in the agent table before the learner
      starts.
    priority_exponent: alpha of prioritized sampling (paper: 0.9).
    eval_interval: greedy evaluation every this many env steps (and at the
      end).
    num_eval_episodes: episodes per evaluation (one per eval env).
    checkpoint_interval: checkpoint + policy export every this many env
      steps (and at the end).
    envs_per_actor: environments each actor steps as one batch. Env k of
      actor i is the paper's actor j = i * envs_per_actor + k, exploring
      with 0.4^(1 + 7 j / (N - 1)), N = num_actors * envs_per_actor.
    actor_mode: 'thread' (actors as threads of the launcher) or 'process'
      (spawned subprocesses that parse the same gin config).
    log_interval: a progress line every this many env steps.
    summary_interval: train/ summaries every this many learner steps.
    train_steps_per_iteration: learner steps between reads of the actors'
      progress reports.
    variable_push_period: learner steps between weight pushes.
    actor_update_period: env steps between an actor's weight pulls (and
      progress reports).
    actor_priorities: initial priorities from the actor's own TD errors
      (paper) instead of a constant.
    sample_timeout_seconds: longest wait for a sample before the learner
      checks the actors' health.
    shutdown_timeout_seconds: how long a finished learner waits for the
      actors to stop, and an actor for its last writes.
    max_checkpoints_to_keep: older checkpoints are deleted.
    checkpoint_replay: at every checkpoint the learner also has the Reverb
      server checkpoint its tables (into root_dir/replay_checkpoints on one
      machine, `--checkpoint_dir` of train/replay_server.py), so a resumed
      run starts from the replay it had. Off for tables too large to copy
      at every checkpoint.
    replay_retry_seconds: how long an actor or the learner keeps retrying
      an unreachable replay server (with back-off) before it gives up.
    max_actor_restarts: on one machine, dead actors (threads or processes)
      are restarted until this many restarts in total; then the run stops.
    replay: the replay strategy (`replay.ReplayStrategy`): None or
      `AgentReplay()` for R2D2, `@r2d3.DemonstrationReplay()` for R2D3.
    eval_success_threshold: if set, evaluations also report `SuccessRate`,
      the fraction of episodes whose return exceeds it (MiniGrid: 0).
  """
  env_loader: Callable[..., Any] = REQUIRED
  agent_fn: Callable[..., Any] = REQUIRED
  num_env_steps: int = REQUIRED
  seed: int = REQUIRED
  num_actors: int = REQUIRED
  batch_size: int = REQUIRED
  replay_capacity: int = REQUIRED
  samples_per_insert: float = REQUIRED
  min_size_to_sample: int = REQUIRED
  priority_exponent: float = REQUIRED
  eval_interval: int = REQUIRED
  num_eval_episodes: int = REQUIRED
  checkpoint_interval: int = REQUIRED
  envs_per_actor: int = 1
  actor_mode: str = 'thread'
  log_interval: int = 10_000
  summary_interval: int = 100
  train_steps_per_iteration: int = 10
  variable_push_period: int = 10
  actor_update_period: int = 400
  actor_priorities: bool = True
  sample_timeout_seconds: float = 60.0
  shutdown_timeout_seconds: float = 30.0
  max_checkpoints_to_keep: int = 3
  checkpoint_replay: bool = True
  replay_retry_seconds: float = 600.0
  max_actor_restarts: int = 20
  replay: Optional[replay_lib.ReplayStrategy] = None
  eval_success_threshold: Optional[float] = None
  num_episodes: Optional[int] = None

  def __post_init__(self):
    if self.replay is None:
      object.__setattr__(self, 'replay', replay_lib.AgentReplay())
    if not isinstance(self.replay, replay_lib.ReplayStrategy):
      raise ValueError(
          'r2d2.Settings.replay must be a ReplayStrategy (e.g. '
          f'@r2d3.DemonstrationReplay()), got {self.replay!r}.')
    positive = ('num_env_steps', 'num_actors', 'envs_per_actor',
                'batch_size', 'replay_capacity', 'min_size_to_sample',
                'num_eval_episodes', 'summary_interval',
                'train_steps_per_iteration', 'variable_push_period',
                'actor_update_period', 'max_checkpoints_to_keep')
    for name in positive:
      errors.check_count(f'r2d2.Settings.{name}', getattr(self, name))
    if self.num_episodes is not None:
      errors.check_count('r2d2.Settings.num_episodes', self.num_episodes)
    for name in ('samples_per_insert', 'priority_exponent',
                 'replay_retry_seconds', 'sample_timeout_seconds',
                 'shutdown_timeout_seconds'):
      errors.check_number(f'r2d2.Settings.{name}', getattr(self, name))
    errors.check_count('r2d2.Settings.max_actor_restarts',
                       self.max_actor_restarts, minimum=0)
    if self.replay_retry_seconds < 0:
      raise ValueError('r2d2.Settings.replay_retry_seconds must be >= 0, '
                       f'got {self.replay_retry_seconds}.')
    if self.priority_exponent < 0:
      raise ValueError('r2d2.Settings.priority_exponent must be >= 0, got '
                       f'{self.priority_exponent}.')
    if self.samples_per_insert <= 0:
      raise ValueError('r2d2.Settings.samples_per_insert must be > 0, got '
                       f'{self.samples_per_insert}.')
    if self.replay_capacity < self.batch_size:
      raise ValueError(
          f'r2d2.Settings.replay_capacity ({self.replay_capacity}) is below '
          f'batch_size ({self.batch_size}): a batch would sample the same '
          'sequences several times.')
    if self.min_size_to_sample > self.replay_capacity:
      raise ValueError(
          f'r2d2.Settings.min_size_to_sample ({self.min_size_to_sample}) '
          f'exceeds replay_capacity ({self.replay_capacity}): the learner '
          'would never start.')
    if self.actor_mode not in ('thread', 'process'):
      raise ValueError("r2d2.Settings.actor_mode must be 'thread' or "
                       f"'process', got {self.actor_mode!r}.")

  @property
  def num_slots(self) -> int:
    """Epsilon slots: every env of every actor is one of the paper's actors."""
    return self.num_actors * self.envs_per_actor


def from_gin() -> Settings:
  """`Settings()` from the parsed gin config.

  Raises:
    errors.ConfigError: a required setting is unbound or a value is out of
      range (the message names the `r2d2.Settings` field).
  """
  try:
    return Settings()
  except ValueError as e:
    raise errors.ConfigError(str(e)) from e
  except RuntimeError as e:
    if errors.is_missing_binding(e):
      raise errors.ConfigError(f'Missing gin binding: {e}') from e
    raise
