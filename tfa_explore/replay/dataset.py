"""The learner's replay dataset: sequences with their Reverb sample info.

`replay_dataset` takes a TF-Agents `ReverbReplayBuffer` (a user's own
pipeline); `sampled_batches` reads a table directly, as the R2D2 learner
does: one Reverb sample stream, batched, with one map per batch and none
per sequence.
"""

import reverb
import tensorflow as tf

from tfa_explore.agents.r2d2 import inputs as r2d2_inputs
from tfa_explore.replay import tables


def sequence_dataset(server_address, table_name, agent,
                     max_in_flight_samples_per_worker,
                     rate_limiter_timeout_ms=-1):
  """Unbatched `reverb.ReplaySample`s of one table of the agent's sequences.

  Args:
    server_address: 'host:port' of the Reverb server.
    table_name: the table, whose items are the agent's `[T]` sequences.
    agent: the `R2D2Agent` (its specs and sequence config).
    max_in_flight_samples_per_worker: Reverb's sample prefetch; the larger,
      the staler the priorities the samples were drawn with.
    rate_limiter_timeout_ms: -1 waits for ever for the rate limiter.

  Returns:
    `tf.data.Dataset` of `ReplaySample(info, data)`: `[T]` trajectories and
    scalar sample info.
  """
  signature = tables.sequence_signature(agent.collect_data_spec,
                                        agent.sequence_config.sequence_length)
  return reverb.TrajectoryDataset(
      server_address=server_address,
      table=table_name,
      shapes=tf.nest.map_structure(lambda s: s.shape, signature),
      dtypes=tf.nest.map_structure(lambda s: s.dtype, signature),
      max_in_flight_samples_per_worker=max_in_flight_samples_per_worker,
      rate_limiter_timeout_ms=rate_limiter_timeout_ms)


def sampled_batches(server_address, table_name, agent, batch_size,
                    prefetch=2, rate_limiter_timeout_ms=-1):
  """`replay_dataset`'s batches, read from the table in one sample stream.

  Up to two batches in flight from the server, then `prefetch` batches.

  Args:
    server_address: 'host:port' of the Reverb server.
    table_name: a table made by `tables.make_prioritized_table` with the
      agent's specs.
    agent: the `R2D2Agent`.
    batch_size: sequences per batch.
    prefetch: batches to prefetch.
    rate_limiter_timeout_ms: -1 waits for ever for the rate limiter.

  Returns:
    `tf.data.Dataset` of `(PrioritizedSequences(trajectory, sample_info),
    sample_info)`, sample info fields `[B]`.
  """
  dataset = sequence_dataset(server_address, table_name, agent,
                             2 * batch_size, rate_limiter_timeout_ms)

  def with_sample_info(sample):
    return (r2d2_inputs.PrioritizedSequences(sample.data, sample.info),
            sample.info)

  return dataset.batch(batch_size, drop_remainder=True).map(
      with_sample_info).prefetch(prefetch)


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
