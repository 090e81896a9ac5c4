"""Cutting episodes into R2D2 sequences: the one cutter, pure (no Reverb).

Every R2D2/R2D3 sequence is cut here: the actors' agent-table items and
their success copies (`success_copies`) and the demonstrations
(`demonstrations.sequences`). Steps are unbatched numpy `Trajectory`s, as
an observer receives them. Per episode the cutter makes a stream of
fixed-length, overlapping items that never cross the episode boundary
(Kapturowski et al. 2019, Section 3):

* before the episode's first step it puts `burn_in_steps` front padding
  steps (zeros, step type FIRST), so the first trace starts at the
  episode's first step (see `agents.r2d2.config` for why);
* an item of `sequence_length` steps ends every `stride` steps of the
  stream (the first one at step `sequence_length`);
* at the episode's end, if the last item did not reach the final step, it
  adds rear padding steps (zeros, step type LAST -> FIRST like TF-Agents'
  padding) up to the next item end.

The learner's `learning.step_mask` recognises both paddings from the step
types, so neither reaches the loss. A stream that starts mid-episode (an
observer attached after `reset`) gets no front padding. Lengths come from
the agent's `SequenceConfig`, the same object the learner uses.

Priorities are not the cutter's business: each caller gives its items
theirs (the actor's network, a default, or the priorities the agent table
got, for the success copy).
"""

import collections

import numpy as np
import tree
from tf_agents.trajectories import time_step as ts


class StreamStep(
    collections.namedtuple('StreamStep', ['step', 'item'])):
  """One step of the padded stream, and the item that ends with it.

  Fields:
    step: unbatched numpy `Trajectory`: a padding step or a real one.
    item: None, or the list of the `sequence_length` steps (oldest first,
      `step` last) of the item that ends at this step.
  """
  __slots__ = ()


def stack(steps):
  """One nest of numpy arrays with a new leading axis over `steps`."""
  return tree.map_structure(lambda *leaves: np.stack(leaves), *steps)


def _padding(trajectory, step_type, next_step_type):
  padding = tree.map_structure(lambda x: np.zeros_like(np.asarray(x)),
                               trajectory)
  dtype = np.asarray(trajectory.step_type).dtype
  return padding._replace(step_type=np.asarray(step_type, dtype),
                          next_step_type=np.asarray(next_step_type, dtype))


class SequenceCutter:
  """Cuts a stream of steps into R2D2 items, one step at a time.

  `add` takes the next step and returns what it adds to the stream; after
  an episode's final (boundary) step the next step starts a new stream.
  Keeps references to the last `sequence_length` steps only.
  """

  def __init__(self, sequence_config):
    """Creates the cutter.

    Args:
      sequence_config: the agent's `SequenceConfig`.
    """
    self._config = sequence_config
    self._sequence_length = sequence_config.sequence_length
    self._recent = collections.deque(maxlen=self._sequence_length)
    self._stream_length = 0  # Steps (padding included) of this episode.
    self._last_item_end = 0

  @property
  def sequence_config(self):
    return self._config

  def add(self, trajectory):
    """Appends one step; returns the `StreamStep`s it adds, in order.

    Args:
      trajectory: unbatched `Trajectory` (converted to numpy).

    Returns:
      List of `StreamStep`: the front padding (before an episode's first
      step), the step itself, and the rear padding (after its last).
    """
    trajectory = tree.map_structure(np.asarray, trajectory)
    added = []
    if self._stream_length == 0 and trajectory.is_first():
      front_padding = _padding(trajectory, ts.StepType.FIRST,
                               ts.StepType.FIRST)
      for _ in range(self._config.burn_in_steps):
        added.append(self._append(front_padding))
    added.append(self._append(trajectory))
    if trajectory.is_boundary():
      if self._last_item_end != self._stream_length:
        rear_padding = _padding(trajectory, ts.StepType.LAST,
                                ts.StepType.FIRST)
        while self._last_item_end != self._stream_length:
          added.append(self._append(rear_padding))
      self.reset()
    return added

  def reset(self):
    """Drops the current stream; the next step starts a new one."""
    self._recent.clear()
    self._stream_length = 0
    self._last_item_end = 0

  def _append(self, step):
    self._recent.append(step)
    self._stream_length += 1
    length, stride = self._sequence_length, self._config.stride
    if self._stream_length >= length and (
        self._stream_length - length) % stride == 0:
      self._last_item_end = self._stream_length
      return StreamStep(step, list(self._recent))
    return StreamStep(step, None)


def cut_episode(trajectories, sequence_config):
  """The whole padded stream of one episode's steps.

  Args:
    trajectories: the episode's unbatched `Trajectory`s, in order; the
      last one is normally its boundary step.
    sequence_config: the agent's `SequenceConfig`.

  Returns:
    List of `StreamStep` (see `SequenceCutter.add`).
  """
  cutter = SequenceCutter(sequence_config)
  stream = []
  for trajectory in trajectories:
    stream.extend(cutter.add(trajectory))
  return stream


def stream_items(stream):
  """The items of a stream: lists of `sequence_length` steps, in order."""
  return [stream_step.item for stream_step in stream
          if stream_step.item is not None]
