"""The coupled sequence numbers of R2D2, computed in one place.

The actor's sequence writer, the Reverb table signature, the replay dataset
and the learner's burn-in/trace split all read a `SequenceConfig`, so they
cannot disagree.

Layout of one stored sequence (Kapturowski et al. 2019, Section 3; Table 2):

    | burn_in_steps | trace_length | 1 |
      no gradient     TD loss        bootstrap only

* `sequence_length = burn_in_steps + trace_length + 1`. The extra step is the
  state the last trace step bootstraps from (as Acme's R2D2 config): without
  it the last trace step would have no target.
* `stride = replay_period`: a new sequence starts every `replay_period`
  steps, so adjacent sequences overlap by `sequence_length - stride` steps.
  The paper stores m = 80 with overlap 40 and a burn-in prefix of 40.

Where this departs from the paper: the writer pads `burn_in_steps` dummy
steps before every episode (`replay.sequence_writer`), so the first trace of
an episode starts at its first step. In the paper the first `burn_in_steps`
steps of every episode only ever serve as burn-in and never get a gradient,
which for short episodes is most of the data. The burn-in over the front
padding is exact: the network resets its state at the episode's FIRST step.
"""

import dataclasses

import gin

from tfa_explore import errors


@gin.configurable
@dataclasses.dataclass(frozen=True)
class SequenceConfig:
  """Burn-in, trace and replay period of R2D2 sequences.

  Attributes:
    burn_in_steps: steps unrolled from the stored state without gradient
      before the trace (paper: 40; 0 disables burn-in).
    trace_length: steps that get a TD loss (paper: 80).
    replay_period: steps between the starts of adjacent sequences (paper:
      40). Must not exceed `trace_length`, or some steps would never be in
      any trace.
  """
  burn_in_steps: int = 40
  trace_length: int = 80
  replay_period: int = 40

  def __post_init__(self):
    # Named as the gin file binds them (`r2d2/SequenceConfig.trace_length`):
    # gin builds a scoped `@r2d2/SequenceConfig()` inside its scope.
    scope = gin.current_scope_str()
    name = f'{scope}/SequenceConfig' if scope else 'SequenceConfig'
    errors.check_count(f'{name}.burn_in_steps', self.burn_in_steps,
                       minimum=0)
    errors.check_count(f'{name}.trace_length', self.trace_length)
    errors.check_count(f'{name}.replay_period', self.replay_period)
    if self.replay_period > self.trace_length:
      raise ValueError(
          f'{name}.replay_period must be in [1, trace_length] so that every '
          f'step is in some trace; got replay_period={self.replay_period}, '
          f'trace_length={self.trace_length}.')

  @property
  def sequence_length(self) -> int:
    """Steps per stored sequence: burn-in + trace + 1 bootstrap step."""
    return self.burn_in_steps + self.trace_length + 1

  @property
  def stride(self) -> int:
    """Steps between the starts of adjacent sequences."""
    return self.replay_period

  @property
  def overlap(self) -> int:
    """Steps shared by adjacent sequences of one episode."""
    return self.sequence_length - self.stride
