"""The learner's replay dataset: sequences with their Reverb sample info."""

import tensorflow as tf

from tfa_explore.agents.r2d2 import inputs as r2d2_inputs
from tfa_explore.replay import tables


def replay_dataset(replay_buffer, agent, batch_size, prefetch=2):
  """`(PrioritizedSequences(trajectory, sample_info), sample_info)` batches.

  The stock `Learner` unpacks each element as `(experience, sample_info)`:
  the agent trains on `experience`, which carries the sampling
  probabilities for the importance weights, and the `PriorityUpdater` gets
  the keys from `sample_info`. Sample info fields are `[B]` (Reverb repeats
  them along the sequence; the first step is kept).

  Args:
    replay_buffer: a `ReverbReplayBuffer` on a table made by
      `tables.make_prioritized_table` with the agent's specs; built with
      `max_cycle_length=1`, each batch comes from one sample stream (its
      default interleaves `batch_size` streams, at more CPU).
    agent: the `R2D2Agent`.
    batch_size: sequences per batch (paper: 64).
    prefetch: batches to prefetch.

  Returns:
    `tf.data.Dataset`.

  Raises:
    ValueError: if the table's signature does not match the agent's specs.
  """
  sequence_length = agent.sequence_config.sequence_length
  info = replay_buffer.get_table_info()
  tables.check_signature(info.signature, agent.collect_data_spec,
                         sequence_length, table_name=info.name)
  dataset = replay_buffer.as_dataset(
      sample_batch_size=batch_size, num_steps=sequence_length)

  def with_sample_info(trajectory, sample_info):
    sample_info = r2d2_inputs.per_sequence_sample_info(sample_info)
    return (r2d2_inputs.PrioritizedSequences(trajectory, sample_info),
            sample_info)

  return dataset.map(with_sample_info).prefetch(prefetch)
