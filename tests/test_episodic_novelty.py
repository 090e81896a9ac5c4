"""NGU's episodic novelty in R2D2: the memory, the policy's record, r_i."""

import os

import numpy as np
import tensorflow as tf
from tf_agents.trajectories import time_step as ts

from tfa_explore.agents.intrinsic import maths
from tfa_explore.agents.r2d2 import losses
from tfa_explore.agents.r2d2 import policy as r2d2_policy
from tfa_explore.replay import demonstrations
from tfa_explore.testing import r2d2 as support
from tfa_explore.testing import r2d3 as r2d3_support

F, M, L = 0, 1, 2  # StepType FIRST, MID, LAST
STEP_TYPES = [[M, M, M, M, L, M, M]] * 2  # as tests/test_r2d2_intrinsic.py


def _empty_memory(batch_size, capacity):
  return {'keys': tf.zeros([batch_size, capacity], tf.int64),
          'counts': tf.zeros([batch_size, capacity], tf.int32),
          'size': tf.zeros([batch_size], tf.int32)}


def _episodic_component(**kwargs):
  kwargs.setdefault('episodic_memory_size', 8)
  return support.rnd_component(coef=0.5, **kwargs)


class EpisodicVisitCountsTest(support.TestCase):

  def test_counts_visits_per_episode_and_env(self):
    # Env 0: a b a a, then a new episode starting with a. Env 1: c c d c c.
    keys = [[1, 3], [2, 3], [1, 4], [1, 3], [1, 3]]
    firsts = [[True, True], [False, False], [False, False], [False, False],
              [True, False]]
    memory = _empty_memory(2, 4)
    counts = []
    for key, first in zip(keys, firsts):
      visits, memory = maths.episodic_visit_counts(
          tf.constant(key, tf.int64), tf.constant(first), memory)
      counts.append(visits.numpy().tolist())
    self.assertEqual(counts, [[1, 1], [1, 2], [2, 1], [3, 3], [1, 4]])

  def test_a_full_memory_counts_new_keys_as_first_visits(self):
    memory = _empty_memory(1, 2)
    counts = []
    for key in (5, 6, 7, 7, 5):
      visits, memory = maths.episodic_visit_counts(
          tf.constant([key], tf.int64), tf.constant([False]), memory)
      counts.append(int(visits[0]))
    # 7 finds no slot: a first visit each time; 5 is held.
    self.assertEqual(counts, [1, 1, 1, 1, 2])

  def test_ngu_modulator_is_clipped_to_one_and_l(self):
    errors = tf.constant([0.0, 1.0, 2.0, 100.0])
    self.assertAllClose(maths.ngu_modulator(errors, 1.0, 0.5, 5.0),
                        [1.0, 1.0, 3.0, 5.0])


class PolicyRecordTest(support.TestCase):

  def test_exploring_policy_records_one_over_root_visits(self):
    agent = support.make_agent(intrinsic_reward=_episodic_component())
    policy = agent.collect_policy
    self.assertIn(r2d2_policy.EPISODIC_NOVELTY,
                  agent.collect_data_spec.policy_info)
    self.assertNotIn(r2d2_policy.EPISODIC_NOVELTY, agent.policy.info_spec)
    # Counting observations: env 0 sees 0 1 0 0, env 1 a new episode at 2.
    observations = [[0.0, 5.0], [1.0, 5.0], [0.0, 5.0], [0.0, 5.0]]
    step_types = [[F, F], [M, M], [M, F], [M, M]]
    state = policy.get_initial_state(2)
    novelty = []
    for observation, step_type in zip(observations, step_types):
      time_step = ts.TimeStep(
          step_type=tf.constant(step_type, tf.int32),
          reward=tf.zeros([2]), discount=tf.ones([2]),
          observation=tf.constant(observation)[:, None])
      step = policy.action(time_step, state)
      state = step.state
      novelty.append(step.info[r2d2_policy.EPISODIC_NOVELTY].numpy())
    self.assertAllClose(novelty, [[1, 1], [1, 2**-0.5], [2**-0.5, 1],
                                  [3**-0.5, 2**-0.5]])

  def test_without_memory_the_info_is_unchanged(self):
    agent = support.make_agent(intrinsic_reward=support.rnd_component())
    self.assertNotIn(r2d2_policy.EPISODIC_NOVELTY,
                     agent.collect_data_spec.policy_info)

  def test_demonstrations_get_zero_novelty(self):
    agent = support.make_agent(intrinsic_reward=_episodic_component())
    episodes, _ = r2d3_support.counting_episodes(1, episode_length=3)
    steps = list(demonstrations.episode_trajectories(
        episodes[0], agent.collect_data_spec))
    self.assertEqual(
        [float(s.policy_info[r2d2_policy.EPISODIC_NOVELTY]) for s in steps],
        [0.0] * len(steps))


class NguRewardTest(support.TestCase):

  def test_r_i_is_novelty_times_the_modulator_on_trace_transitions(self):
    component = _episodic_component(max_modulator=3.0)
    agent = support.make_agent(intrinsic_reward=component)
    sequences = support.random_sequences(agent, STEP_TYPES, seed=3)
    novelty = np.abs(sequences.policy_info[
        r2d2_policy.EPISODIC_NOVELTY].numpy())
    info = dict(sequences.policy_info)
    info[r2d2_policy.EPISODIC_NOVELTY] = tf.constant(novelty)
    sequences = sequences._replace(policy_info=info)
    raw = component.raw_rewards(sequences.observation[:, 1:]).numpy()
    rewards = agent.with_intrinsic_rewards(sequences).reward.numpy()
    # Trace transitions 2->3 and 3->4 of both rows (as the sequence gate's
    # test): the moments see exactly those four errors first.
    errors = raw[:, 2:4]
    alpha = np.clip(1 + (errors - errors.mean()) / errors.std(), 1, 3)
    expected = sequences.reward.numpy().copy()
    expected[:, 2:4] += 0.5 * novelty[:, 3:5] * alpha
    self.assertAllClose(rewards, expected, rtol=1e-5)
    self.assertEqual(int(component.error_moments.count()), 4)

  def test_settings_that_contradict_the_memory_are_refused(self):
    with self.assertRaisesRegex(ValueError, 'normalize_returns = False'):
      _episodic_component(normalize=True)
    with self.assertRaisesRegex(ValueError, 'first_visits_only = False'):
      _episodic_component(first_visits_only=True)
    component = _episodic_component()
    with self.assertRaisesRegex(ValueError, 'episodic_novelty is needed'):
      component.rewards(tf.zeros([1, 2, 1]))

  def test_checkpoint_carries_the_error_moments(self):
    agent = support.make_agent(intrinsic_reward=_episodic_component())
    sequences = support.random_sequences(agent, STEP_TYPES, seed=8)
    agent.train(sequences)
    path = tf.train.Checkpoint(agent=agent).save(
        os.path.join(self.get_temp_dir(), 'ckpt'))
    restored = support.make_agent(intrinsic_reward=_episodic_component())
    tf.train.Checkpoint(agent=restored).restore(path)
    self.assertEqual(int(restored.intrinsic_reward.error_moments.count()), 4)
    self.assertAllClose(agent.intrinsic_reward.error_moments.mean(),
                        restored.intrinsic_reward.error_moments.mean())

  def test_error_tags_are_written(self):
    agent = support.make_agent(intrinsic_reward=_episodic_component())
    sequences = support.random_sequences(agent, STEP_TYPES, seed=9)
    logdir = self.get_temp_dir()
    with tf.summary.create_file_writer(logdir).as_default():
      agent.train(sequences)
    tags = support.summary_tags(logdir)
    self.assertContainsSubset({'Intrinsic/error_mean', 'Intrinsic/error_std',
                               'Intrinsic/reward_normalized_mean'}, tags)
    self.assertNotIn('Intrinsic/return_std', tags)



class IntrinsicArmsTest(support.TestCase):

  def test_ngu_betas_run_from_zero_to_the_coefficient(self):
    betas = [r2d2_policy.ngu_intrinsic_weight(i, 16, 0.3) for i in range(16)]
    self.assertEqual(betas[0], 0.0)
    self.assertEqual(betas[-1], 0.3)
    self.assertTrue(all(a < b for a, b in zip(betas, betas[1:])))
    self.assertAlmostEqual(betas[8], 0.3 / (1 + np.exp(-10 * 2 / 14)))
    # Slot 0 (epsilon 0.4) explores most, the last slot exploits.
    slots = (r2d2_policy.slot_intrinsic_weights(0, 2, 8, 0.3) +
             r2d2_policy.slot_intrinsic_weights(1, 2, 8, 0.3))
    self.assertEqual(slots, betas[::-1])

  def test_each_slot_is_greedy_on_its_own_mix(self):
    component = _episodic_component()
    agent = support.make_agent(intrinsic_reward=component,
                               intrinsic_head=True, intrinsic_arms=True)
    # Slot 0: beta = coef (0.5); slot 1: beta 0, greedy on Q_E.
    policy = agent.actor_collect_policy(0, 1, 2).greedy_policy
    network = agent.q_network
    for value in np.linspace(-3.0, 3.0, 7):
      network.variables[0].assign(
          network.variables[0] + tf.random.normal(network.variables[0].shape))
      time_step = ts.TimeStep(
          step_type=tf.constant([F, F]), reward=tf.zeros([2]),
          discount=tf.ones([2]), observation=tf.fill([2, 1], value))
      state = policy.get_initial_state(2)
      info = {r2d2_policy.PREV_ACTION: state[r2d2_policy.PREV_ACTION],
              r2d2_policy.PREV_REWARD: tf.zeros([2])}
      heads, _ = network.q_heads(
          r2d2_policy.network_inputs(time_step.observation, info),
          step_type=time_step.step_type,
          network_state=state[r2d2_policy.NETWORK_STATE])
      mixed = losses.mixed_action_values(heads.extrinsic, heads.intrinsic,
                                         0.5)
      action = policy.action(time_step, state).action.numpy()
      self.assertEqual(action[0], int(np.argmax(mixed[0])))
      self.assertEqual(action[1], int(np.argmax(heads.extrinsic[1])))

  def test_arms_without_the_head_are_refused(self):
    with self.assertRaisesRegex(ValueError, 'intrinsic_q_head = True'):
      support.make_agent(intrinsic_reward=_episodic_component(),
                         intrinsic_arms=True)


if __name__ == '__main__':
  tf.test.main()
