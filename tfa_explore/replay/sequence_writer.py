"""Actor-side writers of R2D2 sequences into a Reverb table.

`R2D2SequenceObserver` is a TF-Agents observer (called with one unbatched
`Trajectory` per environment step, like `ReverbAddTrajectoryObserver`). It
cuts each episode with `sequence_cutter.SequenceCutter` (padded,
overlapping sequences that never cross the episode boundary; see there).
How the items reach Reverb is a `SequenceStorage`:

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
`BatchedSequenceWriter` runs one observer per environment of a batched
actor.

Successes (optional; R2D3 with `success_min_return`, a departure from the
paper): the observer keeps the steps of the current episode and the
priorities its items got and, when the episode ends with a return of at
least `success_min_return`, writes its sequences once more, with the same
priorities, to `success_table` (the learner's second demonstration
table): `write_stream` of the episode cut again by the same cutter, which
appends each stream step (paddings included) once and creates the items
at the same ends, so the success table's chunks hold every step once
(whatever the agent table's storage). The actor keeps references to one
episode's steps per environment.

Initial priorities: with a `priority_fn` (the agent's
`initial_priority_fn()`, evaluated with the actor's network copy, as in the
paper) each item gets its TD-based priority; without one, `default_priority`
(cheaper, for ablations or weak actors).
"""

import time

import numpy as np
import tree

from tfa_explore.replay import sequence_cutter
from tfa_explore.replay import tables


def write_stream(writer, table_name, stream, priorities):
  """Writes a cut stream: each step appended once, each item created.

  Args:
    writer: a Reverb `TrajectoryWriter` keeping at least `sequence_length`
      steps alive.
    table_name: the table of the items.
    stream: `StreamStep`s from `sequence_cutter` (e.g. `cut_episode`).
    priorities: one priority per item of `stream`, in order.

  Returns:
    The number of items created.
  """
  priorities = list(priorities)
  num_items = len(sequence_cutter.stream_items(stream))
  if len(priorities) != num_items:
    raise ValueError(
        f'{len(priorities)} priorities for a stream of {num_items} items.')
  priorities = iter(priorities)
  for stream_step in stream:
    writer.append(stream_step.step)
    if stream_step.item is not None:
      writer.create_item(table_name, float(next(priorities)),
                         _last_steps(writer, len(stream_step.item)))
  return num_items


def _last_steps(writer, length):
  """The item columns of the last `length` steps appended to `writer`."""
  return tree.map_structure(lambda column: column[-length:], writer.history)


def _packer(structure):
  """A function that rebuilds `structure`'s nest from an iterator over its
  leaves in `tree.flatten` order: `tree.unflatten_as` for one fixed
  structure, without its per-call walk of the structure."""
  if isinstance(structure, dict):
    keys = sorted(structure)  # tree.flatten's order of a dict's values
    packs = [_packer(structure[key]) for key in keys]
    return lambda leaves: type(structure)(
        zip(keys, [pack(leaves) for pack in packs]))
  if isinstance(structure, tuple) and hasattr(structure, '_fields'):
    packs = [_packer(field) for field in structure]
    return lambda leaves: type(structure)(*[pack(leaves) for pack in packs])
  if isinstance(structure, (tuple, list)):
    packs = [_packer(item) for item in structure]
    return lambda leaves: type(structure)([pack(leaves) for pack in packs])
  return next


class _Deadline:
  """The time left of one timeout shared by several waits (None: none)."""

  def __init__(self, timeout_ms):
    self._end = None if timeout_ms is None else (
        time.monotonic() + timeout_ms / 1000.0)

  def remaining_ms(self):
    if self._end is None:
      return None
    return max(int((self._end - time.monotonic()) * 1000), 0)


class _PendingItem:
  """An item completed by the stream, waiting for its priority."""

  __slots__ = ('steps', 'handle', '_sequence')

  def __init__(self, steps, handle):
    self.steps = steps  # the `sequence_length` steps, oldest first
    self.handle = handle  # what the storage's writer needs to create it
    self._sequence = None

  @property
  def sequence(self):
    """The `[sequence_length]` numpy sequence (stacked once)."""
    if self._sequence is None:
      self._sequence = sequence_cutter.stack(self.steps)
    return self._sequence


class _Writer:
  """A Reverb `TrajectoryWriter` and its hold on unconfirmed items."""

  def __init__(self, py_client, num_keep_alive_refs, max_in_flight_items):
    self._max_in_flight_items = max_in_flight_items
    self._writer = py_client.trajectory_writer(
        num_keep_alive_refs=num_keep_alive_refs)

  def flush(self):
    # Blocks while more than `max_in_flight_items` items are unconfirmed:
    # that is how the table's rate limiter holds the actor back, and what
    # bounds the writer's memory.
    self._writer.flush(block_until_num_items=self._max_in_flight_items)

  def flush_all(self):
    self._writer.flush()

  def end(self, timeout_ms):
    self._writer.end_episode(clear_buffers=True, timeout_ms=timeout_ms)

  def close(self):
    self._writer.close()


class _StreamWriter(_Writer):
  """One env's `StepStream` writer."""

  def __init__(self, py_client, sequence_config, max_in_flight_items):
    # Pending items (see `R2D2SequenceObserver.add`) reach back at most one
    # sequence and one stride: the rear padding after the item, or the
    # `add`s an item may wait (`BatchedSequenceWriter`), up to the next
    # item end.
    super().__init__(
        py_client, sequence_config.sequence_length + sequence_config.stride,
        max_in_flight_items)
    self._length = sequence_config.sequence_length

  def add(self, flat_step, ends_item):
    """Appends a stream step; the item columns if it ends an item."""
    self._writer.append(flat_step)
    return _last_steps(self._writer, self._length) if ends_item else None

  def create_item(self, table_name, priority, item):
    self._writer.create_item(table_name, priority, item.handle)


class _CopyWriter(_Writer):
  """The `SequenceCopies` writer that all envs of an actor share."""

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

  def end(self, timeout_ms):
    if not self._closed:  # Once for all the envs that share it.
      super().end(timeout_ms)

  def close(self):
    if not self._closed:
      self._closed = True
      super().close()


class SequenceStorage:
  """How an actor's items reach Reverb (see the module doc)."""

  def writers(self, py_client, sequence_config, num_envs,
              max_in_flight_items):
    """One writer per env (the same object where envs share one).

    Args:
      py_client: `reverb.Client`.
      sequence_config: the agent's `SequenceConfig`.
      num_envs: envs of the actor.
      max_in_flight_items: items per env sent but not yet confirmed by
        the server before writing blocks (the rate limiter's hold).
    """
    raise NotImplementedError


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
    shared = _CopyWriter(py_client, min(max_in_flight_items * num_envs,
                                        _MAX_SHARED_IN_FLIGHT_ITEMS))
    return [shared] * num_envs

  def __repr__(self):
    return 'SequenceCopies()'


class R2D2SequenceObserver:
  """Writes episode-aligned, padded R2D2 sequences; see the module doc."""

  def __init__(self, py_client, table_name, sequence_config,
               collect_data_spec=None, priority_fn=None,
               default_priority=1.0, max_in_flight_items=4,
               success_table=None, success_min_return=None, writer=None):
    """Creates the observer.

    Args:
      py_client: `reverb.Client`.
      table_name: the table to write to.
      sequence_config: the agent's `SequenceConfig`.
      collect_data_spec: the agent's `collect_data_spec`; if given, the
        signatures of the table (and of `success_table`) are checked
        against it (ValueError naming the spec on mismatch).
      priority_fn: callable, `[sequence_length]` numpy trajectory -> float
        priority, e.g. `agent.initial_priority_fn()`; None to insert with
        `default_priority`.
      default_priority: priority when `priority_fn` is None.
      max_in_flight_items: items sent but not yet confirmed by the server
        before writing blocks (the rate limiter's hold on the actor).
      success_table: table that also gets every sequence of an episode
        whose return is at least `success_min_return` (see the module
        doc); None for none.
      success_min_return: the return threshold for `success_table`.
      writer: this env's writer from a `SequenceStorage`'s `writers`
        (`BatchedSequenceWriter`); None for its own `StepStream` writer.
    """
    if (success_table is None) != (success_min_return is None):
      raise ValueError(
          'success_table and success_min_return go together, got '
          f'{success_table!r} and {success_min_return!r}.')
    self._success_table = success_table
    self._success_min_return = success_min_return
    # This episode's steps and its items' priorities, in order; kept only
    # with a success table.
    self._episode_steps = []
    self._episode_priorities = []
    self._episode_return = 0.0
    self._num_success_items = 0
    self._success_writer = None
    self._py_client = py_client
    self._max_in_flight_items = max_in_flight_items
    self._table_name = table_name
    self._config = sequence_config
    self._sequence_length = sequence_config.sequence_length
    self._priority_fn = priority_fn
    self._default_priority = float(default_priority)
    if collect_data_spec is not None:
      server_info = py_client.server_info()
      tables.check_sequence_tables(
          server_info, [table_name] + (
              [success_table] if success_table is not None else []),
          collect_data_spec, self._sequence_length,
          missing_hint=f'the server has tables {sorted(server_info)}.')
    self._cutter = sequence_cutter.SequenceCutter(sequence_config)
    self._writer = writer or StepStream().writers(
        py_client, sequence_config, 1, max_in_flight_items)[0]
    self._num_items = 0
    self._pending = []  # `_PendingItem`s, in order
    self._episode_over = False

  @property
  def num_items_written(self):
    return self._num_items

  @property
  def num_success_items_written(self):
    return self._num_success_items

  def __call__(self, trajectory):
    self.add(trajectory)
    self.write_pending()

  def add(self, trajectory):
    """Appends one step; items it completes wait for `write_pending`.

    `BatchedSequenceWriter` uses the two halves to compute the priorities
    of all environments' new items in one call. Every `add` must be
    followed by `write_pending` before the next `add`, or at the latest
    `stride` `add`s later and before the next episode's first: within that,
    a pending item's steps are still alive in the Reverb writer (the next
    item's end, or the episode's last step and its rear padding up to it,
    is at most `stride` steps on).
    """
    self._add(tree.map_structure(np.asarray, trajectory))

  def _add(self, trajectory):
    """`add` of a trajectory whose leaves are numpy arrays already."""
    if self._success_table is not None:
      self._episode_steps.append(trajectory)
      self._episode_return += float(np.sum(trajectory.reward))
    for stream_step in self._cutter.add(trajectory):
      ends_item = stream_step.item is not None
      # Flat: Reverb's `append` walks a nested step's paths in Python at
      # every call; the flat columns are the table signature's, in order.
      handle = self._writer.add(tree.flatten(stream_step.step), ends_item)
      if ends_item:
        self._pending.append(_PendingItem(stream_step.item, handle))
    if trajectory.is_boundary():
      self._episode_over = True

  @property
  def episode_over(self):
    """The last `add` ended the episode (`write_pending` comes next)."""
    return self._episode_over

  @property
  def num_pending(self):
    return len(self._pending)

  @property
  def pending_sequences(self):
    """The `[sequence_length]` numpy sequences of the items not yet written."""
    return [item.sequence for item in self._pending]

  def write_pending(self, priorities=None):
    """Writes the items completed since the last call.

    Args:
      priorities: one priority per pending item (in `pending_sequences`
        order), or None to use `priority_fn` / `default_priority`.
    """
    if priorities is None:
      if self._priority_fn is None:
        priorities = [self._default_priority] * len(self._pending)
      else:
        priorities = [self._priority_fn(sequence)
                      for sequence in self.pending_sequences]
    if len(priorities) != len(self._pending):
      raise ValueError(f'{len(priorities)} priorities for '
                       f'{len(self._pending)} pending items.')
    for item, priority in zip(self._pending, priorities):
      self._writer.create_item(self._table_name, float(priority), item)
      self._num_items += 1
      if self._success_table is not None:
        self._episode_priorities.append(float(priority))
    if self._pending:
      self._writer.flush()
    self._pending.clear()
    if self._episode_over:
      self._end_episode()

  def _write_successes(self):
    """Writes the finished episode's sequences to the success table."""
    if self._success_writer is None:
      self._success_writer = self._py_client.trajectory_writer(
          num_keep_alive_refs=self._sequence_length)
    # The same cutter on the same steps: the agent table's stream and items.
    stream = sequence_cutter.cut_episode(self._episode_steps, self._config)
    self._num_success_items += write_stream(
        self._success_writer, self._success_table, stream,
        self._episode_priorities)
    # The success table is not rate limited: this only bounds the copies
    # in flight, as for the agent table.
    self._success_writer.flush(
        block_until_num_items=self._max_in_flight_items)

  def _end_episode(self):
    if (self._episode_over and self._success_table is not None and
        self._episode_return >= self._success_min_return):
      self._write_successes()
    self._episode_steps = []
    self._episode_priorities = []
    self._episode_return = 0.0
    # No Reverb `end_episode` here: it blocks until every pending item is
    # on the server (a round trip per episode, ~15 ms, which dominated a
    # batched actor's step). Items never reach back past the stream start,
    # so one Reverb episode can hold many of ours.
    self._episode_over = False

  def flush(self):
    """Blocks until the items written so far are on the server."""
    self._writer.flush_all()
    if self._success_writer is not None:
      self._success_writer.flush()

  def reset(self, write_cached_steps=False):
    """Drops the unfinished episode (its complete items are kept)."""
    del write_cached_steps  # An unfinished episode has no final step to pad.
    self.write_pending()
    self._cutter.reset()
    self._end_episode()

  def close(self, timeout_ms=None):
    """Sends the written items and closes the writers.

    Args:
      timeout_ms: longest wait, for both writers together, for the server
        to accept the items still in flight (its rate limiter may hold
        them); None waits for ever. Items not accepted in time are
        dropped, and DeadlineExceededError raised.
    """
    deadline = _Deadline(timeout_ms)
    try:
      self._writer.end(deadline.remaining_ms())
      if self._success_writer is not None:
        self._success_writer.end_episode(clear_buffers=True,
                                         timeout_ms=deadline.remaining_ms())
    finally:
      self._writer.close()
      if self._success_writer is not None:
        self._success_writer.close()


class BatchedSequenceWriter:
  """`R2D2SequenceObserver`s for a batch of environments.

  Called with one batched `[num_envs]` trajectory per step (a
  `BatchedPyEnvironment` transition). Each environment has its own
  observer (its own episode stream and Reverb writer); the initial
  priorities of all items completed in a step are computed in one call of
  `priorities_fn`, which is what makes many environments per actor cheap.

  With `priorities_fn`, items wait up to a stride of steps so that one call
  serves more of them: the envs' episodes fall out of step, and a call
  costs about the same for one sequence as for sixteen
  (docs/performance.md). They are written once there are `num_envs` of
  them, an episode ended, or the oldest waited `stride` steps.
  """

  def __init__(self, py_client, table_name, sequence_config, num_envs,
               collect_data_spec=None, priorities_fn=None,
               default_priority=1.0, success_table=None,
               success_min_return=None, storage=None,
               max_in_flight_items=4):
    """Creates the writer.

    Args:
      py_client: `reverb.Client`.
      table_name: the table to write to.
      sequence_config: the agent's `SequenceConfig`.
      num_envs: the batch size of the trajectories.
      collect_data_spec: as for `R2D2SequenceObserver` (checked once).
      priorities_fn: callable, `[P, sequence_length]` numpy trajectories ->
        `[P]` priorities, e.g. `agent.initial_priorities_fn()`; None to
        insert with `default_priority`.
      default_priority: priority when `priorities_fn` is None.
      success_table, success_min_return: as for `R2D2SequenceObserver`
        (per environment).
      storage: a `SequenceStorage`; None for `StepStream()`.
      max_in_flight_items: as for `R2D2SequenceObserver`, per env.
    """
    if num_envs < 1:
      raise ValueError(f'num_envs must be >= 1, got {num_envs}.')
    self._priorities_fn = priorities_fn
    self._pack = None  # `_packer` of the first trajectory's structure
    # Steps the oldest pending item may wait for its priority (0: none).
    self._max_wait = sequence_config.stride if priorities_fn else 0
    self._waited = 0  # steps since the pending items were last written
    storage = StepStream() if storage is None else storage
    if not isinstance(storage, SequenceStorage):
      raise ValueError(
          f'storage must be a SequenceStorage, got {storage!r}.')
    writers = storage.writers(py_client, sequence_config, num_envs,
                              max_in_flight_items)
    self._observers = [
        R2D2SequenceObserver(
            py_client, table_name, sequence_config,
            collect_data_spec if index == 0 else None,
            default_priority=default_priority,
            max_in_flight_items=max_in_flight_items,
            success_table=success_table,
            success_min_return=success_min_return, writer=writer)
        for index, writer in enumerate(writers)]

  @property
  def num_items_written(self):
    return sum(observer.num_items_written for observer in self._observers)

  @property
  def num_success_items_written(self):
    return sum(observer.num_success_items_written
               for observer in self._observers)

  def __call__(self, trajectory):
    leaves = [np.asarray(leaf) for leaf in tree.flatten(trajectory)]
    if leaves[0].shape[:1] != (len(self._observers),):
      raise ValueError(
          f'Expected trajectories of batch size {len(self._observers)}, got '
          f'leading shape {leaves[0].shape[:1]}.')
    if self._pack is None:
      self._pack = _packer(trajectory)
    for index, observer in enumerate(self._observers):
      # `[index, ...]` keeps 0-d arrays (not numpy scalars), as `add` would.
      observer._add(self._pack(iter([leaf[index, ...] for leaf in leaves])))  # pylint: disable=protected-access
    if self._priorities_fn is None:
      for observer in self._observers:
        observer.write_pending()
      return
    self._waited += 1
    if (self._waited > self._max_wait or
        sum(observer.num_pending for observer in self._observers) >=
        len(self._observers) or
        any(observer.episode_over for observer in self._observers)):
      self._write_pending()

  def _write_pending(self):
    """Writes every env's pending items, their priorities in one call."""
    self._waited = 0
    sequences = [observer.pending_sequences for observer in self._observers]
    flat = [sequence for per_env in sequences for sequence in per_env]
    if not flat:
      for observer in self._observers:
        observer.write_pending()  # Ends episodes that produced no item.
      return
    priorities = np.asarray(self._priorities_fn(sequence_cutter.stack(flat)))
    start = 0
    for observer, per_env in zip(self._observers, sequences):
      observer.write_pending(priorities[start:start + len(per_env)])
      start += len(per_env)

  def flush(self):
    if self._priorities_fn is not None:
      self._write_pending()
    for observer in self._observers:
      observer.flush()

  def close(self, timeout_ms=None):
    """`R2D2SequenceObserver.close` for every env, within one timeout.

    Args:
      timeout_ms: longest wait for all envs together (not per env), as in
        `R2D2SequenceObserver.close`; None waits for ever.

    Every env's writer is closed, even once the time is up; the first error
    is raised afterwards.
    """
    deadline = _Deadline(timeout_ms)
    error = None
    if self._priorities_fn is not None:
      try:
        self._write_pending()  # the items still waiting for priorities
      except Exception as e:  # pylint: disable=broad-except
        error = e
    for observer in self._observers:
      try:
        observer.close(deadline.remaining_ms())
      except Exception as e:  # pylint: disable=broad-except
        error = error or e
    if error is not None:
      raise error
