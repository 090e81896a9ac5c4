"""R2D3's copies of an actor's successful episodes (`SuccessCopies`).

A departure from the paper (R2D3 with `success_min_return`,
`experiments.r2d3.DemonstrationReplay`): each env's listener keeps the
steps of the current episode and the priorities its items got in the
agent table and, when the episode ends with a return of at least
`min_return`, writes its sequences once more, with the same priorities,
to the success table (the learner's second demonstration table):
`write_stream` of the episode cut again by the same cutter, which appends
each stream step (paddings included) once and creates the items at the
same ends, so the success table's chunks hold every step once (whatever
the agent table's storage). An actor keeps one episode's steps per env.
"""

import numpy as np

from tfa_explore.replay import sequence_cutter
from tfa_explore.replay import sequence_writer
from tfa_explore.replay import tables


class SuccessCopies(sequence_writer.ItemListener):
  """One env's copies of its successful episodes; see the module doc."""

  def __init__(self, py_client, table_name, sequence_config, min_return,
               collect_data_spec=None, max_in_flight_items=4):
    """Creates the listener (its Reverb writer at the first copy).

    Args:
      py_client: `reverb.Client`.
      table_name: the success table.
      sequence_config: the agent's `SequenceConfig` (the agent table's
        cutting).
      min_return: the episode return from which an episode is copied.
      collect_data_spec: the agent's `collect_data_spec`; if given, the
        table's signature is checked against it (ValueError naming the spec
        on mismatch).
      max_in_flight_items: copies sent but not yet confirmed by the server
        before writing blocks (the table is not rate limited: this bounds
        the copies in flight, as for the agent table).
    """
    if collect_data_spec is not None:
      tables.check_sequence_tables(
          py_client.server_info(), [table_name], collect_data_spec,
          sequence_config.sequence_length)
    self._py_client = py_client
    self._table_name = table_name
    self._config = sequence_config
    self._min_return = float(min_return)
    self._max_in_flight_items = max_in_flight_items
    self._writer = None
    self.num_items_written = 0
    # This episode's steps and its items' priorities, in order.
    self._steps = []
    self._priorities = []
    self._return = 0.0

  def add(self, trajectory):
    self._steps.append(trajectory)
    self._return += float(np.sum(trajectory.reward))

  def items_written(self, priorities):
    self._priorities.extend(priorities)

  def end_episode(self, finished):
    if finished and self._return >= self._min_return:
      self._write_copies()
    self._steps = []
    self._priorities = []
    self._return = 0.0

  def _write_copies(self):
    if self._writer is None:
      self._writer = self._py_client.trajectory_writer(
          num_keep_alive_refs=self._config.sequence_length)
    # The same cutter on the same steps: the agent table's stream and items.
    stream = sequence_cutter.cut_episode(self._steps, self._config)
    self.num_items_written += sequence_writer.write_stream(
        self._writer, self._table_name, stream, self._priorities)
    self._writer.flush(block_until_num_items=self._max_in_flight_items)

  def flush(self):
    if self._writer is not None:
      self._writer.flush()

  def close(self, timeout_ms):
    if self._writer is not None:
      try:
        self._writer.end_episode(clear_buffers=True, timeout_ms=timeout_ms)
      finally:
        self._writer.close()
