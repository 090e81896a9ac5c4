"""R2D3 two-table replay: realised demo ratio, priorities per table."""

import numpy as np
import portpicker
import reverb
import tensorflow as tf

import test_r2d3_support as support  # pylint: disable=g-bad-import-order

from tfa_explore.agents.r2d3 import agent as r2d3_agent
from tfa_explore.replay import demonstrations
from tfa_explore.replay import mixed_dataset
from tfa_explore.replay import tables

AGENT, DEMO = 'agent', 'demo'


class MixedReplayTest(support._TestCase):

  def _server(self, agent, uniform=False):
    """A server with an agent and a demo table, both filled."""
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

    server = reverb.Server([table(AGENT), table(DEMO)],
                           port=portpicker.pick_unused_port())
    self.addCleanup(server.stop)
    address = f'localhost:{server.port}'
    client = reverb.Client(address)
    # Different episode lengths tell the tables' sequences apart.
    agent_episodes, _ = support.counting_episodes(2, episode_length=3)
    demo_episodes, _ = support.counting_episodes(2, episode_length=4)
    demonstrations.write_to_table(agent_episodes, client, AGENT, agent)
    demonstrations.write_to_table(demo_episodes, client, DEMO, agent)
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


if __name__ == '__main__':
  tf.test.main()
