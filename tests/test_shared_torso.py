"""One torso for the policy and both value heads (networks/shared_torso.py)."""

import functools
import os

import gin
import numpy as np
import tensorflow as tf
from tf_agents.agents.ppo import ppo_clip_agent
from tf_agents.environments import batched_py_environment
from tf_agents.environments import tf_py_environment
from tf_agents.networks import actor_distribution_network
from tf_agents.policies import policy_saver
from tf_agents.specs import tensor_spec
from tf_agents.trajectories import time_step as ts
from tf_agents.utils import common

from tfa_explore import config
from tfa_explore import errors
from tfa_explore import networks
from tfa_explore.agents.rnd_ppo import maths
from tfa_explore.experiments import intrinsic
from tfa_explore.experiments import ppo
from tfa_explore.networks import shared_torso
from tfa_explore.testing import fake_envs

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONV = ((4, 3, 2), (4, 3, 1))  # two conv layers on the 8x8 fake images
AGENT_SETTINGS = dict(
    learning_rate=1e-2, num_epochs=2, num_minibatches=1,
    importance_ratio_clipping=0.2, lambda_value=0.95, discount_factor=0.99,
    entropy_regularization=0.0, value_pred_loss_coef=0.5,
    extrinsic_advantage_coef=2.0, normalize_observations=False,
    conv_layer_params=CONV, torso_fc_layers=(16,), actor_fc_layers=(8,),
    value_fc_layers=(8,), activation_fn=tf.nn.relu)
INTRINSIC = dict(
    coef=1.0, discount=0.99, non_episodic=True, normalize_returns=True,
    normalize_observations=True, observation_clip=5.0,
    networks_fn=lambda spec: networks.rnd_mlp_networks(
        spec, torso_fc_layer_params=(8,), predictor_fc_layer_params=(8,),
        output_dim=4),
    learning_rate=1e-3, adam_epsilon=1e-5, predictor_update_proportion=1.0,
    first_visits_only=False)


def image_env(num_envs=2):
  return tf_py_environment.TFPyEnvironment(
      batched_py_environment.BatchedPyEnvironment(
          [fake_envs.load_image(seed=i) for i in range(num_envs)],
          multithreading=False))


def rollout(env, policy, num_steps):
  """`[B, T]` trajectories of `policy` in `env` (a plain Python loop)."""
  from tf_agents.trajectories import trajectory  # pylint: disable=g-import-not-at-top
  steps = []
  time_step = env.reset()
  for _ in range(num_steps):
    action_step = policy.action(time_step)
    next_time_step = env.step(action_step.action)
    steps.append(trajectory.from_transition(time_step, action_step,
                                            next_time_step))
    time_step = next_time_step
  return tf.nest.map_structure(lambda *t: tf.stack(t, axis=1), *steps)


def count_ops(concrete_function, op_type):
  graphs = [concrete_function.graph]
  graphs += [f.graph for f in concrete_function.graph._functions.values()  # pylint: disable=protected-access
             if hasattr(f, 'graph')]
  return sum(1 for g in graphs for op in g.get_operations()
             if op.type == op_type)


class SharedTorsoTest(tf.test.TestCase):
  test_session = None  # tf.test.TestCase's deprecated helper, not a test.

  def setUp(self):
    super().setUp()
    tf.random.set_seed(0)
    self.env = image_env()

  def build_agent(self, **overrides):
    settings = dict(AGENT_SETTINGS, **overrides)
    settings.setdefault('intrinsic_reward', functools.partial(
        intrinsic.rnd_intrinsic_reward, **INTRINSIC))
    return ppo.ppo_clip_agent(
        time_step_spec=self.env.time_step_spec(),
        action_spec=self.env.action_spec(),
        train_step_counter=tf.Variable(0, dtype=tf.int64), **settings)

  def test_factory_shares_the_torso_of_image_observations_by_default(self):
    agent = self.build_agent()
    actor_net, value_net = agent.actor_net, agent.collect_policy._value_network  # pylint: disable=protected-access
    self.assertIsInstance(actor_net, shared_torso.ActorHeadNetwork)
    self.assertIs(shared_torso.shared_torso(actor_net, value_net),
                  actor_net.torso)
    torso_ids = {id(v) for v in actor_net.torso.trainable_variables}
    self.assertLen(torso_ids, 2 * 2 + 2)  # two convs and one dense layer
    # The optimizer and the policy see each torso variable once.
    trained = agent._variables_to_train()  # pylint: disable=protected-access
    self.assertLen(trained, len({id(v) for v in trained}))
    policy_variables = agent.collect_policy.variables()
    self.assertLen(policy_variables, len({id(v) for v in policy_variables}))
    self.assertTrue(torso_ids <= {id(v) for v in trained})

  def test_factory_keeps_separate_networks_without_convs_or_when_asked(self):
    agent = self.build_agent(shared_torso=False, torso_fc_layers=())
    self.assertIsInstance(agent.actor_net,
                          actor_distribution_network.ActorDistributionNetwork)
    counting = tf_py_environment.TFPyEnvironment(
        fake_envs.load_counting(seed=0))
    mlp = ppo.ppo_clip_agent(
        time_step_spec=counting.time_step_spec(),
        action_spec=counting.action_spec(),
        train_step_counter=tf.Variable(0, dtype=tf.int64),
        intrinsic_reward=None,
        **dict(AGENT_SETTINGS, conv_layer_params=None, torso_fc_layers=()))
    self.assertIsInstance(mlp.actor_net,
                          actor_distribution_network.ActorDistributionNetwork)

  def test_torso_layers_without_a_shared_torso_are_refused_by_name(self):
    with self.assertRaisesRegex(errors.ConfigError,
                                'torso_fc_layers.*shared_torso = True'):
      self.build_agent(shared_torso=False)

  def test_the_minibatch_loss_runs_the_torso_once(self):
    shared = self.build_agent(intrinsic_reward=None)
    separate = self.build_agent(intrinsic_reward=None, shared_torso=False,
                                torso_fc_layers=())
    experience = rollout(self.env, shared.collect_policy, 6)
    convs = {}
    for name, agent in (('shared', shared), ('separate', separate)):
      processed = agent._preprocess(experience)  # pylint: disable=protected-access
      rows = agent._training_rows(  # pylint: disable=protected-access
          processed, tf.ones_like(processed.reward))
      loss = tf.function(lambda rows, agent=agent: agent._minibatch_loss(  # pylint: disable=protected-access
          rows)[0].loss)
      convs[name] = count_ops(loss.get_concrete_function(rows), 'Conv2D')
    self.assertEqual(convs, {'shared': len(CONV), 'separate': 2 * len(CONV)})

  def test_actor_and_value_match_each_network_called_alone(self):
    agent = self.build_agent()
    observations = self.env.reset().observation
    step_types = tf.fill([2], ts.StepType.FIRST)
    distribution, values = shared_torso.actor_and_value(
        agent.actor_net, agent._value_net, observations, step_types)  # pylint: disable=protected-access
    alone, _ = agent.actor_net(observations, step_types)
    values_alone, _ = agent.collect_policy.apply_value_network(
        observations, step_types)
    self.assertAllClose(distribution.logits, alone.logits)
    self.assertAllClose(values, values_alone)

  def test_the_torso_receives_the_policy_and_both_value_gradients(self):
    agent = self.build_agent()
    experience = rollout(self.env, agent.collect_policy, 6)
    torso = agent.actor_net.torso.trainable_variables
    observations, step_types = experience.observation, experience.step_type
    old_values = agent.collect_policy.apply_value_network(observations,
                                                          step_types)[0]
    returns = {head: value + 1.0 for head, value in old_values.items()}
    weights = tf.ones_like(experience.reward)

    def torso_gradient_norms(loss_fn):
      with tf.GradientTape() as tape:
        loss = loss_fn()
      return [float(tf.norm(g)) if g is not None else 0.0
              for g in tape.gradient(loss, torso)]

    def networks():
      return shared_torso.actor_and_value(
          agent.actor_net, agent._value_net, observations, step_types,  # pylint: disable=protected-access
          training=True)

    def policy_loss():
      log_probs = common.log_probability(networks()[0], experience.action,
                                         agent.action_spec)
      advantages = tf.random.stateless_normal(weights.shape, seed=(1, 2))
      return -tf.reduce_mean(log_probs * advantages)

    def head_loss(head):
      return lambda: maths.value_loss(returns[head], networks()[1][head],
                                      weights)

    for name, loss_fn in (('policy', policy_loss),
                          ('extrinsic', head_loss('extrinsic')),
                          ('intrinsic', head_loss('intrinsic'))):
      norms = torso_gradient_norms(loss_fn)
      self.assertLen(norms, 6)
      self.assertTrue(all(n > 0.0 for n in norms), f'{name}: {norms}')

    before = [v.numpy() for v in torso]
    agent.train(experience)
    for old, variable in zip(before, torso):
      self.assertNotAllClose(old, variable.numpy())

  def test_stock_ppo_clip_agent_trains_on_a_shared_torso(self):
    observation_spec = self.env.observation_spec()
    torso = shared_torso.make_torso(
        observation_spec,
        preprocessing_layers=ppo.observation_preprocessing(observation_spec,
                                                           1.0 / 255),
        conv_layer_params=CONV, fc_layer_params=(16,))
    actor_net = shared_torso.ActorHeadNetwork(torso, self.env.action_spec(),
                                              fc_layer_params=(8,))
    value_net = shared_torso.ValueHeadNetwork(torso, fc_layer_params=(8,))
    self.assertEqual(value_net.create_variables(observation_spec),
                     tensor_spec.TensorSpec([], tf.float32))
    agent = ppo_clip_agent.PPOClipAgent(
        self.env.time_step_spec(), self.env.action_spec(),
        optimizer=tf.keras.optimizers.Adam(1e-2), actor_net=actor_net,
        value_net=value_net, num_epochs=2, normalize_observations=False,
        normalize_rewards=False, train_step_counter=tf.Variable(0))
    agent.initialize()
    experience = rollout(self.env, agent.collect_policy, 6)
    before = [v.numpy() for v in torso.trainable_variables]
    loss = agent.train(experience).loss
    self.assertTrue(np.isfinite(loss.numpy()))
    for old, variable in zip(before, torso.trainable_variables):
      self.assertNotAllClose(old, variable.numpy())

  def test_saved_policy_of_a_shared_torso_acts_as_the_agent(self):
    agent = self.build_agent()
    path = os.path.join(self.get_temp_dir(), 'collect_policy')
    policy_saver.PolicySaver(agent.collect_policy, batch_size=None).save(path)
    loaded = tf.saved_model.load(path)
    time_step = self.env.reset()
    expected = agent.collect_policy.distribution(time_step).info
    saved = loaded.distribution(time_step).info
    self.assertAllClose(expected, saved)


class MontezumaAgentTest(tf.test.TestCase):
  test_session = None  # tf.test.TestCase's deprecated helper, not a test.

  def test_the_shipped_agent_trains_on_a_whole_rollout(self):
    # gin/ppo/montezuma.gin's agent (shared torso, 4 epochs x 4
    # minibatches) on one rollout of its shape: 8 envs x 128 steps of uint8
    # 84x84x4 frames (fake images instead of ALE). At this size Grappler
    # turned the loss sums of each step into a TemporaryVariable
    # accumulator, and the second `train` call failed with ALREADY_EXISTS
    # (with both gin files, shared torso or not).
    gin.clear_config()
    self.addCleanup(gin.clear_config)
    config.parse_gin([os.path.join(REPO_ROOT, 'gin/ppo/montezuma.gin')], [])
    tf.random.set_seed(0)
    env = tf_py_environment.TFPyEnvironment(
        batched_py_environment.BatchedPyEnvironment(
            [fake_envs.load_image(seed=i, shape=(84, 84, 4))
             for i in range(8)], multithreading=False))
    agent = ppo.ppo_clip_agent(
        time_step_spec=env.time_step_spec(), action_spec=env.action_spec(),
        train_step_counter=tf.Variable(0, dtype=tf.int64))
    self.assertIsInstance(agent.actor_net, shared_torso.ActorHeadNetwork)
    experience = rollout(env, agent.collect_policy, 128)
    train = tf.function(agent.train, autograph=False)
    for _ in range(2):
      self.assertTrue(np.isfinite(train(experience).loss.numpy()))
    self.assertEqual(int(agent.train_step_counter), 2 * 16)


if __name__ == '__main__':
  tf.test.main()
