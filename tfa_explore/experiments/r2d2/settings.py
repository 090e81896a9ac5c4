"""`Settings`: everything an R2D2-family run is configured with.

This dataclass is the run's one gin surface: a gin file binds
`r2d2.Settings.<field>`, and every process of a run (the single-machine
launcher, the three binaries, spawned actor processes) builds the same
`Settings()` from the same gin file, so they agree on tables, specs and
schedules. The fields every loop shares are `settings.RunSettings`'s.
"""

import dataclasses
from typing import Optional

import gin

from tfa_explore import errors
from tfa_explore.experiments import settings as settings_lib
from tfa_explore.experiments.distributed import ray_resources
from tfa_explore.experiments.r2d2 import replay as replay_lib
from tfa_explore.replay import sequence_storage as storage_lib

# How the actors' items reach Reverb: `r2d2.Settings.sequence_storage =
# @r2d2.SequenceCopies()` in a gin file.
gin.external_configurable(storage_lib.StepStream, module='r2d2')
gin.external_configurable(storage_lib.SequenceCopies, module='r2d2')

REQUIRED = gin.REQUIRED


@gin.configurable(module='r2d2')
@dataclasses.dataclass(frozen=True)
class Settings(settings_lib.RunSettings):
  """R2D2 (and R2D3) run settings, checked when built.

  The shared ones (`env_loader`, `agent_fn`, the budget, evaluation and
  checkpoints) are `RunSettings`'; actor slot j gets seed `seed + j`, eval
  env j `seed + 1000003 + j`, and `agent_fn` builds an `R2D2Agent`, e.g.
  `@r2d2.r2d2_agent_fn`.

  Attributes:
    num_actors: actor threads or processes.
    batch_size: sequences per learner step (paper: 64).
    replay_capacity: sequences in the agent table (FIFO eviction).
    samples_per_insert: sequences the learner samples per sequence the
      actors insert (Reverb's `SampleToInsertRatio` on the agent table);
      with `batch_size` it sets learner steps per env step.
    min_size_to_sample: sequences in the agent table before the learner
      starts.
    priority_exponent: alpha of prioritized sampling (paper: 0.9).
    envs_per_actor: environments each actor steps as one batch. Env k of
      actor i is the paper's actor j = i * envs_per_actor + k, exploring
      with 0.4^(1 + 7 j / (N - 1)), N = num_actors * envs_per_actor.
    actor_mode: 'thread' (actors as threads of the launcher) or 'process'
      (spawned subprocesses that parse the same gin config).
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
    sequence_storage: how the actors' items reach Reverb
      (`sequence_storage.SequenceStorage`): None or `@r2d2.StepStream()`
      (each step stored once; large observations), or
      `@r2d2.SequenceCopies()` (each item stored whole; less CPU, each step
      stored `sequence_length / replay_period` times: 2x the bytes on
      StatelessCartPole, docs/performance.md).
  """
  gin_name = 'r2d2.Settings'

  num_actors: int = REQUIRED
  batch_size: int = REQUIRED
  replay_capacity: int = REQUIRED
  samples_per_insert: float = REQUIRED
  min_size_to_sample: int = REQUIRED
  priority_exponent: float = REQUIRED
  envs_per_actor: int = 1
  actor_mode: str = 'thread'
  summary_interval: int = 100
  train_steps_per_iteration: int = 10
  variable_push_period: int = 10
  actor_update_period: int = 400
  actor_priorities: bool = True
  sample_timeout_seconds: float = 60.0
  shutdown_timeout_seconds: float = 30.0
  checkpoint_replay: bool = True
  replay_retry_seconds: float = 600.0
  max_actor_restarts: int = 20
  replay: Optional[replay_lib.ReplayStrategy] = None
  sequence_storage: Optional[storage_lib.SequenceStorage] = None

  def __post_init__(self):
    super().__post_init__()
    if self.replay is None:
      object.__setattr__(self, 'replay', replay_lib.AgentReplay())
    if self.sequence_storage is None:
      object.__setattr__(self, 'sequence_storage',
                         storage_lib.StepStream())
    if not isinstance(self.sequence_storage,
                      storage_lib.SequenceStorage):
      raise ValueError(
          'r2d2.Settings.sequence_storage must be @r2d2.StepStream() or '
          f'@r2d2.SequenceCopies(), got {self.sequence_storage!r}.')
    if not isinstance(self.replay, replay_lib.ReplayStrategy):
      raise ValueError(
          'r2d2.Settings.replay must be a ReplayStrategy (e.g. '
          f'@r2d3.DemonstrationReplay()), got {self.replay!r}.')
    for name in ('num_actors', 'envs_per_actor', 'batch_size',
                 'replay_capacity', 'min_size_to_sample', 'summary_interval',
                 'train_steps_per_iteration', 'variable_push_period',
                 'actor_update_period'):
      self.check_count(name)
    for name in ('samples_per_insert', 'priority_exponent',
                 'replay_retry_seconds', 'sample_timeout_seconds',
                 'shutdown_timeout_seconds'):
      errors.check_number(self.setting(name), getattr(self, name))
    self.check_count('max_actor_restarts', minimum=0)
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


@gin.configurable(module='r2d2')
@dataclasses.dataclass(frozen=True)
class RayResources(ray_resources.RayResources):
  """What each R2D2 role asks Ray for (`ray_resources.RayResources`)."""
  gin_name = 'r2d2.RayResources'


def settings_from_gin() -> Settings:
  """The run's `Settings` from the parsed gin config
  (`settings.build_from_gin`).
  """
  return settings_lib.build_from_gin(Settings)
