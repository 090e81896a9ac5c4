"""NGU's episodic novelty in R2D2: the memory, the policy's record, r_i."""

import os

import numpy as np
import tensorflow as tf
from tf_agents.trajectories import time_step as ts

from tfa_explore.agents.intrinsic import embedding as embedding_lib
from tfa_explore.agents.intrinsic import episodic
from tfa_explore.agents.intrinsic import maths
from tfa_explore.agents.intrinsic import ngu
from tfa_explore.agents.r2d2 import inputs as r2d2_inputs
from tfa_explore.agents.r2d2_intrinsic import q_bonus
from tfa_explore.experiments.r2d2 import builder
from tfa_explore.networks import recurrent_dueling_q_network as rdqn
from tfa_explore.networks import rnd_networks
from tfa_explore.replay import demonstrations
from tfa_explore.testing import r2d2 as support
from tfa_explore.testing import r2d3 as r2d3_support

F, M, L = 0, 1, 2  # StepType FIRST, MID, LAST
STEP_TYPES = [[M, M, M, M, L, M, M]] * 2  # as tests/test_r2d2_intrinsic.py


def _empty_memory(batch_size, capacity):
  return {'keys': tf.zeros([batch_size, capacity], tf.int64),
          'counts': tf.zeros([batch_size, capacity], tf.int32),
          'size': tf.zeros([batch_size], tf.int32)}


def _episodic_component(max_modulator=5.0, embedding=False, arms=False,
                        **kwargs):
  """An `NguQBonus` (coef 0.5, memory 8) of exact counts or the embedding."""
  rnd = support.rnd_component(coef=0.5, **kwargs)
  action_spec = support.counting_env().action_spec()
  num_actions = int(action_spec.maximum) - int(action_spec.minimum) + 1
  novelty = (_small_embedding(rnd.input_spec, num_actions) if embedding
             else episodic.EpisodicCounts())
  return q_bonus.NguQBonus(
      ngu.NguReward(rnd, novelty, 8, max_modulator,
                    action_minimum=int(action_spec.minimum)), arms=arms)


def _small_embedding(input_spec, num_actions, **kwargs):
  return embedding_lib.ControllableEmbedding(
      input_spec, num_actions,
      embedding_net=rnd_networks.RndNetwork(
          input_spec, torso_fc_layer_params=(8,), output_dim=4),
      inverse_net=rnd_networks.RndNetwork(
          tf.TensorSpec([8]), head_fc_layer_params=(8,),
          output_dim=num_actions),
      optimizer=tf.keras.optimizers.Adam(1e-2), **kwargs)


def _embedding_component(**kwargs):
  return _episodic_component(embedding=True, **kwargs)


def _empty_knn_memory(batch_size, capacity, dim):
  return {'embeddings': tf.zeros([batch_size, capacity, dim]),
          'size': tf.zeros([batch_size], tf.int32),
          'distance_mean': tf.zeros([batch_size]),
          'distance_count': tf.zeros([batch_size])}


class EpisodicVisitCountsTest(support.TestCase):

  def test_counts_visits_per_episode_and_env(self):
    # Env 0: a b a a, then a new episode starting with a. Env 1: c c d c c.
    keys = [[1, 3], [2, 3], [1, 4], [1, 3], [1, 3]]
    firsts = [[True, True], [False, False], [False, False], [False, False],
              [True, False]]
    memory = _empty_memory(2, 4)
    counts = []
    for key, first in zip(keys, firsts):
      visits, memory = maths.episodic_visit_counts(
          tf.constant(key, tf.int64), tf.constant(first), memory)
      counts.append(visits.numpy().tolist())
    self.assertEqual(counts, [[1, 1], [1, 2], [2, 1], [3, 3], [1, 4]])

  def test_a_full_memory_counts_new_keys_as_first_visits(self):
    memory = _empty_memory(1, 2)
    counts = []
    for key in (5, 6, 7, 7, 5):
      visits, memory = maths.episodic_visit_counts(
          tf.constant([key], tf.int64), tf.constant([False]), memory)
      counts.append(int(visits[0]))
    # 7 finds no slot: a first visit each time; 5 is held.
    self.assertEqual(counts, [1, 1, 1, 1, 2])

  def test_ngu_modulator_is_clipped_to_one_and_l(self):
    errors = tf.constant([0.0, 1.0, 2.0, 100.0])
    self.assertAllClose(maths.ngu_modulator(errors, 1.0, 0.5, 5.0),
                        [1.0, 1.0, 3.0, 5.0])


class PolicyRecordTest(support.TestCase):

  def test_exploring_policy_records_one_over_root_visits(self):
    agent = support.make_agent(exploration=_episodic_component())
    policy = agent.collect_policy
    self.assertIn(q_bonus.EPISODIC_NOVELTY,
                  agent.collect_data_spec.policy_info)
    self.assertNotIn(q_bonus.EPISODIC_NOVELTY, agent.policy.info_spec)
    # Counting observations: env 0 sees 0 1 0 0, env 1 a new episode at 2.
    observations = [[0.0, 5.0], [1.0, 5.0], [0.0, 5.0], [0.0, 5.0]]
    step_types = [[F, F], [M, M], [M, F], [M, M]]
    state = policy.get_initial_state(2)
    novelty = []
    for observation, step_type in zip(observations, step_types):
      time_step = ts.TimeStep(
          step_type=tf.constant(step_type, tf.int32),
          reward=tf.zeros([2]), discount=tf.ones([2]),
          observation=tf.constant(observation)[:, None])
      step = policy.action(time_step, state)
      state = step.state
      novelty.append(step.info[q_bonus.EPISODIC_NOVELTY].numpy())
    self.assertAllClose(novelty, [[1, 1], [1, 2**-0.5], [2**-0.5, 1],
                                  [3**-0.5, 2**-0.5]])

  def test_without_memory_the_info_is_unchanged(self):
    agent = support.make_agent(exploration=support.rnd_bonus())
    self.assertNotIn(q_bonus.EPISODIC_NOVELTY,
                     agent.collect_data_spec.policy_info)

  def test_demonstrations_get_zero_novelty(self):
    agent = support.make_agent(exploration=_episodic_component())
    episodes, _ = r2d3_support.counting_episodes(1, episode_length=3)
    steps = list(demonstrations.episode_trajectories(
        episodes[0], agent.collect_data_spec))
    self.assertEqual(
        [float(s.policy_info[q_bonus.EPISODIC_NOVELTY]) for s in steps],
        [0.0] * len(steps))


class NguRewardTest(support.TestCase):

  def test_r_i_is_novelty_times_the_modulator_on_trace_transitions(self):
    component = _episodic_component(max_modulator=3.0)
    agent = support.make_agent(exploration=component)
    sequences = support.random_sequences(agent, STEP_TYPES, seed=3)
    novelty = np.abs(sequences.policy_info[
        q_bonus.EPISODIC_NOVELTY].numpy())
    info = dict(sequences.policy_info)
    info[q_bonus.EPISODIC_NOVELTY] = tf.constant(novelty)
    sequences = sequences._replace(policy_info=info)
    raw = component.reward.rnd.raw_rewards(
        sequences.observation[:, 1:]).numpy()
    component.observe(agent, sequences)
    rewards = component.intrinsic_rewards(agent, sequences).numpy()
    # Trace transitions 2->3 and 3->4 of both rows (as the sequence gate's
    # test): the moments see exactly those four errors first.
    errors = raw[:, 2:4]
    alpha = np.clip(1 + (errors - errors.mean()) / errors.std(), 1, 3)
    expected = np.zeros_like(rewards)
    expected[:, 2:4] = novelty[:, 3:5] * alpha
    self.assertAllClose(rewards, expected, rtol=1e-5)
    self.assertEqual(int(component.reward.error_moments.count()), 4)

  def test_settings_that_contradict_the_memory_are_refused(self):
    with self.assertRaisesRegex(ValueError, 'must be False, got True and'):
      _episodic_component(normalize=True)
    with self.assertRaisesRegex(ValueError, 'must be False, got False and '
                                'True.*rnd_intrinsic_reward.normalize_returns'):
      _episodic_component(first_visits_only=True)
    with self.assertRaisesRegex(ValueError, 'memory_size must be >= 1'):
      ngu.NguReward(support.rnd_component(), episodic.EpisodicCounts(), 0)

  def test_checkpoint_carries_the_error_moments(self):
    agent = support.make_agent(exploration=_episodic_component())
    sequences = support.random_sequences(agent, STEP_TYPES, seed=8)
    agent.train(sequences)
    path = tf.train.Checkpoint(agent=agent).save(
        os.path.join(self.get_temp_dir(), 'ckpt'))
    restored = support.make_agent(exploration=_episodic_component())
    tf.train.Checkpoint(agent=restored).restore(path)
    self.assertEqual(int(restored.exploration.reward.error_moments.count()), 4)
    self.assertAllClose(agent.exploration.reward.error_moments.mean(),
                        restored.exploration.reward.error_moments.mean())

  def test_error_tags_are_written(self):
    agent = support.make_agent(exploration=_episodic_component())
    sequences = support.random_sequences(agent, STEP_TYPES, seed=9)
    logdir = self.get_temp_dir()
    with tf.summary.create_file_writer(logdir).as_default():
      agent.train(sequences)
    tags = support.summary_tags(logdir)
    self.assertContainsSubset({'Intrinsic/error_mean', 'Intrinsic/error_std',
                               'Intrinsic/reward_normalized_mean'}, tags)
    self.assertNotIn('Intrinsic/return_std', tags)



class EpisodicKnnNoveltyTest(support.TestCase):

  def _novelties(self, embeddings, firsts, capacity=8, **kwargs):
    memory = _empty_knn_memory(len(embeddings[0]), capacity,
                               len(embeddings[0][0]))
    novelties = []
    for embedding, first in zip(embeddings, firsts):
      novelty, memory = maths.episodic_knn_novelty(
          tf.constant(embedding, tf.float32), tf.constant(first), memory,
          **kwargs)
      novelties.append(novelty.numpy())
    return np.array(novelties), memory

  def test_repeats_give_one_over_root_visits_up_to_k(self):
    # Env 0 sees the same point 5 times; env 1 a far point each step.
    embeddings = [[[0.0, 0.0], [10.0 * t, 0.0]] for t in range(5)]
    firsts = [[True, True]] + [[False, False]] * 4
    novelties, _ = self._novelties(embeddings, firsts, num_neighbors=4)
    c = 1e-3
    # At most k = 4 neighbours, the step's own included.
    self.assertAllClose(novelties[:, 0],
                        [1 / (np.sqrt(n) + c) for n in (1, 2, 3, 4, 4)],
                        rtol=1e-5)
    # Distances equal to their running mean: K = eps / (1 - xi + eps).
    self.assertAllClose(novelties[0, 1], 1 / (1 + c))
    self.assertLess(novelties[1:, 1].max(), 1 / (1 + c) + 1e-6)
    self.assertGreater(novelties[1:, 1].min(), 0.99)

  def test_a_sharp_kernel_counts_like_exact_visits(self):
    # Views a b a a b c: distances 0 or >= the running mean.
    points = {'a': [0.0, 0.0], 'b': [1.0, 0.0], 'c': [0.0, 1.0]}
    views = 'abaabc'
    novelties, _ = self._novelties([[points[v]] for v in views],
                                   [[True]] + [[False]] * 5)
    visits = [views[:i + 1].count(v) for i, v in enumerate(views)]
    self.assertAllClose(novelties[:, 0],
                        [1 / (np.sqrt(n) + 1e-3) for n in visits], atol=2e-3)

  def test_an_episode_start_empties_the_memory_but_keeps_the_mean(self):
    embeddings = [[[0.0]], [[2.0]], [[0.0]], [[0.0]]]
    firsts = [[True], [False], [True], [False]]
    novelties, memory = self._novelties(embeddings, firsts)
    self.assertAllClose(novelties[2, 0], 1 / (1 + 1e-3))
    self.assertAllClose(novelties[3, 0], 1 / (np.sqrt(2) + 1e-3))
    self.assertEqual(int(memory['size'][0]), 2)
    # Steps 1 and 3 had neighbours: squared distances 4 and 0.
    self.assertAllClose(memory['distance_mean'], [2.0])
    self.assertAllClose(memory['distance_count'], [2.0])

  def test_a_full_memory_compares_but_does_not_store(self):
    embeddings = [[[float(t)]] for t in range(4)] + [[[3.0]]]
    novelties, memory = self._novelties(embeddings, [[False]] * 5,
                                        capacity=2)
    self.assertEqual(int(memory['size'][0]), 2)
    self.assertAllClose(memory['embeddings'][0, :, 0], [0.0, 1.0])
    # 3.0 was not stored: its repeat is as new as its first visit.
    self.assertGreater(float(novelties[4, 0]), 0.99)

  def test_above_the_maximum_similarity_the_novelty_is_zero(self):
    novelties, _ = self._novelties([[[0.0]]] * 3, [[True], [False], [False]],
                                   max_similarity=1.5)
    self.assertAllClose(novelties[:, 0], [1 / (1 + 1e-3), 1 / (np.sqrt(2) +
                                                              1e-3), 0.0])


class ControllableEmbeddingTest(support.TestCase):

  def test_it_learns_to_name_the_action(self):
    # x_{t+1} = x_t + one_hot(a_t): the action is in the difference.
    tf.keras.utils.set_random_seed(0)
    embedding = _small_embedding(tf.TensorSpec([3]), 3)
    rng = np.random.default_rng(0)
    inputs = rng.normal(size=(64, 3)).astype(np.float32)
    actions = rng.integers(3, size=64)
    next_inputs = inputs + np.eye(3, dtype=np.float32)[actions]
    mask = tf.ones([64])
    first_loss, first_accuracy = embedding.loss(inputs, next_inputs, actions,
                                                mask)
    for _ in range(300):
      loss, _ = embedding.train_step(inputs, next_inputs, actions, mask)
    _, accuracy = embedding.loss(inputs, next_inputs, actions, mask)
    self.assertLess(float(loss), 0.3 * float(first_loss))
    self.assertGreater(float(accuracy), 0.95)
    self.assertLess(float(first_accuracy), 0.8)

  def test_networks_that_do_not_fit_are_refused(self):
    spec = tf.TensorSpec([3])
    with self.assertRaisesRegex(ValueError, 'must give 3 logits'):
      embedding_lib.ControllableEmbedding(
          spec, 3,
          embedding_net=rnd_networks.RndNetwork(spec, output_dim=4),
          inverse_net=rnd_networks.RndNetwork(tf.TensorSpec([8]),
                                              output_dim=2))



class EmbeddingInR2D2Test(support.TestCase):

  def test_the_policy_keeps_embeddings_and_reads_the_embedding_net(self):
    component = _embedding_component()
    agent = support.make_agent(exploration=component)
    policy = agent.collect_policy
    memory_spec = policy.policy_state_spec[q_bonus.EPISODIC_MEMORY]
    self.assertEqual(memory_spec['embeddings'].shape.as_list(), [8, 4])
    embedding_net = component.reward.novelty.embedding_net
    policy_variables = {id(v) for v in policy.variables()}
    self.assertTrue(all(id(v) in policy_variables
                        for v in embedding_net.variables))
    # Env 0 sees 0 0 0 (one point, three visits); the novelty is recorded.
    state = policy.get_initial_state(1)
    novelty = []
    for step_type in (F, M, M):
      time_step = ts.TimeStep(
          step_type=tf.constant([step_type], tf.int32), reward=tf.zeros([1]),
          discount=tf.ones([1]), observation=tf.zeros([1, 1]))
      step = policy.action(time_step, state)
      state = step.state
      novelty.append(float(step.info[q_bonus.EPISODIC_NOVELTY][0]))
    self.assertAllClose(novelty, [1 / (np.sqrt(n) + 1e-3) for n in (1, 2, 3)])

  def test_the_learner_trains_it_and_checkpoints_it(self):
    component = _embedding_component()
    agent = support.make_agent(exploration=component)
    embedding_net = component.reward.novelty.embedding_net
    before = [v.numpy() for v in embedding_net.variables]
    sequences = support.random_sequences(agent, STEP_TYPES, seed=4)
    logdir = self.get_temp_dir()
    with tf.summary.create_file_writer(logdir).as_default():
      agent.train(sequences)
    after = [v.numpy() for v in embedding_net.variables]
    self.assertFalse(all(np.allclose(a, b) for a, b in zip(before, after)))
    self.assertContainsSubset(
        {'Losses/embedding_loss', 'Intrinsic/action_prediction_accuracy'},
        support.summary_tags(logdir))
    path = tf.train.Checkpoint(agent=agent).save(
        os.path.join(self.get_temp_dir(), 'ckpt'))
    restored = support.make_agent(exploration=_embedding_component())
    tf.train.Checkpoint(agent=restored).restore(path)
    self.assertAllClose(
        after, [v.numpy() for v in
                restored.exploration.reward.novelty.embedding_net
                .variables])

  def test_actors_receive_the_embedding_with_the_q_network(self):
    agent = support.make_agent(exploration=_embedding_component())
    nest = builder.SharedState(agent).nest()
    self.assertEqual(
        [id(v) for v in nest['exploration']],
        [id(v) for v in
         agent.exploration.reward.novelty.embedding_net.variables])
    counts_agent = support.make_agent(exploration=_episodic_component())
    self.assertNotIn('exploration',
                     builder.SharedState(counts_agent).nest())


class IntrinsicArmsTest(support.TestCase):

  def test_ngu_betas_run_from_zero_to_the_coefficient(self):
    betas = [q_bonus.ngu_intrinsic_weight(i, 16, 0.3) for i in range(16)]
    self.assertEqual(betas[0], 0.0)
    self.assertEqual(betas[-1], 0.3)
    self.assertTrue(all(a < b for a, b in zip(betas, betas[1:])))
    self.assertAlmostEqual(betas[8], 0.3 / (1 + np.exp(-10 * 2 / 14)))
    # Slot 0 (epsilon 0.4) explores most, the last slot exploits.
    slots = (q_bonus.slot_intrinsic_weights(0, 2, 8, 0.3) +
             q_bonus.slot_intrinsic_weights(1, 2, 8, 0.3))
    self.assertEqual(slots, betas[::-1])

  def test_each_slot_is_greedy_on_its_own_mix(self):
    agent = support.make_agent(exploration=_episodic_component(arms=True))
    # Slot 0: beta = coef (0.5); slot 1: beta 0, greedy on Q_E.
    policy = agent.actor_collect_policy(0, 1, 2).greedy_policy
    network = agent.q_network
    for value in np.linspace(-3.0, 3.0, 7):
      network.variables[0].assign(
          network.variables[0] + tf.random.normal(network.variables[0].shape))
      time_step = ts.TimeStep(
          step_type=tf.constant([F, F]), reward=tf.zeros([2]),
          discount=tf.ones([2]), observation=tf.fill([2, 1], value))
      state = policy.get_initial_state(2)
      info = {r2d2_inputs.PREV_ACTION: state[r2d2_inputs.PREV_ACTION],
              r2d2_inputs.PREV_REWARD: tf.zeros([2])}
      heads, _ = network.q_heads(
          r2d2_inputs.network_inputs(time_step.observation, info),
          step_type=time_step.step_type,
          network_state=state[r2d2_inputs.NETWORK_STATE])
      mixed = q_bonus.mixed_action_values(heads[rdqn.EXTRINSIC],
                                         heads[rdqn.INTRINSIC], 0.5)
      action = policy.action(time_step, state).action.numpy()
      self.assertEqual(action[0], int(np.argmax(mixed[0])))
      self.assertEqual(action[1], int(np.argmax(heads[rdqn.EXTRINSIC][1])))


if __name__ == '__main__':
  tf.test.main()
