"""Reverb tables for R2D2 and the check that a table fits an agent.

One item = one sequence of `SequenceConfig.sequence_length` steps. Rate
control is Reverb's `SampleToInsertRatio`: sequences sampled by the learner
per sequence inserted by the actors. The table factories are not
gin-configurable: the experiment's settings (`r2d2.Settings`) pass their
values, so a binding here could only be silently overridden.
"""

import glob
import os
from typing import Callable, Dict, List, Optional, Sequence
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


# Next to a replay checkpoint directory: checkpoints that did not load.
DAMAGED_SUFFIX = '_damaged'


def complete_checkpoints(checkpoint_dir: str) -> List[str]:
  """Reverb's complete checkpoints under `checkpoint_dir` (DONE), oldest
  first (Reverb names them by time)."""
  return sorted(os.path.dirname(path) for path in
                glob.glob(os.path.join(checkpoint_dir, '*', 'DONE')))


def start_server(make_tables: Callable[[], Sequence[reverb.Table]],
                 port: Optional[int],
                 checkpoint_dir: Optional[str]) -> reverb.Server:
  """A Reverb server restoring the newest checkpoint in `checkpoint_dir`.

  A checkpoint that does not load (a damaged `tables.tfrecord` or
  `chunks.tfrecord`: Reverb raises "corrupted record at 0") is moved to
  `<checkpoint_dir>_damaged/` with a WARNING naming it, and the server
  starts from the next older complete one, else with empty tables, which
  the actors refill. Reverb keeps only its newest checkpoint, so usually
  there is no older one. `make_tables` builds the tables for each attempt
  (a failed server may keep the ones it was given).
  """
  while True:
    checkpointer = None
    if checkpoint_dir is not None:
      checkpointer = reverb.checkpointers.DefaultCheckpointer(checkpoint_dir)
    try:
      return reverb.Server(make_tables(), port=port,
                           checkpointer=checkpointer)
    except RuntimeError as e:
      candidates = (complete_checkpoints(checkpoint_dir)
                    if checkpoint_dir is not None else [])
      if not candidates:
        raise
      damaged = candidates[-1]
      aside = os.path.join(checkpoint_dir + DAMAGED_SUFFIX,
                           os.path.basename(damaged))
      os.makedirs(os.path.dirname(aside), exist_ok=True)
      os.replace(damaged, aside)
      older = ('the next older one' if len(candidates) > 1
               else 'empty tables, which the actors refill')
      logging.warning(
          'Replay checkpoint %s does not load (%s); moved to %s. The replay '
          'server starts from %s.', damaged, str(e).strip().splitlines()[0],
          aside, older)


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
                          sequence_length, missing_hint):
  """Raises ValueError unless each table exists with the agent's signature.

  Args:
    server_info: `reverb.Client.server_info()`.
    table_names: the tables to check.
    collect_data_spec, sequence_length: as for `check_signature`.
    missing_hint: the message's end for a missing table (what to do).
  """
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
