"""Writes the learner's new sequence priorities back to Reverb by key."""

import tensorflow as tf

from tfa_explore.agents.r2d2 import inputs as r2d2_inputs
from tfa_explore.replay import tables


class PriorityUpdater:
  """`after_train_strategy_step_fn` of the stock TF-Agents `Learner`.

  The `Learner` calls it after every train step with
  `((experience, sample_info), loss_info)`; it sends
  `loss_info.extra.priorities` (`[B]`) for `sample_info.key` (`[B]`) as one
  `update_priorities` op, so it also runs inside the learner's
  `tf.function`. Keys of items evicted meanwhile are ignored by Reverb.
  """

  def __init__(self, server_address, table_name):
    """Creates the updater.

    Args:
      server_address: 'host:port' of the Reverb server (e.g.
        `ReverbReplayBuffer.tf_client.server_address`).
      table_name: the prioritized table.
    """
    # Our own client (see `tables.tf_client`), not the replay buffer's.
    self._tf_client = tables.tf_client(server_address, 'priority_updater')
    self._table_name = table_name

  def __call__(self, experience_and_sample_info, loss_info):
    _, sample_info = experience_and_sample_info
    if sample_info is None:
      raise ValueError(
          'PriorityUpdater needs the Reverb SampleInfo of the batch; the '
          'experience dataset yielded none.')
    keys = r2d2_inputs.per_sequence_sample_info(sample_info).key
    priorities = tf.cast(
        tf.reshape(loss_info.extra.priorities, [-1]), tf.float64)
    return self._tf_client.update_priorities(self._table_name, keys,
                                             priorities)
