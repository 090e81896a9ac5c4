"""The learner's weights and counters in a one-item Reverb table.

The same protocol as TF-Agents' `ReverbVariableContainer` (one item,
replaced at every push; a pull blocks until the first push), on a Reverb
client of its own (`replay.tables.tf_client`). A family declares what it
publishes as a `tf.Module` with a `nest()` of variables (R2D2's and the
on-policy learner's `SharedState`).
"""

from typing import Any, Dict

import reverb
import tensorflow as tf
from tf_agents.utils import common

from tfa_explore.replay import tables

VARIABLES_TABLE = 'variables'


def signature(shared_state) -> Dict[str, Any]:
  """The table signature of `shared_state.nest()`."""
  return tf.nest.map_structure(lambda v: tf.TensorSpec(v.shape, v.dtype),
                               shared_state.nest())


def variables_table(shared_state) -> reverb.Table:
  """The server's table of the learner's latest `shared_state`."""
  return reverb.Table(
      name=VARIABLES_TABLE,
      sampler=reverb.selectors.Uniform(),
      remover=reverb.selectors.Fifo(),
      rate_limiter=reverb.rate_limiters.MinSize(1),
      max_size=1,
      max_times_sampled=0,
      signature=signature(shared_state))


def check_table(info, name: str, expected, what: str) -> None:
  """Raises ValueError unless the server's table `name` has the signature
  `expected` (a nest of `tf.TensorSpec`s; `what` it holds, for the
  message)."""
  if name not in info:
    raise ValueError(
        f'Reverb server has no table {name!r}; it must be started by '
        'train/replay_server.py with the same gin file.')
  expected = tf.nest.flatten(expected)
  actual = tf.nest.flatten(info[name].signature or ())
  if len(actual) != len(expected) or any(
      tf.TensorShape(a.shape) != e.shape or tf.as_dtype(a.dtype) != e.dtype
      for a, e in zip(actual, expected)):
    raise ValueError(
        f'Reverb table {name!r} holds {what} of another agent or env '
        f'({actual}); this run needs {expected}. Start the replay server '
        'with the same gin file.')


def check_variables_table(info, shared_state) -> None:
  """Raises ValueError unless the server's table holds `shared_state`."""
  check_table(info, VARIABLES_TABLE, signature(shared_state), 'weights')


def num_pushes(client: reverb.Client) -> int:
  """How many pushes the server's table took: a cheap test for news.

  Reads the server's table info (no weights); a restarted server counts
  from 0 again, so a caller compares for change, not for growth.
  """
  info = client.server_info()[VARIABLES_TABLE]
  return int(info.rate_limiter_info.insert_stats.completed)


class SharedVariables:
  """A learner's `SharedState` in `VARIABLES_TABLE`: push and pull."""

  def __init__(self, server_address: str, shared_state):
    self._client = tables.tf_client(server_address, 'variables')
    self._variables = shared_state.nest()
    self._dtypes = [v.dtype for v in tf.nest.flatten(self._variables)]

  def push(self) -> None:
    self._client.insert(
        data=[tf.convert_to_tensor(v)
              for v in tf.nest.flatten(self._variables)],
        tables=tf.constant([VARIABLES_TABLE]),
        priorities=tf.constant([1.0], dtype=tf.float64))

  def pull(self) -> None:
    """Assigns the latest pushed values (blocks until there are some)."""
    sample = self._client.sample(VARIABLES_TABLE, data_dtypes=self._dtypes)
    self._assign(sample.data)

  @common.function(autograph=False)
  def _assign(self, values):
    for variable, value in zip(tf.nest.flatten(self._variables), values):
      variable.assign(value)
