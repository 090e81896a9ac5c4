"""The intrinsic-reward seam: a count-based bonus plugs into both families.

`CountBonus` is a test double written only against
`intrinsic.IntrinsicReward`: r_i = 1 / sqrt(n(o')) with n the visit count
of the next observation (hashed into a fixed table), counted when the agent
advances the statistics. RND-PPO holds it as its intrinsic reward and R2D2
through `IntrinsicQBonus`, neither agent changed: the rewards the agents
learn from are the double's, and each calls every member of the interface.
"""

import numpy as np
import tensorflow as tf
from tf_agents.drivers import dynamic_step_driver
from tf_agents.environments import batched_py_environment
from tf_agents.environments import tf_py_environment
from tf_agents.networks import actor_distribution_network
from tf_agents.replay_buffers import tf_uniform_replay_buffer
from tf_agents.train.utils import spec_utils

from tfa_explore import agents
from tfa_explore import networks
from tfa_explore.agents import intrinsic
from tfa_explore.agents.intrinsic import maths
from tfa_explore.agents.r2d2_intrinsic import q_bonus
from tfa_explore.agents.rnd_ppo import agent as rnd_ppo_agent
from tfa_explore.testing import fake_envs
from tfa_explore.testing import r2d2 as support

NUM_BUCKETS = 64
F, M, L = 0, 1, 2  # StepType FIRST, MID, LAST


class CountBonus(intrinsic.IntrinsicReward):
  """r_i = 1 / sqrt(n(o')): a visit-count bonus over hashed observations."""

  def __init__(self, coef=1.0, discount=0.9, non_episodic=False):
    super().__init__(name='count_bonus')
    self._stream = intrinsic.IntrinsicStream(coef, discount, non_episodic)
    self.counts = tf.Variable(tf.zeros([NUM_BUCKETS]), trainable=False)
    self.observed = tf.Variable(0, dtype=tf.int64, trainable=False)
    self.train_steps = tf.Variable(0, dtype=tf.int64, trainable=False)
    self.summaries = tf.Variable(0, dtype=tf.int64, trainable=False)

  @property
  def stream(self):
    return self._stream

  def buckets(self, observations):
    keys = maths.observation_keys(tf.cast(observations, tf.float32))
    return tf.math.floormod(keys, NUM_BUCKETS)

  def rewards(self, experience, first=1, update_statistics=False, mask=None):
    buckets = self.buckets(experience.observation[:, first:])
    if update_statistics:
      weights = (tf.ones(tf.shape(buckets)) if mask is None
                 else tf.cast(mask, tf.float32))
      self.counts.scatter_nd_add(tf.reshape(buckets, [-1, 1]),
                                 tf.reshape(weights, [-1]))
    raw = tf.math.rsqrt(tf.maximum(tf.gather(self.counts, buckets), 1.0))
    return intrinsic.IntrinsicRewards(raw=raw, normalized=raw)

  def training_inputs(self, observations):
    return {'observations': tf.cast(observations, tf.float32)}

  def train_step(self, inputs):
    del inputs
    self.train_steps.assign_add(1)
    return intrinsic.IntrinsicLoss(loss=tf.constant(0.0),
                                   update_fraction=tf.constant(0.0))

  def observe(self, observations):
    self.observed.assign_add(
        tf.cast(tf.size(tf.nest.flatten(observations)[0]), tf.int64))

  def write_summaries(self, step, rewards, weights, update_fraction):
    del update_fraction
    self.summaries.assign_add(1)
    tf.summary.scalar(
        'Intrinsic/count_bonus_mean',
        tf.reduce_sum(rewards.normalized * weights) /
        tf.maximum(tf.reduce_sum(weights), 1.0), step=step)


class RndPPOHoldsACountBonusTest(support.TestCase):

  def test_its_rewards_are_the_ones_the_agent_learns_from(self):
    envs = [fake_envs.load_counting(seed=i, episode_length=4)
            for i in range(2)]
    env = tf_py_environment.TFPyEnvironment(
        batched_py_environment.BatchedPyEnvironment(envs,
                                                    multithreading=False))
    observation_spec, action_spec, time_step_spec = (
        spec_utils.get_tensor_specs(env))
    bonus = CountBonus(coef=1.0, discount=0.9, non_episodic=True)
    agent = agents.RndPPOAgent(
        time_step_spec, action_spec,
        optimizer=tf.keras.optimizers.Adam(1e-3),
        actor_net=actor_distribution_network.ActorDistributionNetwork(
            observation_spec, action_spec, fc_layer_params=(8,)),
        value_net=networks.DualValueNetwork(observation_spec,
                                            fc_layer_params=(8,)),
        intrinsic_reward=bonus, num_epochs=1, num_minibatches=1,
        train_step_counter=tf.Variable(0, dtype=tf.int64))
    agent.initialize()
    self.assertIs(agent.intrinsic_reward, bonus)
    buffer = tf_uniform_replay_buffer.TFUniformReplayBuffer(
        agent.collect_data_spec, batch_size=2, max_length=6)
    dynamic_step_driver.DynamicStepDriver(
        env, agent.collect_policy, observers=[buffer.add_batch],
        num_steps=12).run()
    experience = buffer.gather_all()

    with tf.summary.create_file_writer(self.get_temp_dir()).as_default():
      agent.train(experience)
    # The batch's next observations o_1..o_5 were counted, once each.
    buckets = bonus.buckets(experience.observation[:, 1:]).numpy()
    expected = np.bincount(buckets.ravel(), minlength=NUM_BUCKETS)
    self.assertAllEqual(bonus.counts.numpy(), expected)
    # Every interface member was called by the agent.
    self.assertEqual(int(bonus.observed), 2 * 6)
    self.assertEqual(int(bonus.train_steps), 1)
    self.assertEqual(int(bonus.summaries), 1)

    # The intrinsic rewards in the agent's info are 1/sqrt(n) of each next
    # observation, read after the update that counted them.
    processed = agent._preprocess(  # pylint: disable=protected-access
        experience)
    paid = processed.policy_info[rnd_ppo_agent.INTRINSIC_REWARD][:, :-1]
    counts = bonus.counts.numpy()[buckets]
    self.assertAllClose(paid, 1.0 / np.sqrt(counts))


class R2D2HoldsACountBonusTest(support.TestCase):

  def test_its_rewards_are_the_ones_q_i_learns_from(self):
    bonus = q_bonus.IntrinsicQBonus(CountBonus(coef=2.0, discount=0.8))
    agent = support.make_agent(exploration=bonus)
    # burn-in 2, trace 4: steps 0-4 one episode (LAST at 4), 5-6 padding.
    sequences = support.random_sequences(agent, [[M, M, M, M, L, M, M]] * 2,
                                         seed=3)
    with tf.summary.create_file_writer(self.get_temp_dir()).as_default():
      loss_info = agent.train(sequences)
    self.assertTrue(np.isfinite(loss_info.loss.numpy()))
    self.assertGreater(float(loss_info.extra.exploration_loss), 0.0)
    count_bonus = bonus.reward
    # The trace transitions 2->3 and 3->4 of both rows were counted.
    buckets = count_bonus.buckets(sequences.observation[:, 3:5]).numpy()
    expected = np.bincount(buckets.ravel(), minlength=NUM_BUCKETS)
    self.assertAllEqual(count_bonus.counts.numpy(), expected)
    self.assertEqual(int(count_bonus.observed), 2 * 5)  # real steps 0-4
    self.assertEqual(int(count_bonus.train_steps), 1)
    self.assertEqual(int(count_bonus.summaries), 1)

    rewards = bonus.intrinsic_rewards(agent, sequences).numpy()
    expected_rewards = np.zeros_like(rewards)
    expected_rewards[:, 2:4] = 1.0 / np.sqrt(
        count_bonus.counts.numpy()[buckets])
    self.assertAllClose(rewards, expected_rewards)


if __name__ == '__main__':
  tf.test.main()
