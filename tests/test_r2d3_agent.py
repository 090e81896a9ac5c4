"""R2D3Agent: loss terms, the is_demo flag, summaries, pre-training."""

import glob
import os

import numpy as np
import tensorflow as tf
from tf_agents.specs import tensor_spec

from tfa_explore.agents.r2d2 import agent as r2d2_agent
from tfa_explore.agents.r2d3 import agent as r2d3_agent
from tfa_explore.networks import recurrent_dueling_q_network as rdqn
from tfa_explore.replay import demonstrations
from tfa_explore.testing import r2d2 as r2d2_support
from tfa_explore.testing import r2d3 as support

F, M, L = 0, 1, 2
# burn-in 2, trace 4 + 1 bootstrap step; no padding.
STEP_TYPES = [[F, M, M, M, M, M, M]] * 4


def _mixed(trajectory, is_demo):
  return r2d3_agent.MixedSequences(trajectory, None,
                                   tf.constant(is_demo, tf.bool))


class R2D3LossTest(support.TestCase):

  def test_margin_term_only_on_demo_sequences(self):
    agent = support.make_agent()
    trajectory = r2d2_support.random_sequences(agent, STEP_TYPES, seed=1)
    agent_only = agent.loss(_mixed(trajectory, [False] * 4)).extra
    all_demo = agent.loss(_mixed(trajectory, [True] * 4)).extra
    half = agent.loss(_mixed(trajectory, [True, False, True, False])).extra
    self.assertEqual(float(agent_only.margin_loss), 0.0)
    self.assertGreater(float(all_demo.margin_loss), 0.0)
    self.assertAllClose(agent_only.demo_fraction, 0.0)
    self.assertAllClose(half.demo_fraction, 0.5)
    # The TD terms do not depend on the flag.
    self.assertAllClose(agent_only.ntd_loss, all_demo.ntd_loss)
    self.assertAllClose(agent_only.td1_loss, all_demo.td1_loss)
    # A plain Trajectory is agent data.
    self.assertEqual(float(agent.loss(trajectory).extra.margin_loss), 0.0)

  def test_total_is_the_weighted_sum(self):
    agent = support.make_agent(ntd_loss_weight=1.0, td1_loss_weight=0.5,
                               margin_loss_weight=2.0, l2_loss_weight=0.1)
    trajectory = r2d2_support.random_sequences(agent, STEP_TYPES, seed=2)
    loss_info = agent.loss(_mixed(trajectory, [True, True, False, False]))
    extra = loss_info.extra
    expected = (extra.ntd_loss + 0.5 * extra.td1_loss +
                2.0 * extra.margin_loss + 0.1 * extra.l2_loss)
    self.assertAllClose(loss_info.loss, expected)
    self.assertAllClose(extra.total_loss, loss_info.loss)
    l2 = sum(0.5 * np.sum(np.square(v.numpy()))
             for v in agent.q_network.trainable_weights)
    self.assertAllClose(extra.l2_loss, l2, rtol=1e-5)

  def test_one_step_td_equals_n_step_td_when_n_is_one(self):
    agent = support.make_agent(n_step=1)
    trajectory = r2d2_support.random_sequences(agent, STEP_TYPES, seed=3)
    extra = agent.loss(_mixed(trajectory, [False] * 4)).extra
    self.assertAllClose(extra.td1_loss, extra.ntd_loss)
    agent5 = support.make_agent(n_step=5)
    extra5 = agent5.loss(_mixed(trajectory, [False] * 4)).extra
    self.assertNotAllClose(extra5.td1_loss, extra5.ntd_loss)

  def test_td_only_r2d3_matches_r2d2(self):
    env = r2d2_support.counting_env()
    time_step_spec = tensor_spec.from_spec(env.time_step_spec())
    action_spec = tensor_spec.from_spec(env.action_spec())
    network = rdqn.RecurrentDuelingQNetwork(
        rdqn.make_input_spec(time_step_spec.observation, action_spec),
        action_spec, torso_fc_layer_params=(8,), lstm_size=8,
        dueling_fc_layer_params=(8,))
    common = dict(sequence_config=support.SMALL_CONFIG, n_step=3,
                  optimizer=tf.keras.optimizers.Adam(1e-3))
    r2d2 = r2d2_agent.R2D2Agent(
        time_step_spec, action_spec, network,
        train_step_counter=tf.Variable(0, dtype=tf.int64), **common)
    r2d3 = r2d3_agent.R2D3Agent(
        time_step_spec, action_spec, network, td1_loss_weight=0.0,
        margin_loss_weight=0.0, l2_loss_weight=0.0,
        train_step_counter=tf.Variable(0, dtype=tf.int64), **common)
    r2d2.initialize()
    r2d3.initialize()
    trajectory = r2d2_support.random_sequences(
        r2d2, [[F, F, F, M, M, M, L], [F, M, M, M, M, M, M]], seed=4)
    expected = r2d2.loss(trajectory)
    actual = r2d3.loss(_mixed(trajectory, [True, False]))
    self.assertAllClose(actual.loss, expected.loss)
    self.assertAllClose(actual.extra.priorities, expected.extra.priorities)

  def test_negative_weight_is_rejected(self):
    with self.assertRaisesRegex(ValueError, 'margin_loss_weight'):
      support.make_agent(margin_loss_weight=-1.0)


class R2D3TrainTest(support.TestCase):

  def test_summaries_name_each_term(self):
    agent = support.make_agent()
    trajectory = r2d2_support.random_sequences(agent, STEP_TYPES, seed=5)
    log_dir = self.get_temp_dir()
    writer = tf.summary.create_file_writer(log_dir)
    with writer.as_default():
      agent.train(_mixed(trajectory, [True, False, False, False]))
    writer.flush()
    tags = set()
    for path in glob.glob(os.path.join(log_dir, 'events.*')):
      for event in tf.compat.v1.train.summary_iterator(path):
        for value in event.summary.value:
          tags.add(value.tag)
    for tag in ('Losses/ntd', 'Losses/td1', 'Losses/margin', 'Losses/l2',
                'Losses/total', 'Replay/demo_fraction', 'Q/demo_action',
                'Q/other_actions', 'Losses/td_loss'):
      self.assertIn(tag, tags)

  def test_jit_compiled_training_matches_the_plain_one(self):
    plain, compiled = [support.make_agent(jit_compile=jit_compile)
                       for jit_compile in (False, True)]
    for network in ('q_network', 'target_q_network'):
      for a, b in zip(getattr(plain, network).variables,
                      getattr(compiled, network).variables):
        b.assign(a)
    trajectory = r2d2_support.random_sequences(plain, STEP_TYPES, seed=22)
    batch = _mixed(trajectory, [True, False, True, False])
    for _ in range(2):
      plain_info = plain.train(batch)
      compiled_info = compiled.train(batch)
      self.assertAllClose(plain_info.loss, compiled_info.loss, rtol=1e-5)
      self.assertAllClose(plain_info.extra.margin_loss,
                          compiled_info.extra.margin_loss, rtol=1e-5)
    for a, b in zip(plain.q_network.variables, compiled.q_network.variables):
      self.assertAllClose(a, b, rtol=1e-5, atol=1e-6)

  def test_pretrain_without_environment(self):
    # Demonstrations come from a file; the agent is built from its specs.
    episodes, env = support.counting_episodes(num_episodes=4,
                                              actions=(1,))
    path = os.path.join(self.get_temp_dir(), 'demos.demo')
    demonstrations.write_demonstrations(
        path, env.env_id, env.time_step_spec(), env.action_spec(), episodes)
    env.close()
    header, _ = demonstrations.read_header(path)
    demos = demonstrations.read_demonstrations(path)
    agent = support.make_agent_from_specs(demos.time_step_spec,
                                          demos.action_spec)
    self.assertEqual(header['num_episodes'], 4)
    sequences = demonstrations.episode_sequences(demos.episodes, agent)
    dataset = demonstrations.sequences_dataset(sequences).repeat().batch(8)
    first = agent.loss(_mixed(next(iter(dataset)), [True] * 8)).extra
    loss_info = r2d3_agent.pretrain(agent, dataset, num_steps=40)
    self.assertEqual(int(agent.train_step_counter), 40)
    self.assertAllClose(loss_info.extra.demo_fraction, 1.0)
    # The expert always plays 1; after pre-training Q(s, 1) leads.
    last = agent.loss(_mixed(next(iter(dataset)), [True] * 8)).extra
    self.assertLess(float(last.margin_loss), float(first.margin_loss))
    self.assertGreater(float(last.q_demo_action),
                       float(last.q_other_actions))


if __name__ == '__main__':
  tf.test.main()
