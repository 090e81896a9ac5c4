"""EpochLoopPPOClipAgent: PPOClipAgent's updates, epochs in a graph loop."""

import functools

import tensorflow as tf
from tf_agents.agents.ppo import ppo_clip_agent
from tf_agents.networks import actor_distribution_network
from tf_agents.networks import value_network
from tf_agents.specs import tensor_spec

from tfa_explore.agents import EpochLoopPPOClipAgent
from tfa_explore.environments import batched
from tfa_explore.experiments import on_policy
from tfa_explore.testing import fake_envs

NUM_ENVS = 3
ROLLOUT_LENGTH = 6


def _variables(agent):
  return agent.actor_net.variables + agent._value_net.variables  # pylint: disable=protected-access


class _TestCase(tf.test.TestCase):
  # tf.test.TestCase.test_session is a deprecated helper, not a test.
  test_session = None


class EpochLoopPPOClipAgentTest(_TestCase):

  def setUp(self):
    super().setUp()
    loader = functools.partial(fake_envs.load_counting, episode_length=4)
    self.env = batched.make_batched_env(loader, NUM_ENVS, seed=0)
    self.addCleanup(self.env.close)
    self.time_step_spec = tensor_spec.from_spec(self.env.time_step_spec())
    self.action_spec = tensor_spec.from_spec(self.env.action_spec())

  def _agent(self, agent_class, num_epochs=3):
    """`agent_class` on fresh MLPs, with TF-Agents' own normalisers on."""
    observation_spec = self.time_step_spec.observation
    actor_net = actor_distribution_network.ActorDistributionNetwork(
        observation_spec, self.action_spec, fc_layer_params=(8,),
        activation_fn=tf.keras.activations.tanh)
    value_net = value_network.ValueNetwork(
        observation_spec, fc_layer_params=(8,),
        activation_fn=tf.keras.activations.tanh)
    agent = agent_class(
        self.time_step_spec, self.action_spec,
        optimizer=tf.keras.optimizers.Adam(1e-2, epsilon=1e-5),
        actor_net=actor_net, value_net=value_net, greedy_eval=True,
        importance_ratio_clipping=0.2, lambda_value=0.95,
        discount_factor=0.99, entropy_regularization=0.01,
        value_pred_loss_coef=0.5, num_epochs=num_epochs, use_gae=True,
        normalize_observations=True, normalize_rewards=True,
        gradient_clipping=0.5,
        train_step_counter=tf.Variable(0, dtype=tf.int64))
    agent.initialize()
    return agent

  def test_same_updates_as_ppo_clip_agent(self):
    stock = self._agent(ppo_clip_agent.PPOClipAgent)
    looped = self._agent(EpochLoopPPOClipAgent)
    for source, target in zip(_variables(stock), _variables(looped)):
      target.assign(source)
    collector = on_policy.RolloutCollector(self.env, stock.collect_policy,
                                           ROLLOUT_LENGTH)
    for _ in range(2):
      experience = collector.collect()
      stock_loss = tf.function(stock.train)(experience)
      looped_loss = tf.function(looped.train)(experience)
      # PPOAgent returns the last epoch's loss, and so does the loop.
      self.assertAllClose(stock_loss.loss, looped_loss.loss, rtol=1e-5)
    self.assertEqual(int(stock.train_step_counter), 6)
    self.assertEqual(int(looped.train_step_counter), 6)
    for expected, actual in zip(_variables(stock), _variables(looped)):
      self.assertAllClose(expected, actual, rtol=1e-5, atol=1e-6)

  def test_advantages_are_whitened_unless_switched_off(self):
    agent = self._agent(EpochLoopPPOClipAgent)
    collector = on_policy.RolloutCollector(self.env, agent.collect_policy,
                                           ROLLOUT_LENGTH)
    processed = agent._preprocess(  # pylint: disable=protected-access
        agent._as_trajectory(collector.collect()))  # pylint: disable=protected-access
    weights = tf.ones_like(processed.reward)
    whitened = agent._training_rows(processed, weights)['advantages']  # pylint: disable=protected-access
    self.assertAllClose(tf.reduce_mean(whitened), 0.0, atol=1e-5)
    self.assertAllClose(tf.math.reduce_std(whitened), 1.0, atol=1e-3)
    agent._normalize_advantages = False  # pylint: disable=protected-access
    raw = agent._training_rows(processed, weights)['advantages']  # pylint: disable=protected-access
    self.assertAllClose(raw, processed.policy_info['advantage'])
    self.assertNotAllClose(raw, whitened)

  def test_optimizer_slots_exist_before_train_so_train_traces_once(self):
    agent = self._agent(EpochLoopPPOClipAgent, num_epochs=2)
    trained = agent.actor_net.trainable_weights + (
        agent._value_net.trainable_weights)  # pylint: disable=protected-access
    # Adam: the iteration counter, then m and v for every trained variable.
    self.assertLen(agent._optimizer.variables, 1 + 2 * len(trained))  # pylint: disable=protected-access
    collector = on_policy.RolloutCollector(self.env, agent.collect_policy,
                                           ROLLOUT_LENGTH)
    train = tf.function(agent.train)
    for _ in range(2):
      train(collector.collect())
    self.assertEqual(train.experimental_get_tracing_count(), 1)

  def test_graph_size_does_not_grow_with_epochs(self):
    collector_agent = self._agent(EpochLoopPPOClipAgent, num_epochs=1)
    experience = on_policy.RolloutCollector(
        self.env, collector_agent.collect_policy, ROLLOUT_LENGTH).collect()

    def graph_size(num_epochs):
      agent = self._agent(EpochLoopPPOClipAgent, num_epochs=num_epochs)
      graph = tf.function(agent.train).get_concrete_function(
          experience).graph
      return len(graph.as_graph_def().node)

    self.assertEqual(graph_size(2), graph_size(16))


if __name__ == '__main__':
  tf.test.main()
