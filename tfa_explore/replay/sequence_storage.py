"""How an actor's R2D2 items reach Reverb: the storages and their writers.

An R2D2 observer (`sequence_writer`) cuts each env's episodes into items;
a `SequenceStorage` hands it the `SequenceWriter` that stores them:

* `StepStream` (the default): each env's stream appended one step at a
  time to its own Reverb writer; items are references into that stream,
  so overlapping items share the stored steps (each step stored once, as
  Acme's adders store them). Memory-lean, for large observations.
* `SequenceCopies`: each item appended whole, as one `[sequence_length]`
  step, to one writer that all envs of an actor share: one Reverb append
  per item instead of one per env and step, and one stream to the server
  instead of one per env. Overlapping items store their shared steps
  again (each step `sequence_length / stride` times, as the paper's
  replay of sequences does). Cheaper in CPU for small observations
  (docs/performance.md).

Both give the table the same items, with the same signature.
"""

import abc
import time
from typing import Any, List, Optional

import tree

from tfa_explore.replay import sequence_cutter


class Deadline:
  """The time left of one timeout that several waits share.

  An actor's stop gives all its envs' writers and its progress report one
  timeout: each wait takes what the ones before it left.
  """

  def __init__(self, timeout_ms: Optional[float]):
    """`timeout_ms`: from now; None for no deadline."""
    self._end = None if timeout_ms is None else (
        time.monotonic() + timeout_ms / 1000.0)

  def remaining_ms(self) -> Optional[int]:
    """Milliseconds left (0 once passed); None without a deadline."""
    if self._end is None:
      return None
    return max(int((self._end - time.monotonic()) * 1000), 0)


def last_steps(writer, length):
  """The item columns of the last `length` steps appended to `writer`."""
  return tree.map_structure(lambda column: column[-length:], writer.history)


class PendingItem:
  """An item completed by an env's stream, waiting for its priority."""

  __slots__ = ('steps', 'handle', '_sequence')

  def __init__(self, steps, handle):
    self.steps = steps  # the `sequence_length` steps, oldest first
    self.handle = handle  # what `SequenceWriter.add` returned for it
    self._sequence = None

  @property
  def sequence(self):
    """The `[sequence_length]` numpy sequence (stacked once)."""
    if self._sequence is None:
      self._sequence = sequence_cutter.stack(self.steps)
    return self._sequence


class SequenceWriter(abc.ABC):
  """What a `SequenceStorage` hands an env's observer: where its items go.

  The observer calls `add` for every stream step and `create_item` for
  every item once it has its priority, then `limit_in_flight`; `flush`
  and `close` at the end.
  """

  def __init__(self, py_client, num_keep_alive_refs, max_in_flight_items):
    self._max_in_flight_items = max_in_flight_items
    self._writer = py_client.trajectory_writer(
        num_keep_alive_refs=num_keep_alive_refs)

  @abc.abstractmethod
  def add(self, flat_step, ends_item: bool) -> Any:
    """Takes one step of the env's stream (flat: the table signature's
    columns, in order); returns what `create_item` needs of the item it
    ends (`ends_item`), else None."""

  @abc.abstractmethod
  def create_item(self, table_name: str, priority: float,
                  item: PendingItem) -> None:
    """Creates `item` in `table_name` with `priority`."""

  def limit_in_flight(self) -> None:
    """Blocks while more than `max_in_flight_items` items are unconfirmed.

    That is how the table's rate limiter holds the actor back, and what
    bounds the writer's memory.
    """
    self._writer.flush(block_until_num_items=self._max_in_flight_items)

  def flush(self) -> None:
    """Blocks until every item created so far is on the server."""
    self._writer.flush()

  def close(self, timeout_ms: Optional[int]) -> None:
    """Sends the items in flight, then closes the writer.

    Args:
      timeout_ms: longest wait for the server to accept them (its rate
        limiter may hold them); None waits for ever. Items not accepted in
        time are dropped and DeadlineExceededError raised; the writer is
        closed either way.
    """
    try:
      self._writer.end_episode(clear_buffers=True, timeout_ms=timeout_ms)
    finally:
      self._writer.close()


class _StreamWriter(SequenceWriter):
  """One env's `StepStream` writer: items reference its appended steps."""

  def __init__(self, py_client, sequence_config, max_in_flight_items):
    # Pending items (`R2D2SequenceObserver.add`) reach back at most one
    # sequence and one stride: the rear padding after the item, or the
    # `add`s an item may wait (`BatchedSequenceWriter`), up to the next
    # item end.
    super().__init__(
        py_client, sequence_config.sequence_length + sequence_config.stride,
        max_in_flight_items)
    self._length = sequence_config.sequence_length

  def add(self, flat_step, ends_item):
    self._writer.append(flat_step)
    return last_steps(self._writer, self._length) if ends_item else None

  def create_item(self, table_name, priority, item):
    self._writer.create_item(table_name, priority, item.handle)


class _SharedCopyWriter(SequenceWriter):
  """The one `SequenceCopies` writer that every env of an actor holds.

  The rule of sharing it: each item is appended whole, so the envs' items
  may interleave in its stream in any order; `limit_in_flight` bounds the
  unconfirmed items of all envs together (`SequenceCopies.writers`); the
  first env's `close` sends and closes it for all of them, and the later
  ones' do nothing.
  """

  def __init__(self, py_client, max_in_flight_items):
    super().__init__(py_client, 1, max_in_flight_items)
    self._closed = False

  def add(self, flat_step, ends_item):
    del flat_step, ends_item  # Items are appended whole.
    return None

  def create_item(self, table_name, priority, item):
    self._writer.append(tree.flatten(item.sequence))
    # `[-1]`: the one step just appended, squeezed, so each column is the
    # `[sequence_length, ...]` array, as a stream item's columns are.
    self._writer.create_item(
        table_name, priority,
        [column[-1] for column in self._writer.history])

  def close(self, timeout_ms):
    if not self._closed:
      self._closed = True
      super().close(timeout_ms)


class SequenceStorage(abc.ABC):
  """How an actor's items reach Reverb (see the module doc)."""

  @abc.abstractmethod
  def writers(self, py_client, sequence_config, num_envs,
              max_in_flight_items) -> List[SequenceWriter]:
    """One writer per env (the same object where envs share one).

    Args:
      py_client: `reverb.Client`.
      sequence_config: the agent's `SequenceConfig`.
      num_envs: envs of the actor.
      max_in_flight_items: items per env sent but not yet confirmed by
        the server before writing blocks (the rate limiter's hold).
    """


class StepStream(SequenceStorage):
  """Each step stored once; items reference them (module doc)."""

  def writers(self, py_client, sequence_config, num_envs,
              max_in_flight_items):
    return [_StreamWriter(py_client, sequence_config, max_in_flight_items)
            for _ in range(num_envs)]

  def __repr__(self):
    return 'StepStream()'


# Reverb logs a warning per item above about 50 unconfirmed items.
_MAX_SHARED_IN_FLIGHT_ITEMS = 32


class SequenceCopies(SequenceStorage):
  """Each item appended whole to one writer per actor (module doc)."""

  def writers(self, py_client, sequence_config, num_envs,
              max_in_flight_items):
    del sequence_config  # The items come whole.
    shared = _SharedCopyWriter(py_client, min(
        max_in_flight_items * num_envs, _MAX_SHARED_IN_FLIGHT_ITEMS))
    return [shared] * num_envs

  def __repr__(self):
    return 'SequenceCopies()'
