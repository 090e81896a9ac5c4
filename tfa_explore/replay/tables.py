"""Reverb tables for R2D2 and the check that a table fits an agent.

One item = one sequence of `SequenceConfig.sequence_length` steps. Rate
control is Reverb's `SampleToInsertRatio`: sequences sampled by the learner
per sequence inserted by the actors. The table factories are not
gin-configurable: the experiment's settings (`r2d2.Settings`) pass their
values, so a binding here could only be silently overridden.
"""

import glob
import os
import shutil
import threading
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple
import uuid

from absl import logging
import reverb
from reverb.cc import schema_pb2
import tensorflow as tf
from tf_agents.specs import tensor_spec
from tf_agents.utils import nest_utils


def tf_client(server_address, purpose):
  """A `reverb.TFClient` with a client resource of its own.

  TF shares resources by name within a process. A fixed name (such as
  `ReverbReplayBuffer`'s 'rb_tf_client') silently reuses the client of the
  first server the process talked to, which blocks forever once that server
  is gone. No name is worse in threads: the resource is then private to the
  eager kernel that made it, clients built at the same time in several
  threads (actor threads beside the learner) share and then drop that
  kernel, and the surviving handles fail with NotFound ('..._ReverbClient
  ... does not exist'). A unique name avoids both.

  Args:
    server_address: 'host:port' of the Reverb server.
    purpose: a short tag for the resource name, e.g. 'priority_updater'.
  """
  return reverb.TFClient(
      server_address,
      shared_name=f'tfa_explore_{purpose}_{uuid.uuid4().hex}')


# Next to a replay checkpoint directory: checkpoints that did not load, and
# hard links to the two newest complete ones (Reverb deletes all but its
# newest at every save, so without them a damaged newest leaves nothing).
DAMAGED_SUFFIX = '_damaged'
KEPT_SUFFIX = '_kept'
NUM_KEPT = 2


def complete_checkpoints(checkpoint_dir: str) -> List[str]:
  """Reverb's complete checkpoints under `checkpoint_dir` (DONE), oldest
  first (Reverb names them by time)."""
  return sorted(os.path.dirname(path) for path in
                glob.glob(os.path.join(checkpoint_dir, '*', 'DONE')))


class CheckpointKeeper:
  """Keeps the replay checkpoint before the newest, which Reverb deletes.

  Reverb writes every checkpoint into a new directory, marks it complete
  with `DONE`, then deletes the older ones. The keeper runs beside the
  server (it sees the checkpoints wherever the learner that asks for them
  runs) and hard-links the files of every complete checkpoint into
  `<checkpoint_dir>_kept/<name>`, keeping the `NUM_KEPT` newest: no copy
  (unless the filesystem has no hard links), and Reverb never rewrites a
  file it wrote. `start_server` falls back to them when the checkpoint
  directory has nothing that loads.
  """

  def __init__(self, checkpoint_dir: str, poll_seconds: float = 1.0):
    self._checkpoint_dir = checkpoint_dir
    self._kept_dir = checkpoint_dir + KEPT_SUFFIX
    self._poll_seconds = poll_seconds

  def start(self) -> 'CheckpointKeeper':
    """Keeps what is there, then polls for as long as the process runs."""
    self.keep()
    threading.Thread(target=self._run, daemon=True,
                     name='replay_checkpoint_keeper').start()
    return self

  def _run(self) -> None:
    warned = set()
    while True:
      time.sleep(self._poll_seconds)
      try:
        self.keep()
      except OSError as e:  # e.g. Reverb deleted one while it was linked
        if str(e) not in warned:  # once each, not every second
          warned.add(str(e))
          logging.warning('Replay checkpoint keeper: %s', e)

  def keep(self) -> None:
    """Links new complete checkpoints; drops all but the newest kept."""
    for path in complete_checkpoints(self._checkpoint_dir):
      kept = os.path.join(self._kept_dir, os.path.basename(path))
      if os.path.exists(os.path.join(kept, 'DONE')):
        continue
      partial = kept + '.partial'
      shutil.rmtree(partial, ignore_errors=True)
      os.makedirs(partial)
      for name in os.listdir(path):
        try:
          os.link(os.path.join(path, name), os.path.join(partial, name))
        except OSError:  # a filesystem without hard links: a copy
          shutil.copy2(os.path.join(path, name), os.path.join(partial, name))
      os.replace(partial, kept)
    for path in complete_checkpoints(self._kept_dir)[:-NUM_KEPT]:
      shutil.rmtree(path, ignore_errors=True)


def _move_aside(path: str, damaged_dir: str) -> str:
  aside = os.path.join(damaged_dir, os.path.basename(path))
  os.makedirs(damaged_dir, exist_ok=True)
  shutil.rmtree(aside, ignore_errors=True)
  os.replace(path, aside)
  return aside


def start_server(make_tables: Callable[[], Sequence[reverb.Table]],
                 port: Optional[int],
                 checkpoint_dir: Optional[str]
                 ) -> Tuple[reverb.Server, Optional[str]]:
  """A Reverb server restoring the newest checkpoint that loads; with the
  checkpoint it restored (None: none).

  The newest complete checkpoint in `checkpoint_dir` is tried first, then
  the ones `CheckpointKeeper` kept. One that does not load (a damaged
  `tables.tfrecord` or `chunks.tfrecord`: Reverb raises "corrupted record
  at 0") is moved to `<checkpoint_dir>_damaged/` with a WARNING naming it
  and what the server starts from instead: the previous checkpoint, else
  empty tables, which the actors refill. It never refuses to start for a
  damaged checkpoint. `make_tables` builds the tables for each attempt (a
  failed server may keep the ones it was given). With `checkpoint_dir`, a
  `CheckpointKeeper` runs beside the server for as long as the process.

  Returns:
    (server, the checkpoint directory it restored: under `checkpoint_dir`
    or, after a fallback, under `<checkpoint_dir>_kept/`; None if none).
  """
  if checkpoint_dir is None:
    return _announced(reverb.Server(make_tables(), port=port)), None
  damaged_dir = checkpoint_dir + DAMAGED_SUFFIX
  kept_dir = checkpoint_dir + KEPT_SUFFIX
  while True:
    newest = complete_checkpoints(checkpoint_dir)
    kept = complete_checkpoints(kept_dir)
    # Reverb reads `checkpoint_dir` first, the fallback only if it is empty.
    fallback = kept[-1] if kept and not newest else None
    attempt = newest[-1] if newest else fallback
    checkpointer = reverb.checkpointers.DefaultCheckpointer(
        checkpoint_dir, fallback_checkpoint_path=fallback)
    try:
      server = reverb.Server(make_tables(), port=port,
                             checkpointer=checkpointer)
    except RuntimeError as e:
      if attempt is None:
        raise
      aside = _move_aside(attempt, damaged_dir)
      # A kept link of the same checkpoint shares its damaged files.
      shutil.rmtree(os.path.join(kept_dir, os.path.basename(attempt)),
                    ignore_errors=True)
      remaining = (complete_checkpoints(checkpoint_dir) +
                   complete_checkpoints(kept_dir))
      then = (f'the previous checkpoint, {remaining[-1]}' if remaining else
              'empty tables (every item and the rate limiters\' counts '
              'are lost; the actors refill them)')
      logging.warning(
          'Replay checkpoint %s does not load (%s); moved to %s. The replay '
          'server starts from %s.', attempt, str(e).strip().splitlines()[0],
          aside, then)
      continue
    _start_keeper(checkpoint_dir)
    return _announced(server), attempt


def _announced(server: reverb.Server) -> reverb.Server:
  """Says once where the server listens: Reverb binds every interface and
  has no authentication, and the stack offers no narrower bind."""
  logging.info(
      'Replay server listening on port %d of every network interface, '
      'without authentication: whoever reaches the port can read and '
      'write the replay and the weights actors run (docs/distributed.md, '
      '"Who can reach the replay server").', server.port)
  return server


_KEEPERS: Dict[str, CheckpointKeeper] = {}
_KEEPERS_LOCK = threading.Lock()


def _start_keeper(checkpoint_dir: str) -> None:
  """One keeper per directory and process (a restarted server reuses it)."""
  key = os.path.abspath(checkpoint_dir)
  with _KEEPERS_LOCK:
    if key not in _KEEPERS:
      _KEEPERS[key] = CheckpointKeeper(checkpoint_dir).start()


def insert_whole(writer, table: str, step) -> None:
  """Appends `step` (a nest) to a Reverb `TrajectoryWriter` and inserts it
  alone, as one item of `table` with priority 1: an actor's report, an
  on-policy actor's whole rollout."""
  writer.append(step)
  writer.create_item(table, 1.0, tf.nest.map_structure(
      lambda column: column[-1], writer.history))


def table_sizes(client: reverb.Client) -> Dict[str, int]:
  """{table name: items in it} of `client`'s server.

  `Client.server_info` decodes every table's signature into specs, some
  milliseconds of Python per call; a learner that polls a queue every few
  steps needs only the sizes, which the serialized `TableInfo`s hold.
  """
  # Reverb 0.14 has no public call for the sizes alone.
  infos = client._client.ServerInfo(0)  # pylint: disable=protected-access
  sizes = {}
  for info in infos:
    proto = schema_pb2.TableInfo.FromString(info)
    sizes[proto.name] = proto.current_size
  return sizes


def sequence_signature(collect_data_spec, sequence_length):
  """The table signature of `[sequence_length]` sequences of trajectories."""
  return tensor_spec.add_outer_dim(
      tensor_spec.from_spec(collect_data_spec), sequence_length)


def check_signature(signature, collect_data_spec, sequence_length,
                    table_name='table'):
  """Raises ValueError naming the first spec that does not match.

  Args:
    signature: the table's signature (`reverb.Client.server_info()[name]
      .signature`), or None for a table without one.
    collect_data_spec: the agent's `collect_data_spec`.
    sequence_length: the agent's `SequenceConfig.sequence_length`.
    table_name: for the message.
  """
  expected = sequence_signature(collect_data_spec, sequence_length)
  if signature is None:
    raise ValueError(
        f'Reverb table {table_name!r} has no signature; create it with '
        'make_prioritized_table so that the agent\'s specs are checked.')
  expected_paths = dict(nest_utils.flatten_with_joined_paths(expected))
  actual_paths = dict(nest_utils.flatten_with_joined_paths(signature))
  missing = sorted(set(expected_paths) - set(actual_paths))
  extra = sorted(set(actual_paths) - set(expected_paths))
  if missing or extra:
    raise ValueError(
        f'Reverb table {table_name!r} signature does not match the agent\'s '
        f'collect_data_spec: missing specs {missing}, unexpected specs '
        f'{extra}.')
  for path, expected_spec in expected_paths.items():
    actual_spec = actual_paths[path]
    if (tf.TensorShape(actual_spec.shape) != expected_spec.shape or
        tf.as_dtype(actual_spec.dtype) != expected_spec.dtype):
      raise ValueError(
          f'Reverb table {table_name!r} spec {path!r} is '
          f'{actual_spec.dtype.name}{list(actual_spec.shape)} but the agent '
          f'needs {expected_spec.dtype.name}{list(expected_spec.shape)} '
          f'([sequence_length={sequence_length}] + collect_data_spec).')


def check_sequence_tables(server_info, table_names, collect_data_spec,
                          sequence_length, missing_hint=None):
  """Raises ValueError unless each table exists with the agent's signature.

  Args:
    server_info: `reverb.Client.server_info()`.
    table_names: the tables to check.
    collect_data_spec, sequence_length: as for `check_signature`.
    missing_hint: the message's end for a missing table (what to do);
      None: the tables the server has.
  """
  if missing_hint is None:
    missing_hint = f'the server has tables {sorted(server_info)}.'
  for name in table_names:
    if name not in server_info:
      raise ValueError(
          f'Reverb server has no table {name!r}; {missing_hint}')
    check_signature(server_info[name].signature, collect_data_spec,
                    sequence_length, table_name=name)


def default_error_buffer(min_size_to_sample, samples_per_insert,
                         tolerance=0.1, min_slack_inserts=100):
  """Slack of the rate limiter.

  Reverb needs at least 2 * max(1, samples_per_insert). Acme allows
  `tolerance` of the samples the first `min_size_to_sample` inserts are
  worth; with our small `min_size_to_sample` that is a few batches, less
  than the learner's prefetch and a batched actor's burst of items, and
  actors and learner then wait on each other step by step. So the slack
  is at least `min_slack_inserts` inserts' worth of samples, capped at
  `min_size_to_sample` inserts so tiny test tables stay tight.
  """
  minimum = 2.0 * max(1.0, samples_per_insert)
  floor = min(min_slack_inserts, min_size_to_sample) * samples_per_insert
  return max(minimum, tolerance * min_size_to_sample * samples_per_insert,
             floor)


def make_prioritized_table(name,
                           max_size,
                           collect_data_spec,
                           sequence_length,
                           samples_per_insert,
                           min_size_to_sample,
                           priority_exponent=0.9,
                           error_buffer=None):
  """A prioritized, FIFO-evicting Reverb table of R2D2 sequences.

  Args:
    name: table name.
    max_size: capacity in sequences (paper: 4M observations, i.e. ~100k
      sequences at a replay period of 40).
    collect_data_spec: the agent's `collect_data_spec`.
    sequence_length: `SequenceConfig.sequence_length`.
    samples_per_insert: sequences sampled per sequence inserted (the replay
      ratio of the rate limiter).
    min_size_to_sample: sequences in the table before sampling starts.
    priority_exponent: alpha of the prioritized selector (paper: 0.9).
    error_buffer: rate-limiter slack; None for `default_error_buffer`.

  Returns:
    `reverb.Table`.
  """
  if error_buffer is None:
    error_buffer = default_error_buffer(min_size_to_sample,
                                        samples_per_insert)
  return reverb.Table(
      name=name,
      sampler=reverb.selectors.Prioritized(priority_exponent),
      remover=reverb.selectors.Fifo(),
      max_size=max_size,
      rate_limiter=reverb.rate_limiters.SampleToInsertRatio(
          samples_per_insert=samples_per_insert,
          min_size_to_sample=min_size_to_sample,
          error_buffer=error_buffer),
      signature=sequence_signature(collect_data_spec, sequence_length))
