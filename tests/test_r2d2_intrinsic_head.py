"""R2D2 with an intrinsic Q head: Q_E and Q_I learnt apart, acted on mixed."""

import numpy as np
import tensorflow as tf
from tf_agents.specs import tensor_spec
from tf_agents.trajectories import time_step as ts

from tfa_explore.agents.r2d2 import learning
from tfa_explore.agents.r2d2 import losses
from tfa_explore.agents.r2d2_intrinsic import q_bonus
from tfa_explore.agents.r2d3 import agent as r2d3_agent
from tfa_explore.experiments.r2d2 import builder
from tfa_explore.networks import recurrent_dueling_q_network as rdqn
from tfa_explore.testing import r2d2 as support
from tfa_explore.testing import r2d3 as r2d3_support

F, M, L = 0, 1, 2  # StepType FIRST, MID, LAST
# burn-in 2, trace 4: T = 7; one episode ends at step 4, 5-6 are padding.
STEP_TYPES = [[M, M, M, M, L, M, M], [F, M, M, M, M, M, M]]
COEF = 3.0


def _agent(**kwargs):
  return support.make_agent(exploration=support.rnd_bonus(coef=COEF),
                            n_step=2, **kwargs)


def _tilt(network, extrinsic_advantages, intrinsic_advantages):
  """Q_E and Q_I fixed to given advantages (any input): outputs 0 + bias.

  Decides each head's argmax, and so the mix's, whatever the inputs.
  """
  # pylint: disable=protected-access
  value_layers, advantage_layers = network._intrinsic_layers
  for layer, bias in ((network._value_layers[-1], [0.0]),
                      (network._advantage_layers[-1], extrinsic_advantages),
                      (value_layers[-1], [0.0]),
                      (advantage_layers[-1], intrinsic_advantages)):
    layer.kernel.assign(tf.zeros_like(layer.kernel))
    layer.bias.assign(bias)


class NetworkTest(support.TestCase):

  def _network(self, intrinsic_head):
    env = support.counting_env()
    network = support.small_network(env.time_step_spec(), env.action_spec(),
                                    intrinsic_head=intrinsic_head)
    network.create_variables()
    return network

  def test_call_is_the_extrinsic_head_and_both_heads_share_one_core(self):
    network = self._network(intrinsic_head=True)
    inputs = tf.nest.map_structure(
        lambda s: tf.ones((3, 5) + tuple(s.shape), s.dtype),
        network.input_tensor_spec)
    q_values, state = network(inputs)
    heads, heads_state = network.q_heads(inputs)
    self.assertAllClose(q_values, heads[rdqn.EXTRINSIC])
    self.assertEqual(heads[rdqn.INTRINSIC].shape, q_values.shape)
    self.assertNotAllClose(heads[rdqn.INTRINSIC], heads[rdqn.EXTRINSIC])
    self.assertAllClose(state, heads_state)
    # create_variables built the intrinsic head: the target copy and the
    # checkpoint hold it.
    names = [v.name for v in network.trainable_variables]
    self.assertTrue(any('intrinsic_advantage' in name for name in names))
    plain = self._network(intrinsic_head=False)
    # Two more layers per stream (dueling_fc (8,) and the output), 2 each.
    self.assertLen(network.trainable_variables,
                   len(plain.trainable_variables) + 8)

  def test_q_heads_of_a_plain_network_is_its_call(self):
    network = self._network(intrinsic_head=False)
    inputs = tf.nest.map_structure(
        lambda s: tf.ones((1,) + tuple(s.shape), s.dtype),
        network.input_tensor_spec)
    heads, _ = network.q_heads(inputs)
    self.assertEqual(set(heads), {rdqn.EXTRINSIC})
    self.assertAllClose(heads[rdqn.EXTRINSIC], network(inputs)[0])


class TdErrorsTest(support.TestCase):

  def test_each_head_has_its_reward_and_its_argmax(self):
    agent = _agent()
    bonus = agent.exploration
    sequences = support.random_sequences(agent, STEP_TYPES, seed=3)
    # Q_E picks action 0, Q_I action 1, their mix action 0.
    _tilt(agent.q_network, [0.3, 0.0], [0.0, 0.05])
    errors = agent.td_errors(sequences)
    settings = agent.td_settings
    online = learning.unroll(agent.q_network, sequences, 2)
    target = learning.unroll(agent.target_q_network, sequences, 2)
    e, i = rdqn.EXTRINSIC, rdqn.INTRINSIC
    mask = learning.step_mask(sequences.step_type)[:, 2:]
    common = dict(num_steps=2, gamma=settings.gamma, step_mask=mask)
    extrinsic = losses.n_step_double_q_targets(
        sequences.reward[:, 2:], sequences.discount[:, 2:],
        online[e], target[e], **common)
    exploring = q_bonus.mixed_action_values(online[e], online[i], COEF)
    # Q_I discounts by the reward's gamma_I, not Q_E's gamma.
    gamma_i = bonus.reward.stream.discount
    self.assertNotEqual(gamma_i, settings.gamma)
    intrinsic_common = dict(common, gamma=gamma_i)
    r_i = bonus.intrinsic_rewards(agent, sequences)
    self.assertGreater(float(tf.reduce_max(r_i)), 0.0)
    intrinsic_targets = losses.n_step_double_q_targets(
        r_i[:, 2:], sequences.discount[:, 2:], exploring, target[i],
        **intrinsic_common)
    self.assertAllClose(errors.by_n_step[2].targets, extrinsic.targets)
    selected = tf.gather(online[i], errors.actions, axis=-1, batch_dims=2)
    intrinsic_errors = tf.where(intrinsic_targets.valid,
                                intrinsic_targets.targets - selected, 0.0)
    weights = tf.constant([1.0, 0.5])
    loss = bonus.loss(agent, sequences, errors, weights)
    self.assertAllClose(loss.loss, losses.masked_td_loss(
        intrinsic_errors, intrinsic_targets.valid, weights))
    self.assertAllClose(loss.priority_errors,
                        COEF * tf.abs(intrinsic_errors))
    # The exploring argmax differs from Q_I's own, so the test tells
    # them apart.
    self.assertNotAllEqual(tf.argmax(exploring, -1),
                           tf.argmax(online[i], -1))
    self.assertNotAllClose(
        intrinsic_targets.targets,
        losses.n_step_double_q_targets(
            r_i[:, 2:], sequences.discount[:, 2:], online[i],
            target[i], **intrinsic_common).targets)
    # Q_E's errors do not see r_i: those of a plain agent's unroll.
    self.assertAllClose(errors.by_n_step[2].targets, extrinsic.targets)


class AgentTest(support.TestCase):

  def test_train_leaves_r_e_alone_and_trains_both_heads(self):
    agent = _agent()
    sequences = support.random_sequences(agent, STEP_TYPES, seed=4)
    variables = {v.name: v.numpy() for v in agent.q_network.variables}
    loss_info = agent.train(sequences)
    extra = loss_info.extra
    self.assertGreater(float(extra.exploration_loss), 0.0)
    self.assertAllClose(loss_info.loss,
                        extra.td_loss + extra.exploration_loss)
    for v in agent.q_network.trainable_variables:
      self.assertNotAllClose(v, variables[v.name], msg=v.name)

  def test_xla_gives_the_same_step(self):
    losses_by_path = []
    for jit_compile in (False, True):
      tf.keras.utils.set_random_seed(2)
      agent = _agent(jit_compile=jit_compile)
      sequences = support.random_sequences(agent, STEP_TYPES, seed=7)
      losses_by_path.append(agent.train(sequences).extra)
    plain, compiled = losses_by_path
    self.assertAllClose(plain.exploration_loss, compiled.exploration_loss,
                        atol=1e-5)
    self.assertAllClose(plain.priorities, compiled.priorities, atol=1e-5)

  def test_priorities_add_the_intrinsic_errors(self):
    agent = _agent()
    sequences = support.random_sequences(agent, STEP_TYPES, seed=5)
    errors = agent.td_errors(sequences)
    n_step = errors.by_n_step[2]
    bonus_loss = agent.exploration_loss(sequences, errors, tf.ones([2]))
    abs_errors = tf.abs(n_step.td_errors) + bonus_loss.priority_errors
    loss_info = agent.loss(sequences)
    self.assertAllClose(
        loss_info.extra.priorities,
        losses.sequence_priorities(abs_errors, n_step.valid, eta=0.9))
    self.assertNotAllClose(loss_info.extra.priorities,
                           agent.sequence_priorities(n_step))

  def test_greedy_policy_is_extrinsic_and_actors_act_on_the_mix(self):
    agent = _agent(collect_epsilon=0.0)
    # Q_E picks action 0; Q_I and the mix action 1.
    _tilt(agent.q_network, [0.3, 0.0], [0.0, 0.2])
    env_time_step = tf.nest.map_structure(
        lambda s: tf.ones((64,) + tuple(s.shape), s.dtype),
        agent.time_step_spec)
    env_time_step = env_time_step._replace(
        step_type=tf.fill([64], ts.StepType.FIRST),
        observation=tf.random.stateless_normal(
            [64] + agent.time_step_spec.observation.shape.as_list(), [1, 2]))
    state = agent.policy.get_initial_state(64)
    greedy = agent.policy.action(env_time_step, state).action
    collect = agent.collect_policy.action(env_time_step, state).action
    # The actors' greedy part (actor 0's epsilon is 0.4).
    actor = agent.actor_collect_policy(0, 1)._greedy_policy.action(  # pylint: disable=protected-access
        env_time_step, state).action
    inputs = {rdqn.OBSERVATION_KEY: env_time_step.observation,
              rdqn.PREV_ACTION_KEY: tf.zeros([64], tf.int64),
              rdqn.PREV_REWARD_KEY: tf.zeros([64])}
    heads, _ = agent.q_network.q_heads(inputs,
                                       step_type=env_time_step.step_type)
    minimum = int(agent.action_spec.minimum)
    self.assertAllEqual(greedy,
                        tf.argmax(heads[rdqn.EXTRINSIC], -1) + minimum)
    mixed = tf.argmax(q_bonus.mixed_action_values(
        heads[rdqn.EXTRINSIC], heads[rdqn.INTRINSIC], COEF), -1) + minimum
    self.assertAllEqual(collect, mixed)
    self.assertAllEqual(actor, mixed)
    self.assertNotAllEqual(greedy, mixed)

  def test_intrinsic_td_loss_is_written(self):
    agent = _agent()
    sequences = support.random_sequences(agent, STEP_TYPES, seed=9)
    logdir = self.get_temp_dir()
    with tf.summary.create_file_writer(logdir).as_default():
      agent.train(sequences)
    self.assertContainsSubset(
        {'Losses/td_loss', 'Losses/intrinsic_td_loss',
         'Intrinsic/reward_normalized_mean'}, support.summary_tags(logdir))

  def test_r2d3_trains_both_heads(self):
    agent = r2d3_support.make_agent(
        n_step=2, exploration=support.rnd_bonus(coef=COEF))
    sequences = support.random_sequences(agent, STEP_TYPES, seed=6)
    experience = r2d3_agent.MixedSequences(
        sequences, None, tf.constant([True, False]))
    extra = agent.train(experience).extra
    self.assertGreater(float(extra.exploration_loss), 0.0)
    self.assertAllClose(
        extra.total_loss,
        extra.ntd_loss + extra.td1_loss + extra.margin_loss +
        1e-5 * extra.l2_loss + extra.exploration_loss, rtol=1e-5)


class FactoryTest(support.TestCase):

  def test_factory_builds_the_head_with_a_bonus(self):
    env = support.counting_env()
    specs = (tensor_spec.from_spec(env.time_step_spec()),
             tensor_spec.from_spec(env.action_spec()))
    kwargs = support.FACTORY_KWARGS
    agent = builder.r2d2_agent_fn(
        *specs, train_step_counter=tf.Variable(0, dtype=tf.int64),
        exploration=lambda observation_spec, action_spec: (
            support.rnd_bonus(coef=COEF)), **kwargs)
    self.assertTrue(agent.q_network.has_intrinsic_head)
    self.assertTrue(agent.target_q_network.has_intrinsic_head)
    plain = builder.r2d2_agent_fn(
        *specs, train_step_counter=tf.Variable(0, dtype=tf.int64), **kwargs)
    self.assertFalse(plain.q_network.has_intrinsic_head)


if __name__ == '__main__':
  tf.test.main()
