"""R2D2 with the RND exploration bonus: rewards, predictor, state, tags."""

import os

import numpy as np
import tensorflow as tf
from tf_agents.specs import tensor_spec

from tfa_explore.agents.intrinsic import normalizers
from tfa_explore.agents.r2d2 import agent as r2d2_agent
from tfa_explore.agents.r2d2 import exploration
from tfa_explore.agents.r2d2_intrinsic import q_bonus
from tfa_explore.agents.r2d3 import agent as r2d3_agent
from tfa_explore.experiments.r2d2 import builder
from tfa_explore.testing import r2d2 as support

F, M, L = 0, 1, 2  # StepType FIRST, MID, LAST
# burn-in 2, trace 4: T = 7. Steps 0-4 are one episode's (LAST at 4), 5-6
# the next one's boundary rows without a FIRST: padding to the mask.
STEP_TYPES = [[M, M, M, M, L, M, M]] * 2


class BonusTest(support.TestCase):

  def test_bonus_reaches_trace_transitions_only(self):
    bonus = support.rnd_bonus(coef=2.0)
    agent = support.make_agent(exploration=bonus)
    sequences = support.random_sequences(agent, STEP_TYPES, seed=3)
    raw = bonus.reward.raw_rewards(sequences.observation[:, 1:]).numpy()
    rewards = bonus.intrinsic_rewards(agent, sequences).numpy()
    # Trace steps 2..5; 2->3 and 3->4 stay in the episode, 4 is its LAST
    # step and 5, 6 are padding. Burn-in steps 0, 1 get none.
    expected = np.zeros_like(rewards)
    expected[:, 2:4] = raw[:, 2:4]
    self.assertAllClose(rewards, expected, rtol=1e-6)
    self.assertTrue(np.all(rewards[:, 2:4] > 0))

  def test_loss_is_what_train_optimises_and_the_predictor_steps(self):
    bonus = support.rnd_bonus(coef=2.0)
    agent = support.make_agent(exploration=bonus)
    sequences = support.random_sequences(agent, STEP_TYPES, seed=4)
    loss = agent.loss(sequences)
    target = bonus.reward.target_net.variables[0].numpy()
    predictor = bonus.reward.predictor_net.variables[0].numpy()
    trained = agent.train(sequences)
    self.assertAllClose(loss.loss, trained.loss, rtol=1e-6)
    self.assertAllClose(loss.extra.priorities, trained.extra.priorities,
                        rtol=1e-6)
    self.assertGreater(float(trained.extra.exploration_loss), 0.0)
    self.assertAllEqual(bonus.reward.target_net.variables[0], target)
    self.assertNotAllClose(bonus.reward.predictor_net.variables[0], predictor)

  def test_statistics_skip_padding(self):
    bonus = support.rnd_bonus(normalize=True)
    agent = support.make_agent(exploration=bonus)
    sequences = support.random_sequences(agent, STEP_TYPES, seed=5)
    bonus.observe(agent, sequences)
    # Real steps 0-4 of 2 sequences; 2 real trace transitions each.
    component = bonus.reward
    self.assertEqual(int(component.observation_normalizer.count()[0]), 10)
    self.assertEqual(int(component.return_normalizer.count()), 4)

  def test_first_visits_only_pays_new_views_of_the_episode(self):
    bonus = support.rnd_bonus(coef=2.0, first_visits_only=True)
    agent = support.make_agent(exploration=bonus)
    sequences = support.random_sequences(agent, STEP_TYPES, seed=9)
    # Views 0..6 of row 0 as a b c b a c d: trace next views (steps 3, 4)
    # are b (seen at 1) and a (seen at 0): no bonus. Row 1 all distinct.
    observation = sequences.observation.numpy().copy()
    row = observation[0]
    row[3], row[4], row[5] = row[1], row[0], row[2]
    sequences = sequences._replace(observation=tf.constant(observation))
    raw = bonus.reward.raw_rewards(sequences.observation[:, 1:]).numpy()
    rewards = bonus.intrinsic_rewards(agent, sequences).numpy()
    expected = np.zeros_like(rewards)
    expected[1, 2:4] = raw[1, 2:4]
    self.assertAllClose(rewards, expected, rtol=1e-6)

  def test_r2d3_holds_the_same_bonus(self):
    agent = support.make_agent(exploration=support.rnd_bonus())
    r2d3 = r2d3_agent.R2D3Agent(
        agent.time_step_spec, agent.action_spec,
        agent.q_network.copy(name='R2D3Q'),
        tf.keras.optimizers.Adam(1e-2), sequence_config=support.SMALL_CONFIG,
        exploration=support.rnd_bonus(),
        train_step_counter=tf.Variable(0, dtype=tf.int64))
    r2d3.initialize()
    sequences = support.random_sequences(r2d3, STEP_TYPES, seed=6)
    batch = r2d3_agent.MixedSequences(sequences, None,
                                      tf.constant([True, False]))
    predictor = r2d3.exploration.reward.predictor_net
    before = predictor.variables[0].numpy()
    self.assertTrue(np.isfinite(r2d3.train(batch).loss.numpy()))
    self.assertNotAllClose(predictor.variables[0], before)

  def test_non_episodic_bonus_is_rejected_by_name(self):
    with self.assertRaisesRegex(
        ValueError, 'non_episodic must be False.*'
        'intrinsic.rnd_intrinsic_reward.non_episodic'):
      support.rnd_bonus(non_episodic=True)

  def test_a_bonus_needs_the_intrinsic_head(self):
    env = support.counting_env()
    with self.assertRaisesRegex(ValueError, 'intrinsic_head=True'):
      r2d2_agent.R2D2Agent(
          env.time_step_spec(), env.action_spec(),
          support.small_network(env.time_step_spec(), env.action_spec()),
          tf.keras.optimizers.Adam(1e-2),
          sequence_config=support.SMALL_CONFIG,
          exploration=support.rnd_bonus())

  def test_without_a_bonus_the_loss_is_the_td_loss(self):
    agent = support.make_agent()
    self.assertIsInstance(agent.exploration, exploration.ExplorationBonus)
    sequences = support.random_sequences(agent, STEP_TYPES, seed=7)
    loss = agent.loss(sequences)
    self.assertEqual(float(loss.extra.exploration_loss), 0.0)
    self.assertAllClose(loss.loss, loss.extra.td_loss, rtol=0, atol=0)
    self.assertIs(agent.collect_policy.greedy_policy, agent.policy)


class StateTest(support.TestCase):

  def test_checkpoint_restores_the_bonus(self):
    agent = support.make_agent(exploration=support.rnd_bonus(normalize=True))
    sequences = support.random_sequences(agent, STEP_TYPES, seed=8)
    for _ in range(2):
      agent.train(sequences)
    path = tf.train.Checkpoint(agent=agent).save(
        os.path.join(self.get_temp_dir(), 'ckpt'))
    restored = support.make_agent(
        exploration=support.rnd_bonus(normalize=True),
        optimizer=tf.keras.optimizers.Adam(1e-2))
    restored.optimizer.build(restored.q_network.trainable_variables)
    tf.train.Checkpoint(agent=restored).restore(path).assert_consumed()
    for a, b in zip(agent.exploration.variables,
                    restored.exploration.variables):
      self.assertAllEqual(a, b, msg=a.name)
    self.assertAllClose(agent.train(sequences).loss,
                        restored.train(sequences).loss, rtol=0, atol=0)

  def test_intrinsic_tags_are_written(self):
    agent = support.make_agent(exploration=support.rnd_bonus(normalize=True))
    sequences = support.random_sequences(agent, STEP_TYPES, seed=9)
    logdir = self.get_temp_dir()
    with tf.summary.create_file_writer(logdir).as_default():
      agent.train(sequences)
    self.assertContainsSubset(
        {'Intrinsic/reward_normalized_mean', 'Intrinsic/reward_raw_mean',
         'Intrinsic/return_std', 'Losses/intrinsic_reward_loss',
         'Losses/intrinsic_td_loss', 'Normalizers/rnd_observation_count',
         'Losses/td_loss'},
        support.summary_tags(logdir))


class ReturnNormalizerMaskTest(support.TestCase):

  def test_masked_steps_add_nothing(self):
    normalizer = normalizers.IntrinsicReturnNormalizer(gamma=0.5)
    filtered = normalizer.update(
        tf.constant([[1.0, 8.0, 2.0]]),
        mask=tf.constant([[True, False, True]]))
    # The masked reward counts as 0: R = 1, 0.5, 2.25.
    self.assertAllClose(filtered, [[1.0, 0.5, 2.25]])
    self.assertEqual(int(normalizer.count()), 2)
    self.assertAllClose(normalizer.mean(), (1.0 + 2.25) / 2)


class FactoryTest(support.TestCase):

  def test_factory_builds_the_bonus_and_keeps_the_q_network_seeded(self):
    env = support.counting_env()
    specs = (tensor_spec.from_spec(env.time_step_spec()),
             tensor_spec.from_spec(env.action_spec()))
    kwargs = support.FACTORY_KWARGS
    agents = []
    for bonus in (None, lambda observation_spec, action_spec: (
        support.rnd_bonus())):
      tf.keras.utils.set_random_seed(1)
      agents.append(builder.r2d2_agent_fn(
          *specs, train_step_counter=tf.Variable(0, dtype=tf.int64),
          exploration=bonus, **kwargs))
    plain, with_bonus = agents
    self.assertIsInstance(with_bonus.exploration, q_bonus.IntrinsicQBonus)
    self.assertTrue(with_bonus.q_network.has_intrinsic_head)
    # Q_E's weights (all of the plain network's) are the plain agent's.
    bonus_weights = {v.name: v for v in with_bonus.q_network.variables}
    for variable in plain.q_network.variables:
      self.assertAllEqual(variable, bonus_weights[variable.name])


if __name__ == '__main__':
  tf.test.main()
