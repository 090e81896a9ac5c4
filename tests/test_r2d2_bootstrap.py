"""R2D2 with bootstrapped heads and random priors (agents/bootstrap)."""

import numpy as np
import tensorflow as tf
from tf_agents.specs import tensor_spec
from tf_agents.trajectories import time_step as ts

from tfa_explore import errors
from tfa_explore.agents import bootstrap
from tfa_explore.agents.bootstrap import ensemble
from tfa_explore.agents.r2d2 import agent as r2d2_agent
from tfa_explore.agents.r2d2 import learning
from tfa_explore.experiments import bootstrap as bootstrap_gin
from tfa_explore.experiments.r2d2 import builder
from tfa_explore.networks import ensemble_q_network
from tfa_explore.networks import recurrent_dueling_q_network as rdqn
from tfa_explore.testing import r2d2 as support

F, M, L = 0, 1, 2  # StepType FIRST, MID, LAST
# burn-in 2, trace 4: T = 7; one episode ends at step 4, 5-6 are padding.
STEP_TYPES = [[M, M, M, M, L, M, M], [F, M, M, M, M, M, M]]
NUM_HEADS = 3


def _network(env=None, prior_scale=2.0, num_heads=NUM_HEADS):
  env = env or support.counting_env()
  time_step_spec = tensor_spec.from_spec(env.time_step_spec())
  action_spec = tensor_spec.from_spec(env.action_spec())
  network = ensemble_q_network.EnsembleQNetwork(
      rdqn.make_input_spec(time_step_spec.observation, action_spec),
      action_spec, torso_fc_layer_params=(8,), lstm_size=8,
      dueling_fc_layer_params=(8,), num_heads=num_heads,
      prior_scale=prior_scale, head_fc_layer_params=(8,),
      prior_fc_layer_params=(8,))
  network.create_variables()
  return network


def _agent(mask_probability=1.0, epsilon=0.0, **kwargs):
  env = support.counting_env()
  kwargs.setdefault('optimizer', tf.keras.optimizers.Adam(1e-2))
  kwargs.setdefault('train_step_counter', tf.Variable(0, dtype=tf.int64))
  agent = r2d2_agent.R2D2Agent(
      env.time_step_spec(), env.action_spec(), _network(env),
      sequence_config=support.SMALL_CONFIG, n_step=2, gamma=0.9,
      exploration=bootstrap.BootstrappedHeads(mask_probability, epsilon),
      **kwargs)
  agent.initialize()
  return agent


def _inputs(network, outer):
  return tf.nest.map_structure(
      lambda s: tf.ones(outer + tuple(s.shape), s.dtype),
      network.input_tensor_spec)


class EnsembleQNetworkTest(support.TestCase):

  def test_heads_share_the_core_and_differ_by_prior(self):
    network = _network()
    inputs = _inputs(network, (3, 5))
    q_values, state = network(inputs)
    heads, heads_state = network.q_heads(inputs)
    self.assertAllClose(q_values, heads[rdqn.EXTRINSIC])
    self.assertAllClose(state, heads_state)
    members = heads[ensemble_q_network.ENSEMBLE]
    self.assertEqual(members.shape, (3, 5, NUM_HEADS, 2))
    self.assertNotAllClose(members[:, :, 0], members[:, :, 1])
    # One step without a time dimension: [B, K, A].
    step, _ = network.q_heads(_inputs(network, (3,)))
    self.assertEqual(step[ensemble_q_network.ENSEMBLE].shape,
                     (3, NUM_HEADS, 2))

  def test_the_prior_is_not_trained_and_adds_prior_scale_times_itself(self):
    network = _network(prior_scale=2.0)
    no_prior = _network(prior_scale=0.0)
    no_prior.set_weights(network.get_weights())
    trainable = {v.name for v in network.trainable_variables}
    self.assertFalse(any('prior' in name for name in trainable))
    self.assertTrue(any('prior' in v.name
                        for v in network.non_trainable_variables))
    inputs = _inputs(network, (2, 4))
    with_prior = network.q_heads(inputs)[0][ensemble_q_network.ENSEMBLE]
    without = no_prior.q_heads(inputs)[0][ensemble_q_network.ENSEMBLE]
    half = _network(prior_scale=1.0)
    half.set_weights(network.get_weights())
    with_half = half.q_heads(inputs)[0][ensemble_q_network.ENSEMBLE]
    self.assertNotAllClose(with_prior, without)
    self.assertAllClose(with_prior - without, 2.0 * (with_half - without),
                        atol=1e-5)

  def test_bad_sizes_are_refused(self):
    with self.assertRaisesRegex(ValueError, 'num_heads'):
      _network(num_heads=1)
    with self.assertRaisesRegex(ValueError, 'prior_scale'):
      _network(prior_scale=-1.0)


class HeadFollowingPolicyTest(support.TestCase):

  def _steps(self, policy, step_types, batch_size=4):
    env_spec = policy.time_step_spec
    state = policy.get_initial_state(batch_size)
    steps = []
    for step_type in step_types:
      time_step = ts.TimeStep(
          step_type=tf.fill([batch_size], tf.constant(step_type, tf.int32)),
          reward=tf.zeros([batch_size]), discount=tf.ones([batch_size]),
          observation=tf.ones([batch_size] + env_spec.observation.shape,
                              env_spec.observation.dtype))
      step = policy.action(time_step, state)
      steps.append((time_step, state, step))
      state = step.state
    return steps

  def test_one_head_per_episode_and_its_greedy_action(self):
    tf.random.set_seed(1)
    agent = _agent()
    policy = agent.exploration.exploring_policy(agent)
    steps = self._steps(policy, [F, M, M, F, M] * 4, batch_size=8)
    heads = np.stack([s.state[ensemble.ENSEMBLE_HEAD].numpy()
                      for _, _, s in steps])
    for episode in range(0, 20, 5):  # kept within an episode ...
      self.assertTrue((heads[episode:episode + 3] == heads[episode]).all())
    self.assertGreater(len(np.unique(heads)), 1)  # ... drawn anew at FIRST
    for time_step, state, step in steps:
      info = step.info
      values = agent.q_network.q_heads(
          {rdqn.OBSERVATION_KEY: time_step.observation,
           rdqn.PREV_ACTION_KEY: info['prev_action'],
           rdqn.PREV_REWARD_KEY: info['prev_reward']},
          step_type=time_step.step_type,
          network_state=state['network_state'])[0][
              ensemble_q_network.ENSEMBLE]
      head = step.state[ensemble.ENSEMBLE_HEAD]
      expected = tf.argmax(tf.gather(values, head, axis=1, batch_dims=1),
                           axis=-1)
      self.assertAllEqual(step.action, expected)

  def test_bootstrap_masks_are_recorded_at_their_probability(self):
    tf.random.set_seed(2)
    agent = _agent(mask_probability=0.3)
    policy = agent.exploration.exploring_policy(agent)
    self.assertIn(ensemble.BOOTSTRAP_MASK, agent.collect_data_spec.policy_info)
    masks = np.stack([s.info[ensemble.BOOTSTRAP_MASK].numpy()
                      for _, _, s in self._steps(policy, [F] + [M] * 99,
                                                 batch_size=10)])
    self.assertEqual(masks.shape, (100, 10, NUM_HEADS))
    self.assertSetEqual(set(np.unique(masks)), {0.0, 1.0})
    self.assertAllClose(masks.mean(), 0.3, atol=0.05)
    # Without masks nothing is stored.
    self.assertNotIn(ensemble.BOOTSTRAP_MASK,
                     _agent().collect_data_spec.policy_info)


class BootstrappedHeadsLossTest(support.TestCase):

  def _expected(self, agent, trajectory, mask=None):
    """Per head, its 1-step TD errors alone (Q_E's n is 2), then the mean."""
    errors_ = agent.td_errors(trajectory)
    online = errors_.online_heads[ensemble_q_network.ENSEMBLE]
    target = errors_.target_heads[ensemble_q_network.ENSEMBLE]
    burn_in = agent.sequence_config.burn_in_steps
    losses, priority_errors = [], []
    for k in range(NUM_HEADS):
      head_errors = learning.n_step_td_errors(
          trajectory.reward[:, burn_in:], trajectory.discount[:, burn_in:],
          online[:, :, k], target[:, :, k],
          tf.gather(online[:, :, k], errors_.actions, axis=-1, batch_dims=2),
          errors_.step_mask, agent.td_settings, (1,), 0.9)[1]
      valid = head_errors.valid
      if mask is not None:
        valid = tf.logical_and(valid, mask[:, burn_in:, k] > 0)
      head_errors = head_errors._replace(valid=valid)
      losses.append(agent.td_loss(head_errors, tf.ones([2])))
      priority_errors.append(tf.where(valid, tf.abs(head_errors.td_errors),
                                      0.0))
    return np.mean(losses), np.mean(priority_errors, axis=0)

  def test_loss_is_the_mean_of_each_heads_double_q_loss(self):
    agent = _agent()
    trajectory = support.random_sequences(agent, STEP_TYPES)
    errors_ = agent.td_errors(trajectory)
    result = agent.exploration_loss(trajectory, errors_, tf.ones([2]))
    loss, priority_errors = self._expected(agent, trajectory)
    self.assertAllClose(result.loss, loss, rtol=1e-5)
    self.assertAllClose(result.priority_errors, priority_errors, rtol=1e-5)
    self.assertGreater(loss, 0.0)

  def test_masked_steps_give_a_head_no_loss(self):
    agent = _agent(mask_probability=0.5)
    trajectory = support.random_sequences(agent, STEP_TYPES)
    mask = np.zeros([2, 7, NUM_HEADS], np.float32)
    mask[:, :, 0] = 1.0  # head 0 everywhere, head 1 on one step, head 2 none
    mask[1, 3, 1] = 1.0
    info = dict(trajectory.policy_info)
    info[ensemble.BOOTSTRAP_MASK] = tf.constant(mask)
    trajectory = trajectory._replace(policy_info=info)
    errors_ = agent.td_errors(trajectory)
    result = agent.exploration_loss(trajectory, errors_, tf.ones([2]))
    loss, _ = self._expected(agent, trajectory, mask)
    unmasked, _ = self._expected(agent, trajectory)
    self.assertAllClose(result.loss, loss, rtol=1e-5)
    self.assertNotAllClose(loss, unmasked)

  def test_train_steps_move_the_heads_and_leave_the_priors(self):
    agent = _agent(mask_probability=0.5)
    trajectory = support.random_sequences(agent, STEP_TYPES)
    network = agent.q_network
    priors = [v.numpy() for v in network.non_trainable_variables]
    heads = [v.numpy() for v in network.trainable_variables
             if 'ensemble_head' in v.name]
    first = agent.train(trajectory)
    for _ in range(20):
      last = agent.train(trajectory)
    self.assertLess(float(last.extra.exploration_loss),
                    float(first.extra.exploration_loss))
    for before, variable in zip(priors, network.non_trainable_variables):
      self.assertAllEqual(before, variable)
    moved = [v for v in network.trainable_variables
             if 'ensemble_head' in v.name]
    self.assertTrue(any(not np.allclose(b, v) for b, v in zip(heads, moved)))
    # The target network holds the same priors (copied, not redrawn).
    for online, target in zip(network.non_trainable_variables,
                              agent.target_q_network.non_trainable_variables):
      self.assertAllEqual(online, target)


class FactoryTest(support.TestCase):

  def _build(self, q_network_fn):
    env = support.counting_env()
    return builder.r2d2_agent_fn(
        env.time_step_spec(), env.action_spec(),
        tf.Variable(0, dtype=tf.int64),
        exploration=lambda **_: bootstrap.BootstrappedHeads(0.5),
        q_network_fn=q_network_fn, **support.FACTORY_KWARGS)

  def test_the_gin_factories_build_the_agent(self):
    def network_fn(input_spec, action_spec, **kwargs):
      return bootstrap_gin.ensemble_q_network.__wrapped__(
          input_spec, action_spec, num_heads=4, prior_scale=1.0,
          head_fc_layer_params=(8,), prior_fc_layer_params=(8,), **kwargs)
    agent = self._build(network_fn)
    self.assertIsInstance(agent.q_network, ensemble_q_network.EnsembleQNetwork)
    self.assertEqual(agent.q_network.num_heads, 4)
    self.assertFalse(agent.q_network.has_intrinsic_head)

  def test_bootstrapped_heads_without_an_ensemble_is_a_config_error(self):
    with self.assertRaisesRegex(errors.ConfigError, 'EnsembleQNetwork'):
      self._build(None)

  def test_every_actor_env_gets_the_components_epsilon(self):
    agent = _agent()
    self.assertEqual(agent.actor_epsilons(1, 2, envs_per_actor=3), [0.0] * 3)
    agent = _agent(epsilon=0.01)
    collect = agent.actor_collect_policy(0, 1, envs_per_actor=4)
    self.assertAllClose(collect.epsilon, [0.01] * 4)
    # Without the component: Ape-X's schedule over the slots.
    plain = support.make_agent()
    self.assertAllClose(plain.actor_epsilons(0, 1, envs_per_actor=4),
                        [0.4, 0.4**(1 + 7 / 3), 0.4**(1 + 14 / 3), 0.4**8])

  def test_the_heads_n_is_the_components_not_the_agents(self):
    agent = _agent()
    trajectory = support.random_sequences(agent, STEP_TYPES)
    errors_ = agent.td_errors(trajectory)
    one_step = agent.exploration_loss(trajectory, errors_, tf.ones([2]))
    agent._exploration._n_step = 2  # pylint: disable=protected-access
    two_step = agent.exploration_loss(trajectory, errors_, tf.ones([2]))
    self.assertNotAllClose(one_step.loss, two_step.loss)

  def test_a_bad_mask_probability_is_refused(self):
    with self.assertRaisesRegex(ValueError, 'mask_probability'):
      bootstrap.BootstrappedHeads(mask_probability=0.0)
    with self.assertRaisesRegex(ValueError, 'epsilon'):
      bootstrap.BootstrappedHeads(epsilon=1.5)
    with self.assertRaisesRegex(ValueError, 'n_step'):
      bootstrap.BootstrappedHeads(n_step=0)


if __name__ == '__main__':
  tf.test.main()
