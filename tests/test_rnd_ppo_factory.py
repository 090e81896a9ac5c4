"""rnd_ppo.rnd_ppo_agent: RND-PPO and its twin from the same factory."""

from absl.testing import absltest
import tensorflow as tf
from tf_agents.environments import tf_py_environment

from tfa_explore import networks
from tfa_explore.experiments import rnd_ppo
from tfa_explore.testing import fake_envs

SHARED = dict(
    learning_rate=1e-3, num_epochs=1, num_minibatches=1,
    importance_ratio_clipping=0.1, lambda_value=0.95, discount_factor=0.99,
    entropy_regularization=0.0, value_pred_loss_coef=0.5,
    extrinsic_advantage_coef=2.0, normalize_observations=True,
    actor_fc_layers=(8,), value_fc_layers=(8,), activation_fn=tf.nn.tanh)
INTRINSIC = dict(
    intrinsic_advantage_coef=1.0, intrinsic_discount_factor=0.99,
    rnd_networks_fn=lambda spec: networks.rnd_mlp_networks(
        spec, torso_fc_layer_params=(8,), predictor_fc_layer_params=(8,),
        output_dim=4),
    rnd_learning_rate=1e-4, predictor_update_proportion=0.25,
    rnd_observation_clip=5.0, use_intrinsic_return_normalization=True,
    non_episodic_intrinsic=True)


class RndPpoFactoryTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.env = tf_py_environment.TFPyEnvironment(
        fake_envs.load_counting(seed=0))

  def build(self, **kwargs):
    return rnd_ppo.rnd_ppo_agent(
        time_step_spec=self.env.time_step_spec(),
        action_spec=self.env.action_spec(),
        train_step_counter=tf.Variable(0, dtype=tf.int64), **kwargs)

  def test_builds_rnd_ppo_and_twin(self):
    agent = self.build(use_intrinsic_reward=True, **SHARED, **INTRINSIC)
    self.assertTrue(agent.use_intrinsic_reward)
    self.assertEqual(agent.rnd_predictor_net.output_dim, 4)
    twin = self.build(use_intrinsic_reward=False, **SHARED)
    self.assertFalse(twin.use_intrinsic_reward)
    self.assertIsNone(twin.rnd_predictor_net)
    # Same actor architecture in both.
    self.assertEqual(
        [v.shape for v in agent.collect_policy.variables()
         if 'ActorDistributionNetwork' in v.name],
        [v.shape for v in twin.collect_policy.variables()
         if 'ActorDistributionNetwork' in v.name])

  def test_rnd_ppo_needs_every_intrinsic_setting(self):
    settings = dict(INTRINSIC)
    del settings['intrinsic_discount_factor']
    with self.assertRaisesRegex(ValueError, 'intrinsic_discount_factor'):
      self.build(use_intrinsic_reward=True, **SHARED, **settings)

  def test_twin_rejects_intrinsic_settings(self):
    with self.assertRaisesRegex(ValueError, 'predictor_update_proportion'):
      self.build(use_intrinsic_reward=False, predictor_update_proportion=0.25,
                 **SHARED)


if __name__ == '__main__':
  absltest.main()
