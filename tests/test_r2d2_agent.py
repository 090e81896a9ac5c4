"""Tests of the R2D2 agent, policy and learner maths on tiny sequences."""

import os
from unittest import mock

from absl.testing import parameterized
import numpy as np
import tensorflow as tf
from tf_agents.policies import policy_saver
from tf_agents.specs import tensor_spec

from tfa_explore.agents.r2d2 import agent as r2d2_agent
from tfa_explore.agents.r2d2 import config as r2d2_config
from tfa_explore.agents.r2d2 import inputs as r2d2_inputs
from tfa_explore.agents.r2d2 import learning
from tfa_explore.agents.r2d2 import losses
from tfa_explore.agents.r2d2 import policy as r2d2_policy
from tfa_explore.networks import recurrent_dueling_q_network as rdqn
from tfa_explore.testing import r2d2 as support

F, M, L = 0, 1, 2  # StepType FIRST, MID, LAST


class ActorEpsilonTest(support.TestCase, parameterized.TestCase):

  @parameterized.parameters(
      # eps_i = 0.4 ** (1 + 7 i / (N - 1))
      (0, 8, 0.4),                 # 0.4 ** 1
      (7, 8, 0.4**8),              # 0.4 ** 8 = 6.5536e-4
      (3, 8, 0.0256),              # 0.4 ** (1 + 3) = 0.0256
      (1, 3, 0.4**4.5),            # 0.4 ** (1 + 7/2)
      (0, 1, 0.4),                 # one actor: actor 0's value
  )
  def test_schedule(self, index, num_actors, expected):
    self.assertAllClose(
        r2d2_policy.actor_epsilon(index, num_actors), expected, rtol=1e-12)

  def test_rejects_bad_indices(self):
    with self.assertRaisesRegex(ValueError, 'actor_index'):
      r2d2_policy.actor_epsilon(3, 3)
    with self.assertRaisesRegex(ValueError, 'num_actors'):
      r2d2_policy.actor_epsilon(0, 0)

  def test_agent_builds_actor_policies_with_the_schedule(self):
    agent = support.make_agent()
    self.assertAllClose(agent.actor_collect_policy(2, 3).epsilon, 0.4**8)

  def test_batched_actor_gives_each_env_its_slot_epsilon(self):
    agent = support.make_agent()
    # Actor 1 of 2 with 3 envs holds slots 3, 4, 5 of 6:
    # 0.4^(1 + 7 j / 5) for j = 3, 4, 5.
    self.assertAllClose(
        agent.actor_collect_policy(1, 2, envs_per_actor=3).epsilon,
        [0.4**5.2, 0.4**6.6, 0.4**8], rtol=1e-6)


class SequenceConfigTest(support.TestCase):

  def test_paper_numbers(self):
    config = r2d2_config.SequenceConfig()
    # 40 burn-in + 80 trace + 1 bootstrap step; a new one every 40 steps.
    self.assertEqual(config.sequence_length, 121)
    self.assertEqual(config.stride, 40)
    self.assertEqual(config.overlap, 81)

  def test_period_longer_than_trace_is_rejected(self):
    with self.assertRaisesRegex(ValueError, 'replay_period'):
      r2d2_config.SequenceConfig(burn_in_steps=0, trace_length=4,
                                 replay_period=5)


class SpecCheckTest(support.TestCase):

  def test_continuous_action_spec_is_named(self):
    env = support.counting_env()
    time_step_spec = tensor_spec.from_spec(env.time_step_spec())
    continuous = tensor_spec.BoundedTensorSpec((), tf.float32, -1.0, 1.0,
                                               name='throttle')
    discrete = tensor_spec.from_spec(env.action_spec())
    network = rdqn.RecurrentDuelingQNetwork(
        rdqn.make_input_spec(time_step_spec.observation, discrete), discrete,
        (4,), 4, (4,))
    with self.assertRaisesRegex(ValueError, 'action_spec=.*throttle'):
      r2d2_agent.R2D2Agent(time_step_spec, continuous, network,
                           tf.keras.optimizers.Adam())

  def test_network_for_other_observations_is_rejected(self):
    env = support.counting_env()
    time_step_spec = tensor_spec.from_spec(env.time_step_spec())
    action_spec = tensor_spec.from_spec(env.action_spec())
    network = rdqn.RecurrentDuelingQNetwork(
        rdqn.make_input_spec(tf.TensorSpec((3,), tf.float32), action_spec),
        action_spec, (4,), 4, (4,))
    with self.assertRaisesRegex(ValueError, 'input_tensor_spec'):
      r2d2_agent.R2D2Agent(time_step_spec, action_spec, network,
                           tf.keras.optimizers.Adam())

  def test_wrong_sequence_length_is_rejected(self):
    agent = support.make_agent()
    sequences = support.random_sequences(agent, [[F, M, M, M, L]])
    with self.assertRaisesRegex(ValueError, 'sequence_length 7'):
      agent.train(sequences)


class StepMaskTest(support.TestCase):

  def test_hand_made_sequences(self):
    step_types = [
        [F, F, F, M, L, L, L],  # 2 front pads, episode F M L, 2 rear pads
        [M, M, L, F, M, M, M],  # crosses into the next episode: keep the last
        [M, M, M, M, M, M, M],  # mid-episode: all real
        [F, M, M, L, F, M, L],  # two episodes: keep the second only
    ]
    self.assertAllEqual(
        learning.step_mask(tf.constant(step_types)),
        [[0, 0, 1, 1, 1, 0, 0],
         [0, 0, 0, 1, 1, 1, 1],
         [1, 1, 1, 1, 1, 1, 1],
         [0, 0, 0, 0, 1, 1, 1]])


class BurnInTest(support.TestCase):

  def _input_gradients(self, agent, sequences):
    observation = tf.Variable(sequences.observation)
    state = [tf.Variable(s) for s in sequences.policy_info['network_state']]
    with tf.GradientTape(persistent=True) as tape:
      info = dict(sequences.policy_info)
      info['network_state'] = tuple(state)
      loss = agent.loss(
          sequences._replace(observation=observation, policy_info=info)).loss
    observation_gradient = tape.gradient(loss, observation)
    state_gradients = tape.gradient(loss, state)
    return loss, observation_gradient.numpy(), state_gradients

  def test_burn_in_steps_get_no_gradient(self):
    agent = support.make_agent()  # burn-in 2 of 7 steps
    sequences = support.random_sequences(agent, [[M] * 7, [M] * 7], seed=1)
    loss, observation_gradient, state_gradients = self._input_gradients(
        agent, sequences)
    self.assertGreater(loss, 0.0)
    # Observations of the 2 burn-in steps change the trace only through the
    # stopped state: exactly zero gradient. The trace's do get one.
    self.assertAllEqual(observation_gradient[:, :2],
                        np.zeros_like(observation_gradient[:, :2]))
    self.assertGreater(np.abs(observation_gradient[:, 2:6]).max(), 1e-6)
    # Nor does the stored state the burn-in starts from.
    self.assertEqual(state_gradients, [None, None])

  def test_without_burn_in_the_stored_state_gets_gradient(self):
    # Control for the test above: the same measurement sees a gradient when
    # the first steps are trained, so it is able to fail.
    agent = support.make_agent(sequence_config=r2d2_config.SequenceConfig(
        burn_in_steps=0, trace_length=6, replay_period=3))
    sequences = support.random_sequences(agent, [[M] * 7, [M] * 7], seed=1)
    _, observation_gradient, state_gradients = self._input_gradients(
        agent, sequences)
    self.assertGreater(np.abs(observation_gradient[:, :2]).max(), 1e-6)
    self.assertGreater(np.abs(state_gradients[0].numpy()).max(), 1e-6)

  def test_burn_in_rewards_do_not_change_the_loss(self):
    agent = support.make_agent()
    sequences = support.random_sequences(agent, [[M] * 7], seed=2)
    changed = support.replace_at(
        sequences, [[True, True, False, False, False, False, False]],
        lambda x, where: x[where] + 100)
    # r_0, r_1 + 100: no trace target sums rewards before the trace, and
    # the network's inputs are the stored prev_reward, not these.
    changed = sequences._replace(reward=changed.reward)
    self.assertAllClose(agent.loss(sequences).loss, agent.loss(changed).loss,
                        rtol=0, atol=0)

  def test_zero_state_ablation_ignores_the_stored_state(self):
    agent = support.make_agent(
        sequence_config=r2d2_config.SequenceConfig(0, 6, 3),
        use_stored_state=False)
    sequences = support.random_sequences(agent, [[M] * 7], seed=3)
    info = dict(sequences.policy_info)
    info['network_state'] = tf.nest.map_structure(
        lambda s: s + 5.0, info['network_state'])
    self.assertAllClose(
        agent.loss(sequences).loss,
        agent.loss(sequences._replace(policy_info=info)).loss, rtol=0,
        atol=0)


class PaddingTest(support.TestCase):

  def test_padding_never_reaches_loss_or_gradients(self):
    agent = support.make_agent()
    step_types = [[F, F, F, M, L, L, L],   # front and rear padding
                  [M, M, M, M, M, L, L]]   # rear padding only
    padding = np.array(step_types) * 0 == 1  # all False
    padding[0] = [1, 1, 0, 0, 0, 1, 1]
    padding[1] = [0, 0, 0, 0, 0, 0, 1]
    sequences = support.random_sequences(agent, step_types, seed=4)

    def loss_and_gradients(pad_value):
      garbage = support.replace_at(
          sequences, padding,
          lambda x, where: np.full_like(x[where], pad_value))
      with tf.GradientTape() as tape:
        loss_info = agent.loss(garbage)
      gradients = tape.gradient(loss_info.loss,
                                agent.q_network.trainable_variables)
      return loss_info, [g.numpy() for g in gradients]

    base_info, base_gradients = loss_and_gradients(0)
    for pad_value in (7, 1000):
      loss_info, gradients = loss_and_gradients(pad_value)
      self.assertAllClose(loss_info.loss, base_info.loss, rtol=1e-6, atol=0)
      self.assertAllClose(loss_info.extra.priorities,
                          base_info.extra.priorities, rtol=1e-6, atol=0)
      for gradient, base in zip(gradients, base_gradients):
        self.assertAllClose(gradient, base, rtol=1e-5, atol=1e-7)
    # Trace steps 2..5: row 0 has real steps 2..4 -> targets at 2, 3;
    # row 1 has 0..5 -> targets at trace steps 2, 3, 4 (5 bootstraps only).
    # 5 valid of 2 * 5 post-burn-in steps.
    self.assertAllClose(base_info.extra.valid_fraction, 0.5)


class StoredStateTest(support.TestCase):

  def test_learner_replays_the_actor_state_and_q_values(self):
    agent = support.make_agent(collect_epsilon=0.5)
    env = support.counting_env(seed=0, episode_length=9)
    policy = agent.collect_policy
    network = agent.q_network
    time_step = env.reset()
    state = policy.get_initial_state(1)
    steps, actor_states, actor_q = [], [], []
    tf.random.set_seed(5)
    while True:
      batched = tf.nest.map_structure(lambda x: tf.constant(x)[None],
                                      time_step)
      # What the actor's network starts this step from (reset on FIRST).
      start_state = [tf.zeros_like(s) if time_step.is_first() else s
                     for s in state['network_state']]
      policy_step = policy.action(batched, state)
      q_values, _ = network(
          r2d2_inputs.network_inputs(batched.observation,
                                     policy_step.info),
          step_type=batched.step_type, network_state=start_state)
      actor_states.append([s.numpy()[0] for s in start_state])
      actor_q.append(q_values.numpy()[0])
      next_time_step = env.step(policy_step.action.numpy()[0])
      steps.append(support.trajectory_from_steps(
          time_step, tf.nest.map_structure(lambda x: x.numpy()[0],
                                           policy_step), next_time_step))
      state = policy_step.state
      if time_step.is_last():
        break
      time_step = next_time_step
    self.assertLen(steps, 10)  # FIRST, 8 MID, the final LAST boundary step
    self.assertGreater(len({int(s.action) for s in steps}), 1)

    # A sequence starting at episode step 2 (mid-episode, non-zero state).
    window = steps[2:9]
    sequence = tf.nest.map_structure(
        lambda *xs: tf.constant(np.stack(xs))[None], *window)
    for stored, actor in zip(sequence.policy_info['network_state'],
                             actor_states[2]):
      self.assertAllClose(stored[0, 0], actor, rtol=0, atol=0)
    self.assertGreater(np.abs(actor_states[2][0]).max(), 1e-3)
    # Burn-in over steps 2, 3 from the stored state, then steps 4..8 must
    # give the actor's Q values.
    replayed = learning.unroll(network, sequence, burn_in_steps=2)[rdqn.EXTRINSIC]
    self.assertAllClose(replayed[0], np.stack(actor_q[4:9]), atol=1e-5)


class TdErrorsTest(support.TestCase):

  def test_several_n_from_one_unroll(self):
    agent = support.make_agent(n_step=3)  # burn-in 2 of 7 steps
    sequences = support.random_sequences(
        agent, [[F, F, F, M, M, L, L], [M] * 7], seed=8)
    with mock.patch.object(learning, 'unroll', wraps=learning.unroll) as spy:
      errors = agent.td_errors(sequences, n_steps=(3, 1))
    # One unroll per network (online, target), whatever the number of n.
    self.assertEqual(spy.call_count, 2)
    self.assertEqual(sorted(errors.by_n_step), [1, 3])
    # Q(s_t, a_t) is the online Q value of the stored action.
    actions = sequences.action[:, 2:].numpy()
    self.assertAllEqual(errors.actions, actions)
    self.assertAllClose(
        errors.selected_q_values,
        np.take_along_axis(errors.q_values.numpy(), actions[..., None],
                           axis=-1)[..., 0])
    # Row 0: real steps 2..5 (up to its first LAST) are positions 0..3
    # after the burn-in.
    self.assertAllEqual(errors.step_mask[0], [1, 1, 1, 1, 0])
    target_q = learning.unroll(agent.target_q_network, sequences, 2)[rdqn.EXTRINSIC]
    for n in (1, 3):
      # Each n's errors are the n-step maths on the same two unrolls.
      targets = losses.n_step_double_q_targets(
          sequences.reward[:, 2:], sequences.discount[:, 2:],
          errors.q_values, target_q, num_steps=n, gamma=0.997,
          step_mask=errors.step_mask)
      n_step_errors = errors.by_n_step[n]
      self.assertAllEqual(n_step_errors.valid, targets.valid)
      self.assertAllClose(n_step_errors.targets, targets.targets)
      self.assertAllClose(
          n_step_errors.td_errors,
          np.where(targets.valid, targets.targets - errors.selected_q_values,
                   0.0))
    # The loss is the n-step (n = 3) TD loss of these errors.
    self.assertAllClose(
        agent.loss(sequences).extra.td_loss,
        losses.masked_td_loss(errors.by_n_step[3].td_errors,
                              errors.by_n_step[3].valid))


  def test_actor_priorities_unroll_their_network_once(self):
    # Actors pass their network as online and target network: one unroll
    # serves both, with the values of two unrolls of equal networks.
    agent = support.make_agent(n_step=3)
    sequences = support.random_sequences(
        agent, [[F, M, M, M, L, F, M], [M] * 7], seed=9)
    network = agent.q_network
    twin = network.copy(name='twin')
    twin.create_variables()
    for a, b in zip(network.variables, twin.variables):
      b.assign(a)
    settings = agent._td_settings  # pylint: disable=protected-access
    with mock.patch.object(learning, 'unroll', wraps=learning.unroll) as spy:
      once = learning.sequence_td_errors(network, network, sequences,
                                         settings, n_steps=(3,))
    self.assertEqual(spy.call_count, 1)
    twice = learning.sequence_td_errors(network, twin, sequences, settings,
                                        n_steps=(3,))
    self.assertAllClose(once.by_n_step[3].td_errors,
                        twice.by_n_step[3].td_errors)
    self.assertAllClose(once.by_n_step[3].targets, twice.by_n_step[3].targets)
    # The learner (training) unrolls its two networks apart, as before.
    with mock.patch.object(learning, 'unroll', wraps=learning.unroll) as spy:
      learning.sequence_td_errors(network, network, sequences, settings,
                                  n_steps=(3,), training=True)
    self.assertEqual(spy.call_count, 2)


class TrainTest(support.TestCase):

  def test_target_network_copied_every_period(self):
    agent = support.make_agent(target_update_period=3)
    sequences = support.random_sequences(agent, [[M] * 7] * 2, seed=6)
    initial = [v.numpy() for v in agent.target_q_network.variables]
    online_initial = [v.numpy() for v in agent.q_network.variables]
    for a, b in zip(initial, online_initial):
      self.assertAllEqual(a, b)
    for step in (1, 2):
      agent.train(sequences)
      for target, value in zip(agent.target_q_network.variables, initial):
        self.assertAllEqual(target, value, msg=f'step {step}')
    agent.train(sequences)
    self.assertEqual(int(agent.train_step_counter), 3)
    for target, online in zip(agent.target_q_network.variables,
                              agent.q_network.variables):
      self.assertAllEqual(target, online)
    self.assertNotAllClose(agent.q_network.variables[0], initial[0])

  def test_jit_compiled_training_matches_the_plain_one(self):
    # Same initial weights, same batches: XLA changes the order of float
    # operations only.
    agents = [support.make_agent(target_update_period=2,
                                 gradient_clipping=1.0,
                                 jit_compile=jit_compile)
              for jit_compile in (False, True)]
    plain, compiled = agents
    _copy_weights(plain, compiled)
    sequences = support.random_sequences(agent=plain,
                                         step_types=[[F, M, M, L, F, M, M]] * 3,
                                         seed=12)
    sample_info = _sample_info(probabilities=[0.25, 0.5, 0.25],
                               table_size=8)
    batch = r2d2_inputs.PrioritizedSequences(sequences, sample_info)
    for step in range(3):
      plain_info = plain.train(batch)
      compiled_info = compiled.train(batch)
      self.assertAllClose(plain_info.loss, compiled_info.loss, rtol=1e-5,
                          msg=f'step {step}')
      self.assertAllClose(plain_info.extra.priorities,
                          compiled_info.extra.priorities, rtol=1e-5)
    for a, b in zip(plain.q_network.variables + plain.target_q_network.variables,
                    compiled.q_network.variables +
                    compiled.target_q_network.variables):
      self.assertAllClose(a, b, rtol=1e-5, atol=1e-6)
    self.assertNotAllClose(plain.q_network.variables[0],
                           plain.target_q_network.variables[0])

  def test_importance_weights_from_sample_info(self):
    agent = support.make_agent()
    sequences = support.random_sequences(agent, [[M] * 7] * 2, seed=7)
    sample_info = _sample_info(probabilities=[0.125, 0.5], table_size=8)
    loss_info = agent.loss(
        r2d2_inputs.PrioritizedSequences(sequences, sample_info))
    # N P = [1, 4]; (N P)^-0.6 = [1, 4^-0.6 = 0.43528]; / max -> same.
    self.assertAllClose(loss_info.extra.importance_weights,
                        [1.0, 4.0**-0.6], rtol=1e-6)
    uniform = agent.loss(sequences)
    # Per-sequence losses: uniform mean is (l0 + l1)/2, weighted
    # (l0 + 0.43528 l1)/2; both differ unless l1 = 0.
    self.assertNotAllClose(loss_info.loss, uniform.loss)
    self.assertAllClose(loss_info.extra.priorities, uniform.extra.priorities)

  def test_checkpoint_restores_agent_and_target_exactly(self):
    agent = support.make_agent(target_update_period=2)
    sequences = support.random_sequences(agent, [[M] * 7] * 2, seed=8)
    for _ in range(3):  # target copied at step 2, online moved at step 3
      agent.train(sequences)
    self.assertNotAllClose(agent.q_network.variables[0],
                           agent.target_q_network.variables[0])
    prefix = os.path.join(self.get_temp_dir(), 'ckpt')
    path = tf.train.Checkpoint(agent=agent).save(prefix)

    optimizer = tf.keras.optimizers.Adam(1e-2)
    restored = support.make_agent(target_update_period=2, optimizer=optimizer)
    # Keras optimizers do not restore slots created after `restore`, so
    # build them first, as the TF-Agents Learner does before restoring.
    optimizer.build(restored.q_network.trainable_variables)
    tf.train.Checkpoint(agent=restored).restore(path).assert_consumed()
    for network in ('q_network', 'target_q_network'):
      for a, b in zip(getattr(agent, network).variables,
                      getattr(restored, network).variables):
        self.assertAllEqual(a, b, msg=network)
    self.assertEqual(int(restored.train_step_counter), 3)
    # One more step on each: identical results, target copy at step 4.
    self.assertAllClose(agent.train(sequences).loss,
                        restored.train(sequences).loss, rtol=0, atol=0)
    for a, b in zip(agent.target_q_network.variables,
                    restored.target_q_network.variables):
      self.assertAllEqual(a, b)

  def test_summaries_are_written_under_their_areas(self):
    agent = support.make_agent(debug_summaries=True)
    sequences = support.random_sequences(agent, [[M] * 7], seed=9)
    logdir = self.get_temp_dir()
    writer = tf.summary.create_file_writer(logdir)
    with writer.as_default():
      agent.train(sequences)
    writer.flush()
    tags = set()
    for name in os.listdir(logdir):
      for event in tf.compat.v1.train.summary_iterator(
          os.path.join(logdir, name)):
        tags.update(value.tag for value in event.summary.value)
    self.assertContainsSubset(
        {'Losses/td_loss', 'Replay/priority_mean', 'Q/selected_mean'}, tags)


class PolicyTest(support.TestCase):

  def test_collect_policy_stores_the_taken_action(self):
    agent = support.make_agent(collect_epsilon=1.0)  # always random
    env = support.counting_env()
    time_step = tf.nest.map_structure(lambda x: tf.constant(x)[None],
                                      env.reset())
    state = agent.collect_policy.get_initial_state(1)
    taken = []
    for _ in range(6):
      step = agent.collect_policy.action(time_step, state, seed=None)
      taken.append(int(step.action[0]))
      self.assertEqual(int(step.state['prev_action'][0]), taken[-1])
      state = step.state
      time_step = time_step._replace(step_type=tf.constant([M]))

  def test_policy_saver_round_trip(self):
    agent = support.make_agent()
    path = os.path.join(self.get_temp_dir(), 'greedy')
    policy_saver.PolicySaver(agent.policy, batch_size=None).save(path)
    loaded = tf.saved_model.load(path)
    env = support.counting_env()
    time_step = tf.nest.map_structure(lambda x: tf.constant(x)[None],
                                      env.reset())
    state = loaded.get_initial_state(1)
    expected = agent.policy.action(time_step, agent.policy.get_initial_state(1))
    step = loaded.action(time_step, state)
    self.assertAllEqual(step.action, expected.action)
    self.assertAllClose(step.state['network_state'],
                        expected.state['network_state'])


def _copy_weights(source, destination):
  for network in ('q_network', 'target_q_network'):
    for a, b in zip(getattr(source, network).variables,
                    getattr(destination, network).variables):
      b.assign(a)


def _sample_info(probabilities, table_size):
  import reverb  # pylint: disable=g-import-not-at-top
  batch = len(probabilities)
  return reverb.SampleInfo(
      key=tf.constant(np.arange(batch), tf.uint64),
      probability=tf.constant(probabilities, tf.float64),
      table_size=tf.fill([batch], tf.constant(table_size, tf.int64)),
      priority=tf.ones([batch], tf.float64),
      times_sampled=tf.ones([batch], tf.int32))


if __name__ == '__main__':
  tf.test.main()
