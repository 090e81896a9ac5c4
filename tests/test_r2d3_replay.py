"""R2D3 two-table replay: realised demo ratio, priorities per table."""

import numpy as np
import portpicker
import reverb
import tensorflow as tf

from tfa_explore.agents.r2d3 import agent as r2d3_agent
from tfa_explore.replay import demonstrations
from tfa_explore.replay import mixed_dataset
from tfa_explore.replay import sequence_writer
from tfa_explore.replay import success_copies
from tfa_explore.replay import tables
from tfa_explore.testing import r2d3 as support

AGENT, DEMO, SUCCESS = 'agent', 'demo', 'success'


def _observe(observer, episodes, agent):
  for episode in episodes:
    for trajectory in demonstrations.episode_trajectories(
        episode, agent.collect_data_spec):
      observer(trajectory)
  observer.flush()


def _table_items(client, table):
  """{key: (priority, observations)} of every item (uniform tables only)."""
  info = client.server_info()[table]
  size = info.current_size
  items = {}
  for sample in client.sample(table, num_samples=100 * size + 100,
                              emit_timesteps=False):
    data = tf.nest.pack_sequence_as(info.signature, sample.data)
    items[int(sample.info.key)] = (
        float(sample.info.priority),
        tuple(np.asarray(data.observation)[:, 0].tolist()))
    if len(items) == size:
      break
  return items


class _AppendCountingClient:
  """A `reverb.Client` whose trajectory writers count their appends."""

  def __init__(self, client):
    self._client = client
    self.appends = []  # one count per writer, in creation order

  def __getattr__(self, name):
    return getattr(self._client, name)

  def trajectory_writer(self, **kwargs):
    writer = self._client.trajectory_writer(**kwargs)
    index = len(self.appends)
    self.appends.append(0)
    append = writer.append

    def counting_append(*args, **append_kwargs):
      self.appends[index] += 1
      return append(*args, **append_kwargs)

    writer.append = counting_append
    return writer


class MixedReplayTest(support.TestCase):

  def _server(self, agent, uniform=False, with_successes=False):
    """A server with an agent and a demo table, both filled.

    Agent sequences come from episodes of 3 steps, demonstrations from 4
    and (`with_successes`) the success table's from 5.
    """
    length = agent.sequence_config.sequence_length
    signature = tables.sequence_signature(agent.collect_data_spec, length)

    def table(name):
      if not uniform:
        return mixed_dataset.make_demo_table(name, 1000,
                                             agent.collect_data_spec, length)
      # Uniform sampling so the test can read every item's priority back.
      return reverb.Table(name, reverb.selectors.Uniform(),
                          reverb.selectors.Fifo(), 1000,
                          reverb.rate_limiters.MinSize(1),
                          signature=signature)

    names = [AGENT, DEMO] + ([SUCCESS] if with_successes else [])
    server = reverb.Server([table(name) for name in names],
                           port=portpicker.pick_unused_port())
    self.addCleanup(server.stop)
    address = f'localhost:{server.port}'
    client = reverb.Client(address)
    # Different episode lengths tell the tables' sequences apart.
    agent_episodes, _ = support.counting_episodes(2, episode_length=3)
    demo_episodes, _ = support.counting_episodes(2, episode_length=4)
    demonstrations.write_to_table(agent_episodes, client, AGENT, agent)
    demonstrations.write_to_table(demo_episodes, client, DEMO, agent)
    if with_successes:
      success_episodes, _ = support.counting_episodes(2, episode_length=5)
      demonstrations.write_to_table(success_episodes, client, SUCCESS, agent)
    return address, client

  def test_realised_demo_ratio(self):
    agent = support.make_agent()
    address, _ = self._server(agent)
    dataset = mixed_dataset.mixed_dataset(address, AGENT, DEMO, agent,
                                          batch_size=40, demo_ratio=0.25,
                                          seed=1)
    iterator = iter(dataset)
    flags = []
    for _ in range(100):  # 4000 elements.
      experience, _ = next(iterator)
      self.assertIsInstance(experience, r2d3_agent.MixedSequences)
      # Demo sequences (episodes of 4 steps) reach observation 4 somewhere;
      # agent sequences (3 steps) never do: the flag matches the table.
      has_four = np.any(experience.trajectory.observation[..., 0] == 4,
                        axis=1)
      self.assertAllEqual(has_four, experience.is_demo)
      flags.append(experience.is_demo.numpy())
    demo_count = np.concatenate(flags).sum()
    # Binomial(4000, 0.25): mean 1000, sigma sqrt(4000 * 0.25 * 0.75) = 27.4.
    self.assertBetween(demo_count, 1000 - 3 * 27.4, 1000 + 3 * 27.4)

  def test_priorities_go_back_to_their_own_table(self):
    agent = support.make_agent()
    address, client = self._server(agent, uniform=True)
    dataset = mixed_dataset.mixed_dataset(address, AGENT, DEMO, agent,
                                          batch_size=16, demo_ratio=0.5,
                                          seed=2)
    updater = mixed_dataset.MixedPriorityUpdater(address, AGENT, DEMO)
    experience, sample_info = next(iter(dataset))
    is_demo = experience.is_demo.numpy()
    self.assertTrue(is_demo.any() and not is_demo.all())
    loss_info = agent.loss(experience)
    updater((experience, sample_info), loss_info)
    new = dict(zip(sample_info.key.numpy().tolist(),
                   loss_info.extra.priorities.numpy().tolist()))
    demo_keys = set(sample_info.key.numpy()[is_demo].tolist())
    agent_keys = set(sample_info.key.numpy()[~is_demo].tolist())

    def table_priorities(table):
      size = client.server_info()[table].current_size
      priorities = {}
      for sample in client.sample(table, num_samples=400,
                                  emit_timesteps=False):
        priorities[int(sample.info.key)] = float(sample.info.priority)
        if len(priorities) == size:
          break
      self.assertLen(priorities, size)
      return priorities

    for table, keys in ((DEMO, demo_keys), (AGENT, agent_keys)):
      priorities = table_priorities(table)
      # Keys of the other table are not in this one.
      self.assertTrue(keys <= set(priorities), table)
      for key, priority in priorities.items():
        # Sampled items got their new priority; the others kept 1.0.
        expected = new[key] if key in keys else 1.0
        self.assertAllClose(priority, expected, rtol=1e-5, msg=table)
    self.assertTrue(any(abs(new[k] - 1.0) > 1e-3 for k in demo_keys))

  def test_realised_ratios_with_a_success_table(self):
    agent = support.make_agent()
    address, client = self._server(agent, with_successes=True)
    # All priorities are still 1.0: the keys tell the tables apart.
    keys = {table: set(_table_items(client, table))
            for table in (AGENT, DEMO, SUCCESS)}
    dataset = mixed_dataset.mixed_dataset(
        address, AGENT, DEMO, agent, batch_size=40, demo_ratio=0.5, seed=3,
        success_table=SUCCESS, success_ratio=0.25)
    iterator = iter(dataset)
    counts = np.zeros(3)
    for _ in range(100):  # 4000 elements.
      experience, sample_info = next(iterator)
      tables_of = [[key in keys[table] for table in (AGENT, DEMO, SUCCESS)]
                   for key in sample_info.key.numpy().tolist()]
      counts += np.sum(tables_of, axis=0)
      # Successes are demonstrations for the losses.
      self.assertAllEqual(~np.asarray(tables_of)[:, 0], experience.is_demo)
    self.assertEqual(counts.sum(), 4000)
    # Weights 1 - rho = 0.5, rho (1 - q) = 0.375, rho q = 0.125; 3 sigma
    # of Binomial(4000, p): 95, 92, 63.
    self.assertBetween(counts[0], 2000 - 95, 2000 + 95)
    self.assertBetween(counts[1], 1500 - 92, 1500 + 92)
    self.assertBetween(counts[2], 500 - 63, 500 + 63)

  def test_demo_priorities_reach_the_success_table(self):
    agent = support.make_agent()
    address, client = self._server(agent, uniform=True, with_successes=True)
    dataset = mixed_dataset.mixed_dataset(
        address, AGENT, DEMO, agent, batch_size=32, demo_ratio=0.75, seed=4,
        success_table=SUCCESS, success_ratio=0.5)
    updater = mixed_dataset.MixedPriorityUpdater(address, AGENT,
                                                 [DEMO, SUCCESS])
    experience, sample_info = next(iter(dataset))
    loss_info = agent.loss(experience)
    updater((experience, sample_info), loss_info)
    new = dict(zip(sample_info.key.numpy().tolist(),
                   loss_info.extra.priorities.numpy().tolist()))
    for table in (AGENT, DEMO, SUCCESS):
      items = _table_items(client, table)
      sampled = set(new) & set(items)
      self.assertNotEmpty(sampled, table)
      for key, (priority, _) in items.items():
        expected = new[key] if key in sampled else 1.0
        self.assertAllClose(priority, expected, rtol=1e-5, msg=table)

  def test_pretrain_from_the_demo_table(self):
    agent = support.make_agent()
    address, _ = self._server(agent)
    dataset = mixed_dataset.demo_dataset(address, DEMO, agent, batch_size=8)
    updater = mixed_dataset.MixedPriorityUpdater(address, None, DEMO)
    loss_info = r2d3_agent.pretrain(agent, dataset, num_steps=3,
                                    after_train_step=updater)
    self.assertEqual(int(agent.train_step_counter), 3)
    self.assertAllClose(loss_info.extra.demo_fraction, 1.0)

  def test_bad_ratio_and_missing_table(self):
    agent = support.make_agent()
    address, _ = self._server(agent)
    with self.assertRaisesRegex(ValueError, 'demo_ratio'):
      mixed_dataset.mixed_dataset(address, AGENT, DEMO, agent, 4,
                                  demo_ratio=1.5)
    with self.assertRaisesRegex(ValueError, "no table 'nope'"):
      mixed_dataset.mixed_dataset(address, AGENT, 'nope', agent, 4,
                                  demo_ratio=0.5)


class SuccessCopyTest(support.TestCase):
  """Actors copy episodes reaching `success_min_return` to a second table."""

  def test_only_episodes_reaching_the_return_are_copied(self):
    agent = support.make_agent()
    length = agent.sequence_config.sequence_length
    signature = tables.sequence_signature(agent.collect_data_spec, length)
    server = reverb.Server(
        [reverb.Table(name, reverb.selectors.Uniform(),
                      reverb.selectors.Fifo(), 1000,
                      reverb.rate_limiters.MinSize(1), signature=signature)
         for name in (AGENT, SUCCESS)],
        port=portpicker.pick_unused_port())
    self.addCleanup(server.stop)
    client = reverb.Client(f'localhost:{server.port}')
    copies = success_copies.SuccessCopies(
        client, SUCCESS, agent.sequence_config, min_return=8.0,
        collect_data_spec=agent.collect_data_spec)
    observer = sequence_writer.R2D2SequenceObserver(
        client, AGENT, agent.sequence_config, agent.collect_data_spec,
        default_priority=2.5, listener=copies)
    # Counting episodes return n (n + 1) / 2: 6, 10, 6, 10 (threshold 8).
    short, _ = support.counting_episodes(1, episode_length=3)
    long, _ = support.counting_episodes(1, episode_length=4)
    _observe(observer, short + long + short + long, agent)
    per_long = demonstrations.count_sequences(long, agent)
    per_short = demonstrations.count_sequences(short, agent)
    self.assertEqual(observer.num_items_written, 2 * (per_long + per_short))
    self.assertEqual(copies.num_items_written, 2 * per_long)
    agent_items = _table_items(client, AGENT)
    success_items = _table_items(client, SUCCESS)
    self.assertLen(success_items, 2 * per_long)
    # The copies are the long episodes' sequences, with their priorities.
    long_sequences = sorted(
        item for item in agent_items.values() if max(item[1]) == 4)
    self.assertEqual(sorted(success_items.values()), long_sequences)
    self.assertTrue(all(priority == 2.5
                        for priority, _ in success_items.values()))
    observer.close()

  def test_the_copy_appends_each_step_once(self):
    # Items overlap (stride < sequence length); the copy must still append
    # each stream step once, as the agent table's writer does, not once per
    # item it falls in.
    agent = support.make_agent()
    config = agent.sequence_config
    self.assertLess(config.stride, config.sequence_length)
    server = reverb.Server(
        [mixed_dataset.make_demo_table(name, 100, agent.collect_data_spec,
                                       config.sequence_length)
         for name in (AGENT, SUCCESS)],
        port=portpicker.pick_unused_port())
    self.addCleanup(server.stop)
    client = _AppendCountingClient(reverb.Client(f'localhost:{server.port}'))
    copies = success_copies.SuccessCopies(client, SUCCESS, config,
                                          min_return=0.0)
    observer = sequence_writer.R2D2SequenceObserver(client, AGENT, config,
                                                    listener=copies)
    episodes, _ = support.counting_episodes(2, episode_length=9)
    _observe(observer, episodes, agent)
    agent_appends, success_appends = client.appends
    self.assertGreater(observer.num_items_written, 2 * 2)
    self.assertEqual(copies.num_items_written, observer.num_items_written)
    self.assertEqual(success_appends, agent_appends)
    self.assertEqual(sorted(_table_items(client, SUCCESS).values()),
                     sorted(_table_items(client, AGENT).values()))
    observer.close()

  def test_an_unfinished_episode_is_not_copied(self):
    agent = support.make_agent()
    length = agent.sequence_config.sequence_length
    server = reverb.Server(
        [mixed_dataset.make_demo_table(name, 100, agent.collect_data_spec,
                                       length) for name in (AGENT, SUCCESS)],
        port=portpicker.pick_unused_port())
    self.addCleanup(server.stop)
    client = reverb.Client(f'localhost:{server.port}')
    copies = success_copies.SuccessCopies(
        client, SUCCESS, agent.sequence_config, min_return=0.0)
    observer = sequence_writer.R2D2SequenceObserver(
        client, AGENT, agent.sequence_config, listener=copies)
    episode, _ = support.counting_episodes(1, episode_length=8)
    trajectories = list(demonstrations.episode_trajectories(
        episode[0], agent.collect_data_spec))
    for trajectory in trajectories[:-3]:
      observer(trajectory)
    observer.reset()
    observer.flush()
    self.assertGreater(observer.num_items_written, 0)
    self.assertEqual(copies.num_items_written, 0)
    self.assertEqual(client.server_info()[SUCCESS].current_size, 0)
    observer.close()


if __name__ == '__main__':
  tf.test.main()
