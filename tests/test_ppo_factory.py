"""ppo.ppo_clip_agent: plain PPO and RND-PPO from one factory."""

import functools

from absl.testing import absltest
import gin
import tensorflow as tf
from tf_agents.agents.ppo import ppo_clip_agent
from tf_agents.environments import tf_py_environment

from tfa_explore import errors
from tfa_explore import networks
from tfa_explore.agents import rnd_ppo as rnd_ppo_agents
from tfa_explore.experiments import intrinsic
from tfa_explore.experiments import ppo
from tfa_explore.testing import fake_envs

SHARED = dict(
    learning_rate=1e-3, num_epochs=1, num_minibatches=1,
    importance_ratio_clipping=0.1, lambda_value=0.95, discount_factor=0.99,
    entropy_regularization=0.0, value_pred_loss_coef=0.5,
    extrinsic_advantage_coef=2.0, normalize_observations=True,
    actor_fc_layers=(8,), value_fc_layers=(8,), activation_fn=tf.nn.tanh)
INTRINSIC = dict(
    coef=1.0, discount=0.97, non_episodic=True, normalize_returns=True,
    normalize_observations=True,
    observation_clip=5.0,
    networks_fn=lambda spec: networks.rnd_mlp_networks(
        spec, torso_fc_layer_params=(8,), predictor_fc_layer_params=(8,),
        output_dim=4),
    learning_rate=1e-4, adam_epsilon=1e-5, predictor_update_proportion=0.25,
    first_visits_only=False)


class PpoFactoryTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.env = tf_py_environment.TFPyEnvironment(
        fake_envs.load_counting(seed=0))
    gin.clear_config()
    self.addCleanup(gin.clear_config)

  def build(self, **kwargs):
    return ppo.ppo_clip_agent(
        time_step_spec=self.env.time_step_spec(),
        action_spec=self.env.action_spec(),
        train_step_counter=tf.Variable(0, dtype=tf.int64), **kwargs)

  def test_builds_rnd_ppo_and_twin(self):
    agent = self.build(
        intrinsic_reward=functools.partial(intrinsic.rnd_intrinsic_reward,
                                           **INTRINSIC), **SHARED)
    self.assertIsInstance(agent.intrinsic_reward,
                          rnd_ppo_agents.RndIntrinsicReward)
    self.assertEqual(agent.intrinsic_reward.predictor_net.output_dim, 4)
    self.assertEqual(agent.intrinsic_reward.stream.discount, 0.97)
    twin = self.build(intrinsic_reward=None, **SHARED)
    self.assertIsNone(twin.intrinsic_reward)
    # Same actor architecture in both.
    self.assertEqual(
        [v.shape for v in agent.collect_policy.variables()
         if 'ActorDistributionNetwork' in v.name],
        [v.shape for v in twin.collect_policy.variables()
         if 'ActorDistributionNetwork' in v.name])

  def test_agent_class_takes_a_subclass_of_the_agent(self):
    class Marked(rnd_ppo_agents.RndPPOAgent):
      pass

    agent = self.build(intrinsic_reward=None, agent_class=Marked, **SHARED)
    self.assertIsInstance(agent, Marked)
    # A PPO agent a TF-Agents pipeline takes as one.
    self.assertIsInstance(agent, ppo_clip_agent.PPOClipAgent)

  def assert_missing_binding(self, parameter, build):
    with self.assertRaises(RuntimeError) as raised:
      build()
    self.assertTrue(errors.is_missing_binding(raised.exception))
    self.assertIn(parameter, str(raised.exception))

  def test_intrinsic_reward_must_be_bound(self):
    # None (the twin) must be said, not fallen back to.
    self.assert_missing_binding('intrinsic_reward',
                                lambda: self.build(**SHARED))

  def test_rnd_intrinsic_reward_needs_every_setting(self):
    settings = dict(INTRINSIC)
    del settings['discount']
    self.assert_missing_binding('discount', lambda: self.build(
        intrinsic_reward=functools.partial(intrinsic.rnd_intrinsic_reward,
                                           **settings), **SHARED))

  def test_values_that_cannot_work_are_config_errors_naming_the_factory(self):
    for setting, value, message in (
        ('num_epochs', 0, 'num_epochs must be >= 1, got 0'),
        ('num_minibatches', 0, 'num_minibatches must be >= 1, got 0'),
        ('learning_rate', -1e-3, 'learning_rate must be > 0, got -0.001'),
        ('adam_epsilon', 0.0, 'adam_epsilon must be > 0, got 0.0')):
      with self.subTest(setting):
        with self.assertRaises(errors.ConfigError) as raised:
          self.build(intrinsic_reward=None,
                     **dict(SHARED, **{setting: value}))
        self.assertEqual(errors.user_message(raised.exception),
                         f'ppo.ppo_clip_agent: {message}.')

  def test_agent_class_is_configured_through_the_factory_only(self):
    # A binding of the class would be silently overridden by the factory,
    # so the class is not registered with gin.
    with self.assertRaises(ValueError):
      gin.parse_config('RndPPOAgent.num_epochs = 3')
    with self.assertRaises(ValueError):
      gin.parse_config('intrinsic.rnd_intrinsic_reward.observation_spec = 1')


if __name__ == '__main__':
  absltest.main()
