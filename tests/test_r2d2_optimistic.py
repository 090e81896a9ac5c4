"""R2D2's optimistic RND bonus: state-action novelty, rewards, acting values."""

import functools

import gin
import numpy as np
import tensorflow as tf
from tf_agents.specs import tensor_spec

from tfa_explore.agents.intrinsic import optimistic
from tfa_explore.agents.intrinsic import q_bonus
from tfa_explore.agents.intrinsic import reward as intrinsic
from tfa_explore.experiments import intrinsic as intrinsic_factories
from tfa_explore.experiments.r2d2 import builder
from tfa_explore.networks import recurrent_dueling_q_network as rdqn
from tfa_explore.networks import rnd_networks
from tfa_explore.testing import r2d2 as support

F, M, L = 0, 1, 2  # StepType FIRST, MID, LAST
# burn-in 2, trace 4: T = 7; steps 0-4 one episode (LAST at 4), 5-6 padding.
STEP_TYPES = [[M, M, M, M, L, M, M]] * 2


def optimistic_bonus(optimism=1.0, normalize=False, first_visits_only=False):
  env = support.counting_env()
  action_spec = tensor_spec.from_spec(env.action_spec())
  inputs = optimistic.StateActionInputs(
      tensor_spec.from_spec(env.observation_spec()),
      int(action_spec.maximum) - int(action_spec.minimum) + 1)
  reward = intrinsic.RndIntrinsicReward(
      inputs.spec,
      networks_fn=functools.partial(rnd_networks.rnd_mlp_networks,
                                    torso_fc_layer_params=(16,),
                                    predictor_fc_layer_params=(16,),
                                    output_dim=4),
      optimizer=tf.keras.optimizers.Adam(1e-2),
      observation_fn=inputs, coef=2.0, discount=0.9, non_episodic=False,
      normalize_observations=normalize, normalize_returns=normalize,
      predictor_update_proportion=1.0, first_visits_only=first_visits_only)
  return optimistic.OptimisticRndBonus(reward, inputs, optimism=optimism)


class StateActionInputsTest(support.TestCase):

  def test_a_pair_is_the_flattened_view_in_its_actions_block(self):
    inputs = optimistic.StateActionInputs(
        tf.TensorSpec([2, 2], tf.float32), num_actions=3, action_minimum=1)
    self.assertEqual(inputs.spec[optimistic.ACTION].shape, [3])
    observations = tf.reshape(tf.range(1, 9, dtype=tf.float32), [2, 2, 2])
    pairs = inputs.pairs(observations, tf.constant([3, 1]))
    self.assertAllEqual(inputs(pairs), [[0, 0, 0, 0] * 2 + [1, 2, 3, 4],
                                        [5, 6, 7, 8] + [0, 0, 0, 0] * 2])
    every = inputs(inputs.all_actions(observations)).numpy()
    self.assertEqual(every.shape, (2, 3, 12))
    for action in range(3):
      block = every[1, action].reshape(3, 4)
      self.assertAllEqual(block[action], [5, 6, 7, 8])
      self.assertEqual(np.abs(block).sum(), 26)


class OptimisticBonusTest(support.TestCase):

  def test_rewards_are_the_next_states_largest_action_novelty(self):
    bonus = optimistic_bonus()
    agent = support.make_agent(exploration=bonus)
    sequences = support.random_sequences(agent, STEP_TYPES, seed=3)
    novelty = bonus.action_novelty(sequences.observation[:, 1:],
                                   normalized=False).numpy()
    self.assertEqual(novelty.shape, (2, 6, 2))
    self.assertFalse(np.allclose(novelty[..., 0], novelty[..., 1]))
    rewards = bonus.intrinsic_rewards(agent, sequences).numpy()
    # Trace transitions 2->3 and 3->4 only (4 is the episode's LAST).
    expected = np.zeros_like(rewards)
    expected[:, 2:4] = novelty[:, 2:4].max(axis=-1)
    self.assertAllClose(rewards, expected, rtol=1e-6)

  def test_a_pair_loses_its_novelty_when_taken_not_the_other_action(self):
    bonus = optimistic_bonus()
    agent = support.make_agent(exploration=bonus)
    sequences = support.random_sequences(agent, STEP_TYPES, seed=4)
    # Every step takes action 0; action 1 is never trained on.
    sequences = sequences._replace(action=tf.zeros_like(sequences.action))
    observations = sequences.observation[:, 2:4]
    before = bonus.action_novelty(observations, normalized=False).numpy()
    for _ in range(30):
      agent.train(sequences)
    after = bonus.action_novelty(observations, normalized=False).numpy()
    taken_drop = after[..., 0] / before[..., 0]
    untried_drop = after[..., 1] / before[..., 1]
    self.assertLess(float(np.mean(taken_drop)), 0.2)
    self.assertLess(float(np.mean(taken_drop)),
                    0.5 * float(np.mean(untried_drop)))

  def test_exploring_policy_adds_beta_kappa_novelty(self):
    values = {}
    for optimism in (0.0, 3.0):
      bonus = optimistic_bonus(optimism=optimism)
      agent = support.make_agent(exploration=bonus)
      policy = bonus.exploring_policy(agent)
      self.assertIsInstance(policy, optimistic.OptimisticExploringPolicy)
      observation = tf.constant([[1.0], [3.0]])
      inputs = {rdqn.OBSERVATION_KEY: observation,
                rdqn.PREV_ACTION_KEY: tf.constant([0, 1]),
                rdqn.PREV_REWARD_KEY: tf.constant([0.0, 1.0])}
      state = agent.q_network.get_initial_state(2)
      step_type = tf.constant([F, M])
      mixed, _ = q_bonus.ExploringPolicy._action_values(
          policy, inputs, step_type, state)
      acting, _ = policy._action_values(inputs, step_type, state)
      novelty = bonus.action_novelty(observation)
      values[optimism] = (acting, mixed + 2.0 * optimism * novelty)
    self.assertAllClose(*values[3.0], rtol=1e-5)
    self.assertAllClose(values[0.0][0], values[0.0][1], rtol=1e-6)

  def test_actors_are_given_what_the_policy_reads(self):
    bonus = optimistic_bonus(normalize=True)
    agent = support.make_agent(exploration=bonus)
    reward = bonus.reward
    read = {id(v) for v in bonus.exploring_policy(agent).variables()}
    for variable in (reward.target_net.variables +
                     reward.predictor_net.variables):
      self.assertIn(id(variable), read)
    shared = builder.SharedState(agent).nest()
    self.assertIn('exploration', shared)
    # Fixed shapes only: the table's signature is built from them.
    for variable in shared['exploration']:
      self.assertTrue(variable.shape.is_fully_defined())

  def test_observe_counts_real_steps_as_pairs(self):
    bonus = optimistic_bonus(normalize=True)
    agent = support.make_agent(exploration=bonus)
    sequences = support.random_sequences(agent, STEP_TYPES, seed=5)
    bonus.observe(agent, sequences)
    self.assertEqual(int(bonus.reward.observation_normalizer.count()[0]), 10)
    self.assertEqual(int(bonus.reward.return_normalizer.count()), 4)

  def test_settings_that_cannot_work_are_refused_by_name(self):
    with self.assertRaisesRegex(ValueError, 'first_visits_only'):
      optimistic_bonus(first_visits_only=True)
    with self.assertRaisesRegex(ValueError, 'optimism must be >= 0'):
      optimistic_bonus(optimism=-1.0)


class FactoryTest(support.TestCase):

  def tearDown(self):
    gin.clear_config()
    super().tearDown()

  def test_gin_factory_builds_the_bonus_into_the_agent(self):
    gin.parse_config([
        'intrinsic.optimistic_rnd_bonus.reward_fn = '
        '@intrinsic.rnd_intrinsic_reward',
        'intrinsic.optimistic_rnd_bonus.optimism = 0.5',
        'intrinsic.optimistic_rnd_bonus.arms = False',
        'intrinsic.rnd_intrinsic_reward.coef = 1.0',
        'intrinsic.rnd_intrinsic_reward.discount = 0.99',
        'intrinsic.rnd_intrinsic_reward.non_episodic = False',
        'intrinsic.rnd_intrinsic_reward.normalize_returns = True',
        'intrinsic.rnd_intrinsic_reward.normalize_observations = False',
        'intrinsic.rnd_intrinsic_reward.observation_clip = 5.0',
        'intrinsic.rnd_intrinsic_reward.networks_fn = @rnd_mlp_networks',
        'intrinsic.rnd_intrinsic_reward.learning_rate = 1e-4',
        'intrinsic.rnd_intrinsic_reward.adam_epsilon = 1e-5',
        'intrinsic.rnd_intrinsic_reward.predictor_update_proportion = 1.0',
        'intrinsic.rnd_intrinsic_reward.first_visits_only = False',
        'rnd_mlp_networks.torso_fc_layer_params = (8,)',
        'rnd_mlp_networks.predictor_fc_layer_params = (8,)',
        'rnd_mlp_networks.output_dim = 4',
    ])
    env = support.counting_env()
    agent = builder.r2d2_agent_fn(
        tensor_spec.from_spec(env.time_step_spec()),
        tensor_spec.from_spec(env.action_spec()),
        train_step_counter=tf.Variable(0, dtype=tf.int64),
        exploration=intrinsic_factories.optimistic_rnd_bonus,
        **support.FACTORY_KWARGS)
    self.assertIsInstance(agent.exploration, optimistic.OptimisticRndBonus)
    self.assertEqual(agent.exploration.optimism, 0.5)
    # The RND input: one block of the 1-value view per action.
    self.assertEqual(agent.exploration.reward.input_spec.shape, [2])
    sequences = support.random_sequences(agent, STEP_TYPES, seed=6)
    self.assertTrue(np.isfinite(float(agent.train(sequences).loss)))


if __name__ == '__main__':
  tf.test.main()
