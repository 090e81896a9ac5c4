"""R2D3 replay: an agent table and a demonstration table, mixed per element.

Paine et al. 2019 (Section 3): the learner samples every element of a
batch from the demonstration buffer with probability rho (the demo ratio)
and from the agent's own buffer otherwise; both buffers are prioritized
independently. Here both are Reverb tables with the agent's sequence
signature on one server:

* `make_demo_table`: prioritized, no eviction in practice (sized for all
  demo sequences), no rate limiting (demos are written once, then only
  sampled);
* `mixed_dataset`: one Reverb dataset per table, each unbatched element
  tagged with `is_demo`, mixed by `tf.data.Dataset.sample_from_datasets`
  (an independent Bernoulli(rho) choice per element), then batched into
  `(MixedSequences(trajectory, sample_info, is_demo), sample_info)`, the
  `(experience, sample_info)` pairs the stock `Learner` expects;
* `MixedPriorityUpdater`: writes each new priority to the table its
  sequence came from (the `is_demo` mask splits the batch).

Optionally (a departure from the paper, off by default) a third table holds
the agent's own successful episodes, written by the actors
(`success_copies`); the learner samples it as part of the
demonstration side, so the large-margin loss also applies to them.

None of these is gin-configurable: the experiment's settings
(`r2d3.DemonstrationReplay`) pass every value, so a binding here could
only be silently overridden.
"""

import reverb
import tensorflow as tf

from tfa_explore.agents.r2d2 import inputs as r2d2_inputs
from tfa_explore.agents.r2d3 import agent as r2d3_agent
from tfa_explore.replay import dataset as replay_dataset
from tfa_explore.replay import tables


def make_demo_table(name, max_size, collect_data_spec, sequence_length,
                    priority_exponent=0.9):
  """A prioritized Reverb table for demonstration sequences.

  Args:
    name: table name.
    max_size: capacity in sequences; make it at least the number of demo
      sequences (FIFO eviction would silently drop demonstrations).
    collect_data_spec: the agent's `collect_data_spec`.
    sequence_length: `SequenceConfig.sequence_length`.
    priority_exponent: alpha of the prioritized selector (R2D2: 0.9).

  Returns:
    `reverb.Table`.
  """
  return reverb.Table(
      name=name,
      sampler=reverb.selectors.Prioritized(priority_exponent),
      remover=reverb.selectors.Fifo(),
      max_size=max_size,
      rate_limiter=reverb.rate_limiters.MinSize(1),
      signature=tables.sequence_signature(collect_data_spec,
                                          sequence_length))


def table_dataset(server_address, table_name, agent, is_demo,
                  max_in_flight_samples_per_worker=4,
                  rate_limiter_timeout_ms=-1):
  """Unbatched `MixedSequences` of one table, all tagged `is_demo`.

  Args:
    server_address: 'host:port' of the Reverb server.
    table_name: the table, whose signature must be the agent's sequences.
    agent: the `R2D3Agent` (specs, sequence config).
    is_demo: the flag of every element.
    max_in_flight_samples_per_worker: Reverb's sample prefetch; small, so
      sampled priorities are not stale for long.
    rate_limiter_timeout_ms: -1 waits forever for the rate limiter.

  Returns:
    `tf.data.Dataset` of `MixedSequences` with `[T]` trajectories and
    scalar sample info.
  """
  dataset = replay_dataset.sequence_dataset(
      server_address, table_name, agent, max_in_flight_samples_per_worker,
      rate_limiter_timeout_ms)
  flag = tf.constant(bool(is_demo))
  return dataset.map(
      lambda sample: r2d3_agent.MixedSequences(sample.data, sample.info, flag))


def _check_tables(server_address, agent, table_names):
  info = reverb.Client(server_address).server_info()
  tables.check_sequence_tables(
      info, table_names, agent.collect_data_spec,
      agent.sequence_config.sequence_length,
      missing_hint=f'{server_address} has tables {sorted(info)}.')


def _batched_pairs(dataset, batch_size, prefetch):
  def with_sample_info(experience):
    sample_info = r2d2_inputs.per_sequence_sample_info(experience.sample_info)
    return experience._replace(sample_info=sample_info), sample_info
  return dataset.batch(batch_size, drop_remainder=True).map(
      with_sample_info).prefetch(prefetch)


def mixed_dataset(server_address, agent_table, demo_table, agent,
                  batch_size, demo_ratio, seed=None, prefetch=2,
                  rate_limiter_timeout_ms=-1, success_table=None,
                  success_ratio=0.0):
  """Batches whose elements come from the demo table with probability rho.

  Args:
    server_address: 'host:port' of the Reverb server holding both tables.
    agent_table, demo_table: table names (both with the agent's signature).
    agent: the `R2D3Agent`.
    batch_size: sequences per batch (R2D2/R2D3: 64).
    demo_ratio: rho in [0, 1]. Paine et al. 2019 tune it per task and find
      small ratios best (1/256 in most tasks); DI-engine's R2D3 uses 1/4.
    seed: seed of the per-element choice.
    prefetch: batches to prefetch.
    rate_limiter_timeout_ms: see `table_dataset`.
    success_table: optional third table of the agent's own successful
      episodes (`experiments.r2d3`, `success_min_return`); its elements
      count as demonstrations (`is_demo`). It must never be empty (the
      learner seeds it with the demonstrations).
    success_ratio: share of the demonstration side (rho) drawn from
      `success_table`: weights 1 - rho, rho (1 - q), rho q.

  Returns:
    `tf.data.Dataset` of `(MixedSequences, sample_info)` with `[B, T]`
    trajectories and `[B]` sample info and `is_demo`.

  Raises:
    ValueError: for rho outside [0, 1], a missing table, or a table whose
      signature does not fit the agent (naming the spec).
  """
  if not 0.0 <= demo_ratio <= 1.0:
    raise ValueError(f'demo_ratio must be in [0, 1], got {demo_ratio}.')
  if not 0.0 <= success_ratio <= 1.0:
    raise ValueError(
        f'success_ratio must be in [0, 1], got {success_ratio}.')
  if success_table is None:
    success_ratio = 0.0
  # (table, is_demo, weight); a table of weight 0 is never opened, so it
  # may be empty (sample_from_datasets would otherwise still read it).
  sources = [(agent_table, False, 1.0 - demo_ratio),
             (demo_table, True, demo_ratio * (1.0 - success_ratio)),
             (success_table, True, demo_ratio * success_ratio)]
  sources = [source for source in sources if source[2] > 0.0]
  _check_tables(server_address, agent, [name for name, _, _ in sources])
  datasets = [
      table_dataset(server_address, name, agent, is_demo,
                    rate_limiter_timeout_ms=rate_limiter_timeout_ms)
      for name, is_demo, _ in sources]
  if len(datasets) == 1:
    mixed = datasets[0]
  else:
    # stop_on_empty_dataset: when the agent table's rate limiter times out
    # (its dataset ends), the mix must end too; by default it would go on
    # with demonstrations alone, silently changing rho.
    mixed = tf.data.Dataset.sample_from_datasets(
        datasets, weights=[weight for _, _, weight in sources], seed=seed,
        stop_on_empty_dataset=True)
  return _batched_pairs(mixed, batch_size, prefetch)


def demo_dataset(server_address, demo_table, agent, batch_size, prefetch=2):
  """Batches from the demonstration table only (for `r2d3.pretrain`)."""
  return mixed_dataset(server_address, agent_table=None,
                       demo_table=demo_table, agent=agent,
                       batch_size=batch_size, demo_ratio=1.0,
                       prefetch=prefetch)


class MixedPriorityUpdater:
  """Writes R2D3 priorities back to the agent or the demo table by key.

  Used like `replay.priority_updater.PriorityUpdater` (the stock
  `Learner`'s `after_train_strategy_step_fn`, or `pretrain`'s
  `after_train_step`), with `(MixedSequences, sample_info)` experience:
  the priorities of `is_demo` elements go to `demo_table`, the rest to
  `agent_table`. `demo_table` may be a list of names (the demonstrations
  and the agent's successes): each gets all `is_demo` priorities and
  Reverb updates the keys it holds (item keys are unique across tables;
  unknown keys are ignored). Runs inside a `tf.function`.
  """

  def __init__(self, server_address, agent_table, demo_table):
    self._tf_client = tables.tf_client(server_address,
                                       'r2d3_priority_updater')
    self._agent_table = agent_table
    self._demo_tables = ([demo_table] if isinstance(demo_table, str)
                         else list(demo_table))

  def __call__(self, experience_and_sample_info, loss_info):
    experience, sample_info = experience_and_sample_info
    if sample_info is None:
      raise ValueError(
          'MixedPriorityUpdater needs the Reverb SampleInfo of the batch; '
          'the dataset yielded none.')
    keys = r2d2_inputs.per_sequence_sample_info(sample_info).key
    priorities = tf.cast(tf.reshape(loss_info.extra.priorities, [-1]),
                         tf.float64)
    is_demo = tf.reshape(tf.cast(experience.is_demo, tf.bool), [-1])
    is_agent = tf.logical_not(is_demo)
    updates = []
    targets = [(table, is_demo) for table in self._demo_tables]
    for table, selected in targets + [(self._agent_table, is_agent)]:
      # A None table (pre-training has no agent table) gets no update.
      if table is not None:
        updates.append(self._tf_client.update_priorities(
            table, tf.boolean_mask(keys, selected),
            tf.boolean_mask(priorities, selected)))
    return tf.group(*updates)
