"""Actor-side writers of R2D2 sequences into a Reverb table.

`R2D2SequenceObserver` is a TF-Agents observer (called with one unbatched
`Trajectory` per environment step, like `ReverbAddTrajectoryObserver`). It
cuts each episode with `sequence_cutter.SequenceCutter` (padded,
overlapping sequences that never cross the episode boundary; see there)
and hands the items to the `sequence_storage.SequenceWriter` its
`SequenceStorage` gives it (`StepStream` or `SequenceCopies`).
`BatchedSequenceWriter` runs one observer per environment of a batched
actor.

An `ItemListener` is told what an observer wrote: each step, the
priorities of its items, each episode's end. The default hears nothing;
a replay strategy may give the actors others (R2D3's success copies,
`replay.success_copies`).

Initial priorities: with a `priority_fn` (the agent's
`initial_priority_fn()`, evaluated with the actor's network copy, as in the
paper) each item gets its TD-based priority; without one, `default_priority`
(cheaper, for ablations or weak actors).
"""

import numpy as np
import tree

from tfa_explore.replay import sequence_cutter
from tfa_explore.replay import sequence_storage
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
                         sequence_storage.last_steps(
                             writer, len(stream_step.item)))
  return num_items


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


class ItemListener:
  """Told what one env's observer wrote; this base class hears nothing.

  Called by the env's `R2D2SequenceObserver` after its own writes:
  implementers (R2D3's `success_copies.SuccessCopies`) keep what they
  need of the episode and write it elsewhere.
  """

  def add(self, trajectory) -> None:
    """One step of the env (numpy leaves), before its items are cut."""

  def items_written(self, priorities) -> None:
    """The env's items just created, their priorities in stream order."""

  def end_episode(self, finished: bool) -> None:
    """The episode is over: `finished` (its last step came), or dropped
    unfinished (`R2D2SequenceObserver.reset`)."""

  def flush(self) -> None:
    """Blocks until what it wrote is on the server."""

  def close(self, timeout_ms) -> None:
    """Sends what it wrote (at most `timeout_ms`; None: for ever), closes."""


class R2D2SequenceObserver:
  """Writes episode-aligned, padded R2D2 sequences; see the module doc."""

  def __init__(self, py_client, table_name, sequence_config,
               collect_data_spec=None, priority_fn=None,
               default_priority=1.0, max_in_flight_items=4, writer=None,
               listener=None):
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
      max_in_flight_items: items sent but not yet confirmed by the server
        before writing blocks (the rate limiter's hold on the actor).
      writer: this env's `SequenceWriter` from a `SequenceStorage`
        (`BatchedSequenceWriter`); None for its own `StepStream` writer.
      listener: an `ItemListener` told what this observer writes; None
        for none.
    """
    self._table_name = table_name
    self._priority_fn = priority_fn
    self._default_priority = float(default_priority)
    if collect_data_spec is not None:
      tables.check_sequence_tables(
          py_client.server_info(), [table_name], collect_data_spec,
          sequence_config.sequence_length)
    self._cutter = sequence_cutter.SequenceCutter(sequence_config)
    self._writer = writer or sequence_storage.StepStream().writers(
        py_client, sequence_config, 1, max_in_flight_items)[0]
    self._listener = listener or ItemListener()
    self._num_items = 0
    self._pending = []  # `PendingItem`s, in order
    self._episode_over = False

  @property
  def num_items_written(self):
    return self._num_items

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
    self.add_arrays(tree.map_structure(np.asarray, trajectory))

  def add_arrays(self, trajectory):
    """`add` of a trajectory whose leaves are numpy arrays already."""
    self._listener.add(trajectory)
    for stream_step in self._cutter.add(trajectory):
      ends_item = stream_step.item is not None
      # Flat: Reverb's `append` walks a nested step's paths in Python at
      # every call; the flat columns are the table signature's, in order.
      handle = self._writer.add(tree.flatten(stream_step.step), ends_item)
      if ends_item:
        self._pending.append(
            sequence_storage.PendingItem(stream_step.item, handle))
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
    priorities = [float(priority) for priority in priorities]
    for item, priority in zip(self._pending, priorities):
      self._writer.create_item(self._table_name, priority, item)
    self._num_items += len(priorities)
    self._listener.items_written(priorities)
    if self._pending:
      self._writer.limit_in_flight()
    self._pending.clear()
    if self._episode_over:
      self._end_episode()

  def _end_episode(self):
    self._listener.end_episode(finished=self._episode_over)
    # No Reverb `end_episode` here: it blocks until every pending item is
    # on the server (a round trip per episode, ~15 ms, which dominated a
    # batched actor's step). Items never reach back past the stream start,
    # so one Reverb episode can hold many of ours.
    self._episode_over = False

  def flush(self):
    """Blocks until the items written so far are on the server."""
    self._writer.flush()
    self._listener.flush()

  def reset(self, write_cached_steps=False):
    """Drops the unfinished episode (its complete items are kept)."""
    del write_cached_steps  # An unfinished episode has no final step to pad.
    self.write_pending()
    self._cutter.reset()
    self._end_episode()

  def close(self, timeout_ms=None):
    """Sends the written items and closes the writers.

    Args:
      timeout_ms: longest wait, for the writer and the listener together,
        for the server to accept the items still in flight (its rate
        limiter may hold them); None waits for ever. Items not accepted in
        time are dropped, and DeadlineExceededError raised.
    """
    deadline = sequence_storage.Deadline(timeout_ms)
    try:
      self._writer.close(deadline.remaining_ms())
    finally:
      self._listener.close(deadline.remaining_ms())


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
               default_priority=1.0, storage=None, max_in_flight_items=4,
               listeners=None):
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
      storage: a `sequence_storage.SequenceStorage`; None for
        `StepStream()`.
      max_in_flight_items: as for `R2D2SequenceObserver`, per env.
      listeners: one `ItemListener` per env (its observer's); None for
        none.
    """
    if num_envs < 1:
      raise ValueError(f'num_envs must be >= 1, got {num_envs}.')
    self._priorities_fn = priorities_fn
    self._pack = None  # `_packer` of the first trajectory's structure
    # Steps the oldest pending item may wait for its priority (0: none).
    self._max_wait = sequence_config.stride if priorities_fn else 0
    self._waited = 0  # steps since the pending items were last written
    storage = sequence_storage.StepStream() if storage is None else storage
    if not isinstance(storage, sequence_storage.SequenceStorage):
      raise ValueError(
          f'storage must be a SequenceStorage, got {storage!r}.')
    writers = storage.writers(py_client, sequence_config, num_envs,
                              max_in_flight_items)
    listeners = listeners or [None] * num_envs
    if len(listeners) != num_envs:
      raise ValueError(
          f'{len(listeners)} listeners for {num_envs} envs.')
    self._observers = [
        R2D2SequenceObserver(
            py_client, table_name, sequence_config,
            collect_data_spec if index == 0 else None,
            default_priority=default_priority,
            max_in_flight_items=max_in_flight_items, writer=writer,
            listener=listener)
        for index, (writer, listener) in enumerate(zip(writers, listeners))]

  @property
  def num_items_written(self):
    return sum(observer.num_items_written for observer in self._observers)

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
      observer.add_arrays(
          self._pack(iter([leaf[index, ...] for leaf in leaves])))
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
    deadline = sequence_storage.Deadline(timeout_ms)
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
