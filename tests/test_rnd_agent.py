"""RndPPOAgent on a tiny fake environment: training, RND component, saving."""

import glob
import os

import numpy as np
import tensorflow as tf
from tf_agents.agents.ppo import ppo_clip_agent
from tf_agents.agents.ppo import ppo_policy
from tf_agents.drivers import dynamic_step_driver
from tf_agents.environments import batched_py_environment
from tf_agents.environments import tf_py_environment
from tf_agents.networks import actor_distribution_network
from tf_agents.networks import value_network
from tf_agents.policies import policy_saver
from tf_agents.replay_buffers import tf_uniform_replay_buffer
from tf_agents.train.utils import spec_utils
from tf_agents.trajectories import time_step as ts

from tfa_explore import agents
from tfa_explore import networks
from tfa_explore.agents import ppo_clip
from tfa_explore.agents import rnd_ppo
from tfa_explore.agents.intrinsic import maths as rnd_maths
from tfa_explore.agents.rnd_ppo import agent as agent_lib
from tfa_explore.environments import batched
from tfa_explore.experiments import warm_up as warm_up_lib
from tfa_explore.testing import fake_envs

NUM_ENVS = 4
ROLLOUT_LENGTH = 7


class _TestCase(tf.test.TestCase):
  # tf.test.TestCase.test_session is a deprecated helper, not a test.
  test_session = None


def make_env():
  # Envs 0, 1 terminate after 4 steps; envs 2, 3 are truncated after 3.
  envs = [fake_envs.load_counting(seed=i, episode_length=4,
                                  max_episode_steps=3 if i >= 2 else None)
          for i in range(NUM_ENVS)]
  return tf_py_environment.TFPyEnvironment(
      batched_py_environment.BatchedPyEnvironment(envs, multithreading=False))


def make_intrinsic_reward(observation_spec, **kwargs):
  """A small RndIntrinsicReward."""
  target_net, predictor_net = networks.rnd_mlp_networks(
      observation_spec, torso_fc_layer_params=(16,),
      predictor_fc_layer_params=(16,), output_dim=8)
  return rnd_ppo.RndIntrinsicReward(
      observation_spec, target_net=target_net, predictor_net=predictor_net,
      optimizer=tf.keras.optimizers.Adam(1e-2), **kwargs)


def make_agent(env, seed=0, intrinsic_settings=None, rnd=True, **kwargs):
  """A small RndPPOAgent (or with `rnd=False` its PPO twin) for `env`."""
  tf.random.set_seed(seed)
  observation_spec, action_spec, time_step_spec = spec_utils.get_tensor_specs(
      env)
  actor_net = actor_distribution_network.ActorDistributionNetwork(
      observation_spec, action_spec, fc_layer_params=(16,))
  value_net = networks.DualValueNetwork(observation_spec, fc_layer_params=(16,))
  intrinsic_reward = (make_intrinsic_reward(observation_spec,
                                            **(intrinsic_settings or {}))
                      if rnd else None)
  settings = dict(num_epochs=2, num_minibatches=2,
                  train_step_counter=tf.Variable(0, dtype=tf.int64))
  settings.update(kwargs)
  settings = {k: v for k, v in settings.items() if v is not None}
  return agents.RndPPOAgent(
      time_step_spec, action_spec,
      optimizer=tf.keras.optimizers.Adam(1e-3),
      actor_net=actor_net, value_net=value_net,
      intrinsic_reward=intrinsic_reward, **settings)


def collect(env, agent, rollout_length=ROLLOUT_LENGTH):
  buffer = tf_uniform_replay_buffer.TFUniformReplayBuffer(
      agent.collect_data_spec, batch_size=env.batch_size,
      max_length=rollout_length)
  dynamic_step_driver.DynamicStepDriver(
      env, agent.collect_policy, observers=[buffer.add_batch],
      num_steps=env.batch_size * rollout_length).run()
  return buffer.gather_all()


def values_of(variables):
  return [v.numpy().copy() for v in variables]


def read_scalars(logdir):
  """{tag: [values]} of the scalar summaries in `logdir`."""
  scalars = {}
  for path in glob.glob(os.path.join(logdir, 'events.*')):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        scalars.setdefault(value.tag, []).append(
            float(tf.make_ndarray(value.tensor)))
  return scalars


class OnePpoLineageTest(_TestCase):

  def test_without_an_intrinsic_reward_it_trains_as_epoch_loop_ppo_clip(self):
    # Two departures of the extrinsic stream are kept out of this batch: a
    # truncated episode bootstraps (PPOAgent's does not; test below), and
    # the rollout's last transition bootstraps from V(o_T), where
    # PPOAgent.compute_advantages takes V(o_{T-1}). So: terminations only,
    # and each row's last transition ends an episode (no bootstrap at all).
    env = tf_py_environment.TFPyEnvironment(
        batched_py_environment.BatchedPyEnvironment(
            [fake_envs.load_counting(seed=i, episode_length=4)
             for i in range(NUM_ENVS)], multithreading=False))
    observation_spec, action_spec, time_step_spec = (
        spec_utils.get_tensor_specs(env))
    tf.random.set_seed(0)
    actor_net = actor_distribution_network.ActorDistributionNetwork(
        observation_spec, action_spec, fc_layer_params=(16,))
    value_net = value_network.ValueNetwork(observation_spec,
                                           fc_layer_params=(16,))
    twin_actor_net = actor_net.copy(name='twin_actor')
    dual_value_net = networks.DualValueNetwork(observation_spec,
                                               fc_layer_params=(16,))
    for net in (actor_net, value_net, twin_actor_net, dual_value_net):
      net.create_variables(observation_spec)
    twin_actor_net.set_weights(actor_net.get_weights())
    dual_value_net._torso.set_weights(value_net._encoder.get_weights())  # pylint: disable=protected-access
    dual_value_net._extrinsic_head.set_weights(  # pylint: disable=protected-access
        value_net._postprocessing_layers.get_weights())  # pylint: disable=protected-access
    settings = dict(importance_ratio_clipping=0.2, lambda_value=0.95,
                    discount_factor=0.99, entropy_regularization=0.01,
                    value_pred_loss_coef=0.5, num_epochs=3,
                    normalize_observations=True)
    ppo = ppo_clip.EpochLoopPPOClipAgent(
        time_step_spec, action_spec, optimizer=tf.keras.optimizers.Adam(1e-2),
        actor_net=actor_net, value_net=value_net, use_gae=True,
        use_td_lambda_return=True, normalize_rewards=False,
        train_step_counter=tf.Variable(0, dtype=tf.int64), **settings)
    twin = agents.RndPPOAgent(
        time_step_spec, action_spec, optimizer=tf.keras.optimizers.Adam(1e-2),
        actor_net=twin_actor_net, value_net=dual_value_net,
        intrinsic_reward=None, train_step_counter=tf.Variable(0, tf.int64),
        **settings)
    for agent in (ppo, twin):
      agent.initialize()
    experience = collect(env, ppo, rollout_length=12)
    # The envs step in lockstep: cut the rows after the last termination.
    end = int(np.flatnonzero(
        experience.next_step_type[0].numpy() == ts.StepType.LAST)[-2]) + 2
    experience = tf.nest.map_structure(lambda t: t[:, :end], experience)
    self.assertAllEqual(experience.next_step_type[:, -2],
                        [ts.StepType.LAST] * NUM_ENVS)
    self.assertAllEqual(experience.discount[:, -2], [0.0] * NUM_ENVS)
    initial_actor_weights = actor_net.get_weights()
    for _ in range(3):
      ppo_loss = ppo.train(experience)
      twin_loss = twin.train(experience)
      self.assertAllClose(twin_loss.loss, ppo_loss.loss, rtol=1e-4,
                          atol=1e-5)
      self.assertAllClose(twin_loss.extra.policy_gradient_loss,
                          ppo_loss.extra.policy_gradient_loss,
                          rtol=1e-4, atol=1e-5)
      self.assertAllClose(twin_loss.extra.extrinsic_value_loss,
                          ppo_loss.extra.value_estimation_loss,
                          rtol=1e-4, atol=1e-5)
    self.assertEqual(int(twin.train_step_counter), 9)
    self.assertAllClose(twin_actor_net.get_weights(), actor_net.get_weights(),
                        rtol=1e-4, atol=1e-5)
    self.assertGreater(max(np.abs(a - b).max() for a, b in zip(
        actor_net.get_weights(), initial_actor_weights)), 1e-3)
    self.assertAllClose(
        dual_value_net._torso.get_weights(), value_net._encoder.get_weights(),  # pylint: disable=protected-access
        rtol=1e-4, atol=1e-5)
    self.assertAllClose(
        dual_value_net._extrinsic_head.get_weights(),  # pylint: disable=protected-access
        value_net._postprocessing_layers.get_weights(),  # pylint: disable=protected-access
        rtol=1e-4, atol=1e-5)


class RndPPOAgentTest(_TestCase):

  def setUp(self):
    super().setUp()
    self.env = make_env()
    self.agent = make_agent(self.env)
    self.rnd = self.agent.intrinsic_reward

  def test_is_a_ppo_clip_agent_with_stock_policies(self):
    self.assertIsInstance(self.agent, ppo_clip_agent.PPOClipAgent)
    self.assertIsInstance(self.agent, ppo_clip.EpochLoopPPOClipAgent)
    self.assertIs(type(self.agent.collect_policy), ppo_policy.PPOPolicy)
    self.assertIs(type(self.agent.policy.wrapped_policy),
                  ppo_policy.PPOPolicy)
    # Values are computed in train, so the collect policy records none.
    self.assertSameElements(self.agent.collect_policy.info_spec.keys(),
                            ['dist_params'])

  def test_preprocessing_adds_both_heads_values(self):
    experience = collect(self.env, self.agent)
    processed = self.agent._preprocess(experience)  # pylint: disable=protected-access
    info = processed.policy_info
    values, _ = self.agent.collect_policy.apply_value_network(
        experience.observation, experience.step_type)
    self.assertAllClose(info['value_prediction'], values['extrinsic'])
    self.assertAllClose(info['intrinsic_value_prediction'],
                        values['intrinsic'])
    self.assertEqual(info['intrinsic_return'].shape,
                     (NUM_ENVS, ROLLOUT_LENGTH))
    # Both truncation (discount 1 on LAST) and termination were collected.
    last = experience.next_step_type.numpy() == ts.StepType.LAST
    discounts = experience.discount.numpy()[last]
    self.assertIn(0.0, discounts)
    self.assertIn(1.0, discounts)

  def test_train_step_runs_and_writes_summaries(self):
    experience = collect(self.env, self.agent)
    logdir = self.get_temp_dir()
    writer = tf.summary.create_file_writer(logdir)
    with writer.as_default():
      loss_info = self.agent.train(experience)
    writer.flush()
    self.assertTrue(np.isfinite(loss_info.loss.numpy()))
    self.assertGreater(float(loss_info.extra.intrinsic_reward_loss), 0.0)
    # 2 epochs x 2 minibatches = 4 gradient steps.
    self.assertEqual(int(self.agent.train_step_counter), 4)
    scalars = read_scalars(logdir)
    for tag in ['Intrinsic/reward_raw_mean', 'Intrinsic/reward_raw_std',
                'Intrinsic/reward_raw_max', 'Intrinsic/reward_normalized_mean',
                'Intrinsic/reward_normalized_std',
                'Intrinsic/reward_normalized_max', 'Intrinsic/return_std',
                'Losses/intrinsic_reward_loss', 'Losses/extrinsic_value_loss',
                'Losses/intrinsic_value_loss', 'Losses/clip_fraction',
                'Losses/entropy', 'Losses/explained_variance_extrinsic',
                'Losses/explained_variance_intrinsic',
                'Normalizers/rnd_observation_mean',
                'Normalizers/rnd_observation_std']:
      self.assertIn(tag, scalars)
    # Every loss field is the mean over the 4 minibatches, written once.
    for name in agent_lib.RndPPOLossInfo._fields:
      self.assertLen(scalars[f'Losses/{name}'], 1)
      self.assertTrue(np.isfinite(scalars[f'Losses/{name}'][0]))
    self.assertBetween(float(loss_info.extra.clip_fraction), 0.0, 1.0)

  def test_train_under_tf_function(self):
    train = tf.function(self.agent.train)
    for _ in range(2):
      loss_info = train(collect(self.env, self.agent))
    self.assertTrue(np.isfinite(loss_info.loss.numpy()))
    self.assertEqual(int(self.agent.train_step_counter), 8)

  def test_train_traces_once_and_graph_does_not_grow_with_epochs(self):
    experience = collect(self.env, self.agent)

    def trace(num_epochs, num_minibatches):
      agent = make_agent(self.env, num_epochs=num_epochs,
                         num_minibatches=num_minibatches)
      agent.initialize()  # builds both optimizers' slots
      train = tf.function(agent.train)
      train(experience)
      train(experience)
      graph = train.get_concrete_function(experience).graph
      return (train.experimental_get_tracing_count(),
              len(graph.as_graph_def().node))

    small_traces, small_nodes = trace(1, 1)
    large_traces, large_nodes = trace(4, 4)
    self.assertEqual((small_traces, large_traces), (1, 1))
    self.assertEqual(small_nodes, large_nodes)

  def test_value_loss_per_head(self):
    processed = self.agent._preprocess(collect(self.env, self.agent))  # pylint: disable=protected-access
    info = processed.policy_info
    weights = tf.ones_like(info['return'])
    rows = self.agent._training_rows(processed, weights)  # pylint: disable=protected-access
    loss_info, _ = self.agent._minibatch_loss(rows)  # pylint: disable=protected-access
    values, _ = self.agent.collect_policy.apply_value_network(
        processed.observation, processed.step_type)
    for head, returns, loss in (
        ('extrinsic', info['return'], loss_info.extra.extrinsic_value_loss),
        ('intrinsic', info['intrinsic_return'],
         loss_info.extra.intrinsic_value_loss)):
      # value_pred_loss_coef 0.5 x mean squared error over every row.
      expected = 0.5 * np.mean(np.square(returns - values[head]))
      self.assertAllClose(loss, expected, rtol=1e-5)

  def test_extrinsic_stream_is_ppo_agents_but_truncation_bootstraps(self):
    # Two rows of one env: o_0 -> o_1 (LAST, truncated: discount 1) ->
    # o_2 (FIRST). gamma 0.999, lambda 0.95, rewards 1, values 10, 20, 30.
    next_time_steps = ts.TimeStep(
        step_type=tf.constant([[ts.StepType.LAST, ts.StepType.FIRST]]),
        reward=tf.constant([[1.0, 1.0]]),
        discount=tf.constant([[1.0, 1.0]]),
        observation=tf.zeros([1, 2, 1]))
    values = tf.constant([[10.0, 20.0, 30.0]])
    returns, advantages = self.agent.compute_return_and_advantage(
        next_time_steps, values)
    # Row 1 (boundary): 1 + 0.999 * 30 - 20 = 10.97 (masked in the loss).
    # Row 0: 1 + 0.999 * 20 - 10 = 10.98, its trace cut at LAST; PPOAgent
    # would give 1 - 10 = -9 (truncation as termination).
    self.assertAllClose(advantages, [[10.98, 10.97]], atol=1e-4)
    self.assertAllClose(returns, [[20.98, 30.97]], atol=1e-4)
    # Terminated (discount 0): PPOAgent's own figures.
    terminated = next_time_steps._replace(discount=tf.constant([[0.0, 1.0]]))
    _, advantages = self.agent.compute_return_and_advantage(terminated,
                                                            values)
    self.assertAllClose(advantages, [[-9.0, 10.97]], atol=1e-4)

  def test_gradients_reach_predictor_but_never_target(self):
    self.assertEmpty(self.rnd.target_net.trainable_variables)
    observations = tf.random.normal([5, 1])
    rnd_inputs = self.rnd.inputs(observations)
    target_variables = self.rnd.target_net.variables
    predictor_variables = self.rnd.predictor_net.trainable_variables
    with tf.GradientTape(watch_accessed_variables=False) as tape:
      tape.watch(target_variables + predictor_variables)
      targets, _ = self.rnd.target_net(rnd_inputs)
      loss = self.rnd.predictor_loss(rnd_inputs, targets, tf.ones([5]))
    target_grads, predictor_grads = tape.gradient(
        loss, (target_variables, predictor_variables))
    self.assertTrue(all(g is None for g in target_grads))
    self.assertTrue(all(g is not None for g in predictor_grads))
    self.assertGreater(
        float(tf.linalg.global_norm(predictor_grads)), 0.0)

  def test_predictor_loss_runs_the_kept_samples_only_with_the_same_maths(self):
    # [3 envs, 4 steps] of inputs: the loss and gradients on the kept
    # samples equal masked_mean over every sample's error.
    rnd_inputs = self.rnd.inputs(tf.random.normal([3, 4, 1], seed=1))
    targets, _ = self.rnd.target_net(rnd_inputs)
    variables = self.rnd.predictor_net.trainable_variables
    for mask in (np.array([[1, 0, 0, 1], [0, 0, 0, 0], [1, 1, 0, 1]]),
                 np.zeros([3, 4])):
      mask = tf.constant(mask, tf.float32)
      with tf.GradientTape(persistent=True) as tape:
        loss = self.rnd.predictor_loss(rnd_inputs, targets, mask)
        predicted, _ = self.rnd.predictor_net(rnd_inputs, training=True)
        expected = rnd_maths.masked_mean(
            rnd_maths.prediction_error(predicted, targets), mask)
      self.assertAllClose(loss, expected, rtol=1e-6, atol=1e-7)
      self.assertAllClose(tape.gradient(loss, variables),
                          tape.gradient(expected, variables),
                          rtol=1e-5, atol=1e-7)

  def test_target_fixed_and_predictor_trained_over_steps(self):
    target_before = values_of(self.rnd.target_net.variables)
    predictor_before = values_of(self.rnd.predictor_net.variables)
    for _ in range(2):
      self.agent.train(collect(self.env, self.agent))
    for before, after in zip(target_before,
                             values_of(self.rnd.target_net.variables)):
      self.assertAllEqual(before, after)
    changed = [not np.array_equal(b, a) for b, a in zip(
        predictor_before, values_of(self.rnd.predictor_net.variables))]
    self.assertTrue(all(changed))

  def test_checkpoint_restores_the_intrinsic_reward(self):
    self.agent.train(collect(self.env, self.agent))
    self.agent.train(collect(self.env, self.agent))

    def state(agent):
      rnd = agent.intrinsic_reward
      return {
          'target': rnd.target_net.variables,
          'predictor': rnd.predictor_net.variables,
          'predictor_optimizer': rnd.optimizer.variables,
          'rnd_obs': tf.nest.flatten(rnd.observation_normalizer.variables),
          'returns': tf.nest.flatten(rnd.return_normalizer.variables),
          'policy_obs': tf.nest.flatten(
              agent.collect_policy.observation_normalizer.variables),
      }

    saved = {k: values_of(v) for k, v in state(self.agent).items()}
    # 2 updates x 4 minibatches of predictor steps.
    self.assertEqual(int(self.rnd.optimizer.iterations), 8)
    # One intrinsic-return filter entry per environment.
    self.assertLen(self.rnd.return_normalizer.filter_state.numpy(), NUM_ENVS)
    path = tf.train.Checkpoint(agent=self.agent).save(
        os.path.join(self.get_temp_dir(), 'ckpt'))

    other = make_agent(self.env, seed=7)
    # The predictor's Adam slots exist before the restore, as in a resumed
    # run whose first train step has been traced.
    other.train(collect(self.env, other))
    fresh = {k: values_of(v) for k, v in state(other).items()}
    self.assertFalse(np.array_equal(fresh['target'][0], saved['target'][0]))
    tf.train.Checkpoint(agent=other).restore(path).assert_existing_objects_matched()
    restored = {k: values_of(v) for k, v in state(other).items()}
    for key in saved:
      self.assertLen(restored[key], len(saved[key]))
      for a, b in zip(saved[key], restored[key]):
        self.assertAllEqual(a, b, msg=key)

  def test_policy_saver_round_trip(self):
    self.agent.train(collect(self.env, self.agent))
    for name, policy in (('collect', self.agent.collect_policy),
                         ('greedy', self.agent.policy)):
      path = os.path.join(self.get_temp_dir(), name)
      policy_saver.PolicySaver(
          policy, batch_size=None,
          train_step=self.agent.train_step_counter).save(path)
      loaded = tf.saved_model.load(path)
      time_step = self.env.reset()
      step = loaded.action(time_step)
      self.assertEqual(step.action.shape, (NUM_ENVS,))
      self.assertAllInSet(step.action.numpy(), [0, 1])
      if name == 'greedy':
        self.assertAllEqual(step.action,
                            self.agent.policy.action(time_step).action)

  def test_warm_up_updates_only_rnd_normalizer(self):
    seen = warm_up_lib.warm_up_observation_normalizer(
        agent=self.agent, environment=self.env, num_steps=5)
    self.assertEqual(seen, 5 * NUM_ENVS)
    self.assertAllClose(self.rnd.observation_normalizer.count(), [20.0])
    # The policy's normaliser stays at its initial count (1e-8).
    policy_count = self.agent.collect_policy.observation_normalizer.variables[0]
    self.assertAllClose(policy_count, [0.0], atol=1e-6)

  def test_warm_up_on_a_py_environment(self):
    def warm_up():
      np.random.seed(3)
      agent = make_agent(self.env)
      py_env = batched.make_batched_env(fake_envs.load_counting,
                                        NUM_ENVS, seed=0)
      seen = warm_up_lib.warm_up_observation_normalizer(
          agent=agent, environment=py_env, num_steps=5)
      normalizer = agent.intrinsic_reward.observation_normalizer
      return seen, normalizer.count(), [v.numpy() for v in
                                        normalizer.variables]

    seen, count, statistics = warm_up()
    self.assertEqual(seen, 5 * NUM_ENVS)
    self.assertAllClose(count, [20.0])
    for first, second in zip(statistics, warm_up()[2]):
      self.assertAllEqual(first, second)

  def test_pure_curiosity_advantage_is_intrinsic(self):
    agent = make_agent(self.env, extrinsic_advantage_coef=0.0)
    processed = agent._preprocess(collect(self.env, agent))  # pylint: disable=protected-access
    info = processed.policy_info
    intrinsic_advantages = (info['intrinsic_return'] -
                            info['intrinsic_value_prediction'])[:, :-1]
    self.assertAllClose(info['advantage'][:, :-1],
                        agent.intrinsic_reward.stream.coef *
                        intrinsic_advantages,
                        atol=1e-5)

  def test_ablations_construct_and_train(self):
    agent = make_agent(
        self.env, num_minibatches=1,
        intrinsic_settings=dict(normalize_observations=False,
                                normalize_returns=False, non_episodic=False,
                                predictor_update_proportion=1.0))
    loss_info = agent.train(collect(self.env, agent))
    self.assertTrue(np.isfinite(loss_info.loss.numpy()))
    # Without return normalisation the rewards pass through unchanged.
    processed = agent._preprocess(  # pylint: disable=protected-access
        collect(self.env, agent))
    self.assertAllClose(processed.policy_info[agent_lib.INTRINSIC_REWARD],
                        processed.policy_info[agent_lib.RAW_INTRINSIC_REWARD])

  def test_first_visits_only_pays_each_episode_once_per_view(self):
    agent = make_agent(self.env,
                       intrinsic_settings=dict(first_visits_only=True))
    experience = collect(self.env, agent)
    # One view throughout: only the first observation of each episode
    # (a FIRST step after the rollout's first row) is new to its episode.
    experience = experience._replace(
        observation=tf.ones_like(experience.observation))
    processed = agent._preprocess(  # pylint: disable=protected-access
        experience)
    raw = processed.policy_info[agent_lib.RAW_INTRINSIC_REWARD][:, :-1]
    starts = tf.equal(experience.step_type[:, 1:], ts.StepType.FIRST)
    self.assertTrue(bool(tf.reduce_any(starts)))
    self.assertAllGreater(tf.boolean_mask(raw, starts), 0.0)
    self.assertAllEqual(tf.boolean_mask(raw, ~starts),
                        tf.zeros_like(tf.boolean_mask(raw, ~starts)))
    # The return statistics took the gated stream: one count per transition.
    self.assertEqual(float(agent.intrinsic_reward.return_normalizer.count()),
                     NUM_ENVS * (ROLLOUT_LENGTH - 1))
    self.assertTrue(np.isfinite(agent.train(experience).loss.numpy()))

  def test_without_the_gate_repeated_views_pay(self):
    agent = make_agent(self.env)
    experience = collect(self.env, agent)
    processed = agent._preprocess(  # pylint: disable=protected-access
        experience._replace(observation=tf.ones_like(experience.observation)))
    self.assertAllGreater(
        processed.policy_info[agent_lib.RAW_INTRINSIC_REWARD][:, :-1], 0.0)

  def test_ppo_twin_has_no_intrinsic_reward(self):
    twin = make_agent(self.env, rnd=False, extrinsic_advantage_coef=2.0)
    self.assertIsNone(twin.intrinsic_reward)
    self.assertEmpty([v for v in twin.variables if 'rnd' in v.name])
    experience = collect(self.env, twin)
    processed = twin._preprocess(  # pylint: disable=protected-access
        experience)
    info = processed.policy_info
    self.assertAllEqual(info[agent_lib.INTRINSIC_REWARD],
                        np.zeros((NUM_ENVS, ROLLOUT_LENGTH)))
    self.assertAllEqual(info[agent_lib.INTRINSIC_RETURN],
                        np.zeros((NUM_ENVS, ROLLOUT_LENGTH)))
    # advantage = 2 * A_E with A_E = return - V_E (TD(lambda) returns).
    extrinsic_advantages = (info['return'] -
                            info['value_prediction']).numpy()[:, :-1]
    self.assertAllClose(info['advantage'][:, :-1],
                        2.0 * extrinsic_advantages, atol=1e-5)
    self.assertGreater(np.abs(extrinsic_advantages).max(), 0.0)

    intrinsic_head = [v for v in twin.collect_policy.variables()
                      if 'intrinsic_value' in v.name]
    extrinsic_head = [v for v in twin.collect_policy.variables()
                      if 'extrinsic_value' in v.name]
    self.assertLen(intrinsic_head, 2)
    intrinsic_before = values_of(intrinsic_head)
    extrinsic_before = values_of(extrinsic_head)
    logdir = self.get_temp_dir() + '/twin'
    with tf.summary.create_file_writer(logdir).as_default():
      loss_info = twin.train(experience)
    self.assertTrue(np.isfinite(loss_info.loss.numpy()))
    self.assertEqual(float(loss_info.extra.intrinsic_reward_loss), 0.0)
    self.assertEqual(float(loss_info.extra.intrinsic_value_loss), 0.0)
    self.assertEqual(int(twin.train_step_counter), 4)
    for before, after in zip(intrinsic_before, values_of(intrinsic_head)):
      self.assertAllEqual(before, after)
    self.assertFalse(all(np.array_equal(b, a) for b, a in zip(
        extrinsic_before, values_of(extrinsic_head))))
    tags = set(read_scalars(logdir))
    self.assertIn('Losses/extrinsic_value_loss', tags)
    self.assertFalse([t for t in tags if t.startswith(('Intrinsic/',
                                                       'Normalizers/'))])
    # The warm-up is a no-op for the twin.
    self.assertEqual(
        warm_up_lib.warm_up_observation_normalizer(
            agent=twin, environment=self.env, num_steps=2), 2 * NUM_ENVS)

  def test_networks_fn_builds_the_pair(self):
    observation_spec = self.env.observation_spec()
    rnd = rnd_ppo.RndIntrinsicReward(
        observation_spec,
        networks_fn=lambda spec: networks.rnd_mlp_networks(
            spec, torso_fc_layer_params=(8,), predictor_fc_layer_params=(8,),
            output_dim=4))
    self.assertEqual(rnd.predictor_net.output_dim, 4)
    _, action_spec, time_step_spec = spec_utils.get_tensor_specs(self.env)
    agent = agents.RndPPOAgent(
        time_step_spec, action_spec,
        optimizer=tf.keras.optimizers.Adam(1e-3),
        actor_net=actor_distribution_network.ActorDistributionNetwork(
            observation_spec, action_spec, fc_layer_params=(8,)),
        value_net=networks.DualValueNetwork(observation_spec,
                                            fc_layer_params=(8,)),
        intrinsic_reward=rnd, num_minibatches=2,
        train_step_counter=tf.Variable(0, tf.int64))
    self.assertTrue(np.isfinite(
        agent.train(collect(self.env, agent)).loss.numpy()))

  def test_rejects_bad_settings(self):
    with self.assertRaisesRegex(ValueError, 'predictor_update_proportion'):
      make_intrinsic_reward(self.env.observation_spec(),
                            predictor_update_proportion=0.0)
    with self.assertRaisesRegex(ValueError, 'num_epochs'):
      make_agent(self.env, num_epochs=0)

  def test_value_net_must_have_both_heads(self):
    observation_spec, action_spec, time_step_spec = (
        spec_utils.get_tensor_specs(self.env))
    with self.assertRaisesRegex(ValueError, 'DualValueNetwork.*ValueNetwork'):
      agents.RndPPOAgent(
          time_step_spec, action_spec,
          optimizer=tf.keras.optimizers.Adam(1e-3),
          actor_net=actor_distribution_network.ActorDistributionNetwork(
              observation_spec, action_spec, fc_layer_params=(8,)),
          value_net=value_network.ValueNetwork(observation_spec,
                                               fc_layer_params=(8,)))

  def test_statistics_advance_once_per_batch_in_a_stock_learner(self):
    # PPOLearner's shape: train (repeated per epoch of the learner) changes
    # no statistic; update_observation_normalizer (once per batch)
    # advances all of them.
    agent = make_agent(self.env, update_normalizers_in_train=False)
    rnd = agent.intrinsic_reward
    experience = collect(self.env, agent)
    statistics = (list(rnd.return_normalizer.variables) +
                  list(rnd.observation_normalizer.variables) +
                  list(agent._observation_normalizer.variables))  # pylint: disable=protected-access
    before = values_of(statistics)
    self.assertIs(agent.preprocess_sequence(experience), experience)
    agent.train(experience)
    agent.train(experience)
    for old, new in zip(before, values_of(statistics)):
      self.assertAllEqual(old, new)

    agent.update_observation_normalizer(experience.observation)
    # One filtered return per transition: ROLLOUT_LENGTH - 1 per env.
    self.assertEqual(float(rnd.return_normalizer.count()),
                     NUM_ENVS * (ROLLOUT_LENGTH - 1))
    self.assertAllEqual(rnd.observation_normalizer.count(),
                        [NUM_ENVS * ROLLOUT_LENGTH])
    self.assertLen(rnd.return_normalizer.filter_state.numpy(), NUM_ENVS)

  def test_num_minibatches_defaults_to_one_like_ppo_clip_agent(self):
    agent = make_agent(self.env, num_epochs=3, num_minibatches=None)
    agent.train(collect(self.env, agent))
    self.assertEqual(int(agent.train_step_counter), 3)


if __name__ == '__main__':
  tf.test.main()
