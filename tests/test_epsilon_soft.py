"""networks.EpsilonSoftProjectionNetwork: a policy head with a floor."""

import functools

from absl.testing import absltest
import numpy as np
import tensorflow as tf
from tf_agents.environments import tf_py_environment
from tf_agents.specs import tensor_spec
from tf_agents.trajectories import time_step as ts

from tfa_explore import errors
from tfa_explore import networks
from tfa_explore.experiments import ppo
from tfa_explore.testing import fake_envs

SPEC = tensor_spec.BoundedTensorSpec((), tf.int32, 0, 3)


def head(epsilon):
  net = networks.EpsilonSoftProjectionNetwork(SPEC, epsilon=epsilon)
  parent = super(networks.EpsilonSoftProjectionNetwork, net)
  return net, parent


class EpsilonSoftProjectionTest(absltest.TestCase):

  def test_mixture_of_the_softmax_and_uniform(self):
    net, parent = head(0.2)
    # Large inputs saturate the softmax, which is what the floor is for.
    inputs = tf.constant(np.random.RandomState(0).normal(
        scale=300.0, size=(5, 6)), tf.float32)
    probs = tf.nn.softmax(net(inputs, outer_rank=1)[0].logits).numpy()
    softmax = tf.nn.softmax(
        parent.call(inputs, outer_rank=1)[0].logits).numpy()
    self.assertLess(softmax.min(), 1e-6)
    np.testing.assert_allclose(probs, 0.8 * softmax + 0.05, atol=1e-6)
    self.assertGreaterEqual(probs.min(), 0.05 - 1e-6)

  def test_epsilon_zero_is_the_categorical_head(self):
    net, parent = head(0.0)
    inputs = tf.constant(np.random.RandomState(1).normal(size=(3, 6)),
                         tf.float32)
    np.testing.assert_allclose(
        tf.nn.softmax(net(inputs, outer_rank=1)[0].logits).numpy(),
        tf.nn.softmax(parent.call(inputs, outer_rank=1)[0].logits).numpy(),
        atol=1e-6)

  def test_masked_actions_stay_impossible(self):
    net, _ = head(0.2)
    inputs = tf.constant(np.random.RandomState(2).normal(size=(2, 6)),
                         tf.float32)
    mask = tf.constant([[1, 1, 0, 0], [1, 0, 1, 1]], tf.int32)
    probs = tf.nn.softmax(
        net(inputs, outer_rank=1, mask=mask)[0].logits).numpy()
    np.testing.assert_allclose(probs[0, 2:], 0.0, atol=1e-6)
    self.assertAlmostEqual(probs[1, 1], 0.0, places=6)
    # The uniform part spreads over the valid actions only.
    self.assertGreaterEqual(probs[0, :2].min(), 0.1 - 1e-6)
    self.assertGreaterEqual(probs[1, [0, 2, 3]].min(), 0.2 / 3 - 1e-6)

  def test_epsilon_outside_zero_one_is_refused(self):
    for epsilon, message in (
        (-0.1, 'must be in [0, 1), got -0.1'),
        (1.0, 'must be in [0, 1), got 1.0'),
        (float('nan'), 'must be a finite number, got nan'),
        ('0.1', "must be a finite number, got '0.1' (str)")):
      with self.subTest(epsilon=epsilon):
        with self.assertRaises(errors.ConfigError) as raised:
          networks.EpsilonSoftProjectionNetwork(SPEC, epsilon=epsilon)
        self.assertEqual(
            errors.user_message(raised.exception),
            f'networks.EpsilonSoftProjectionNetwork: epsilon {message}.')


class FactoryHookTest(absltest.TestCase):
  """rnd_ppo_agent passes the head to both actor network kinds."""

  def floor_of(self, env, **settings):
    agent = ppo.ppo_clip_agent(
        time_step_spec=env.time_step_spec(), action_spec=env.action_spec(),
        train_step_counter=tf.Variable(0, dtype=tf.int64),
        intrinsic_reward=None, learning_rate=1e-3, num_epochs=1,
        num_minibatches=1, importance_ratio_clipping=0.1, lambda_value=0.95,
        discount_factor=0.99, entropy_regularization=0.0,
        value_pred_loss_coef=0.5, extrinsic_advantage_coef=2.0,
        normalize_observations=False, actor_fc_layers=(8,),
        value_fc_layers=(8,), activation_fn=tf.nn.tanh,
        discrete_projection_net=functools.partial(
            networks.EpsilonSoftProjectionNetwork, epsilon=0.5),
        **settings)
    # Saturate the head: every probability must still be >= 0.5 / n.
    saturated = 0
    for variable in agent.collect_policy.variables():
      if 'logits' in variable.name and 'kernel' in variable.name:
        variable.assign(1e4 * tf.ones_like(variable) *
                        np.arange(variable.shape[-1], dtype=np.float32))
        saturated += 1
    self.assertEqual(saturated, 1)
    observation = tensor_spec.sample_spec_nest(
        env.observation_spec(), seed=0, outer_dims=(4,))
    step = ts.restart(observation, batch_size=4)
    logits = agent.collect_policy.distribution(step).action.logits
    num_actions = int(env.action_spec().maximum) + 1
    return float(tf.reduce_min(tf.nn.softmax(logits))), 0.5 / num_actions

  def test_separate_actor_network(self):
    env = tf_py_environment.TFPyEnvironment(fake_envs.load_counting(seed=0))
    floor, expected = self.floor_of(env)
    self.assertGreaterEqual(floor, expected - 1e-6)

  def test_shared_torso(self):
    env = tf_py_environment.TFPyEnvironment(fake_envs.load_image(seed=0))
    floor, expected = self.floor_of(
        env, conv_layer_params=((4, 3, 2),), torso_fc_layers=(8,))
    self.assertGreaterEqual(floor, expected - 1e-6)


if __name__ == '__main__':
  absltest.main()
