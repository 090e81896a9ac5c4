"""Actor-side writer of R2D2 sequences into a Reverb table.

`R2D2SequenceObserver` is a TF-Agents observer (called with one unbatched
`Trajectory` per environment step, like `ReverbAddTrajectoryObserver`). Per
episode it writes fixed-length, overlapping sequences that never cross the
episode boundary (Kapturowski et al. 2019, Section 3):

* before the episode's first step it appends `burn_in_steps` front padding
  steps (zeros, step type FIRST), so the first trace starts at the
  episode's first step (see `agents.r2d2.config` for why);
* it creates an item of `sequence_length` steps every `stride` steps;
* at the episode's end, if the last item did not reach the final step, it
  appends rear padding steps (zeros, step type LAST -> FIRST like
  TF-Agents' padding) up to the next item boundary and writes that item.

The learner's `learning.step_mask` recognises both paddings from the step
types, so neither reaches the loss. Lengths come from the agent's
`SequenceConfig`, the same object the learner uses.

Initial priorities: with a `priority_fn` (the agent's
`initial_priority_fn()`, evaluated with the actor's network copy, as in the
paper) each item gets its TD-based priority; without one, `default_priority`
(cheaper, for ablations or weak actors).
"""

import collections

import numpy as np
import tensorflow as tf
from tf_agents.trajectories import time_step as ts
from tf_agents.trajectories import trajectory as trajectory_lib

from tfa_explore.replay import tables


def _zeros_like(nest):
  return tf.nest.map_structure(lambda x: np.zeros_like(np.asarray(x)), nest)


def _with_step_types(trajectory, step_type, next_step_type):
  dtype = np.asarray(trajectory.step_type).dtype
  return trajectory._replace(
      step_type=np.asarray(step_type, dtype),
      next_step_type=np.asarray(next_step_type, dtype))


class R2D2SequenceObserver:
  """Writes episode-aligned, padded R2D2 sequences; see the module doc."""

  def __init__(self, py_client, table_name, sequence_config,
               collect_data_spec=None, priority_fn=None,
               default_priority=1.0):
    """Creates the observer.

    Args:
      py_client: `reverb.Client`.
      table_name: the table to write to.
      sequence_config: the agent's `SequenceConfig`.
      collect_data_spec: the agent's `collect_data_spec`; if given, the
        table's signature is checked against it (ValueError naming the
        spec on mismatch).
      priority_fn: callable, `[sequence_length]` numpy trajectory -> float
        priority, e.g. `agent.initial_priority_fn()`; None to insert with
        `default_priority`.
      default_priority: priority when `priority_fn` is None.
    """
    self._py_client = py_client
    self._table_name = table_name
    self._config = sequence_config
    self._sequence_length = sequence_config.sequence_length
    self._priority_fn = priority_fn
    self._default_priority = float(default_priority)
    if collect_data_spec is not None:
      signature = py_client.server_info()[table_name].signature
      tables.check_signature(signature, collect_data_spec,
                             self._sequence_length, table_name=table_name)
    self._writer = py_client.trajectory_writer(
        num_keep_alive_refs=self._sequence_length)
    self._recent = collections.deque(maxlen=self._sequence_length)
    self._stream_length = 0  # Steps (padding included) of this episode.
    self._last_item_end = 0
    self._num_items = 0

  @property
  def num_items_written(self):
    return self._num_items

  def __call__(self, trajectory):
    trajectory = tf.nest.map_structure(np.asarray, trajectory)
    # Front padding only before a real episode start: an observer attached
    # mid-episode (after `reset`) starts its stream at the current step.
    if self._stream_length == 0 and trajectory.is_first():
      front_padding = _with_step_types(
          _zeros_like(trajectory), ts.StepType.FIRST, ts.StepType.FIRST)
      for _ in range(self._config.burn_in_steps):
        self._append(front_padding)
    self._append(trajectory)
    if trajectory.is_boundary():
      if self._last_item_end != self._stream_length:
        rear_padding = _with_step_types(
            _zeros_like(trajectory), ts.StepType.LAST, ts.StepType.FIRST)
        while self._last_item_end != self._stream_length:
          self._append(rear_padding)
      self._end_episode()

  def _append(self, step):
    self._writer.append(step)
    self._recent.append(step)
    self._stream_length += 1
    length, stride = self._sequence_length, self._config.stride
    if self._stream_length >= length and (
        self._stream_length - length) % stride == 0:
      self._write_item()

  def _write_item(self):
    if self._priority_fn is None:
      priority = self._default_priority
    else:
      sequence = tf.nest.map_structure(lambda *steps: np.stack(steps),
                                       *self._recent)
      priority = float(self._priority_fn(sequence))
    item = tf.nest.map_structure(lambda column: column[-self._sequence_length:],
                                 self._writer.history)
    self._writer.create_item(self._table_name, priority, item)
    self._last_item_end = self._stream_length
    self._num_items += 1

  def _end_episode(self):
    self._writer.end_episode(clear_buffers=True)
    self._recent.clear()
    self._stream_length = 0
    self._last_item_end = 0

  def flush(self):
    """Blocks until the items written so far are on the server."""
    self._writer.flush()

  def reset(self, write_cached_steps=False):
    """Drops the unfinished episode (its complete items are kept)."""
    del write_cached_steps  # An unfinished episode has no final step to pad.
    self._end_episode()

  def close(self):
    self._writer.end_episode(clear_buffers=True)
    self._writer.close()
