"""R2D2 on Reverb: sequence layout, signatures, priorities, a mini loop."""

import os
import threading
import time

import numpy as np
import portpicker
import reverb
import tensorflow as tf
import tree
from tf_agents.policies import py_tf_eager_policy
from tf_agents.replay_buffers import reverb_replay_buffer
from tf_agents.train import actor
from tf_agents.train import learner
from tf_agents.train.utils import train_utils
from tf_agents.trajectories import trajectory as trajectory_lib

from tfa_explore.agents.r2d2 import config as r2d2_config
from tfa_explore.agents.r2d2 import learning
from tfa_explore.replay import dataset as replay_dataset
from tfa_explore.replay import priority_updater
from tfa_explore.replay import sequence_storage
from tfa_explore.replay import sequence_writer
from tfa_explore.replay import success_copies
from tfa_explore.replay import tables
from tfa_explore.testing import r2d2 as support

F, M, L = 0, 1, 2
TABLE = 'r2d2'


class _ReverbTestCase(support.TestCase):

  def start_server(self, table_list):
    server = reverb.Server(table_list, port=portpicker.pick_unused_port())
    self.addCleanup(server.stop)
    return server, reverb.Client(f'localhost:{server.port}')


def _run_episodes(env, policy, observer, num_episodes):
  """Steps `env` with a py policy, feeding unbatched trajectories."""
  from tf_agents.trajectories import trajectory as trajectory_lib  # pylint: disable=g-import-not-at-top
  time_step = env.reset()
  state = policy.get_initial_state(1)
  episodes = 0
  while episodes < num_episodes:
    policy_step = policy.action(time_step, state)
    next_time_step = env.step(policy_step.action)
    observer(trajectory_lib.from_transition(time_step, policy_step,
                                            next_time_step))
    episodes += int(time_step.is_last())
    state = policy_step.state
    time_step = next_time_step


def _queue_items(client, table_name, count):
  """`count` items of a queue table, in insertion order."""
  items = []
  for _ in range(count):
    sample = next(client.sample(table_name, num_samples=1,
                                emit_timesteps=False,
                                unpack_as_table_signature=True))
    items.append(sample)
  return items


class SequenceWriterTest(_ReverbTestCase):

  def _write_episode(self, episode_length, expected_items):
    agent = support.make_agent()  # burn-in 2, trace 4, period 2 -> 7 steps
    length = agent.sequence_config.sequence_length
    table = reverb.Table.queue(
        TABLE, max_size=100,
        signature=tables.sequence_signature(agent.collect_data_spec, length))
    _, client = self.start_server([table])
    observer = sequence_writer.R2D2SequenceObserver(
        client, TABLE, agent.sequence_config, agent.collect_data_spec)
    policy = py_tf_eager_policy.PyTFEagerPolicy(agent.collect_policy)
    _run_episodes(support.counting_env(episode_length=episode_length),
                  policy, observer, num_episodes=1)
    observer.flush()
    self.assertEqual(observer.num_items_written, expected_items)
    self.assertEqual(client.server_info()[TABLE].current_size, expected_items)
    return _queue_items(client, TABLE, expected_items)

  def test_overlapping_items_cover_every_transition(self):
    # Episode of 9 steps: trajectories with observations 0..9 (9 is the
    # LAST boundary step). Stream: 2 front pads, obs 0..9 -> 12 steps;
    # items of 7 every 2 steps end at 7, 9, 11; the final step (12th)
    # misses the item boundary, so one rear pad makes the item ending at 13.
    items = self._write_episode(episode_length=9, expected_items=4)
    observations = [item.data.observation[:, 0].tolist() for item in items]
    step_types = [item.data.step_type.tolist() for item in items]
    self.assertEqual(observations, [[0, 0, 0, 1, 2, 3, 4],
                                    [0, 1, 2, 3, 4, 5, 6],
                                    [2, 3, 4, 5, 6, 7, 8],
                                    [4, 5, 6, 7, 8, 9, 0]])
    self.assertEqual(step_types, [[F, F, F, M, M, M, M],
                                  [F, M, M, M, M, M, M],
                                  [M, M, M, M, M, M, M],
                                  [M, M, M, M, M, L, L]])
    # Trace positions 2..5 of each item; transitions 0..8 all trained.
    traced = set()
    for item in items:
      mask = learning.step_mask(item.data.step_type[None])[0]
      for position in range(2, 6):
        if mask[position] and mask[position + 1]:
          traced.add(int(item.data.observation[position, 0]))
    self.assertEqual(traced, set(range(9)))

  def test_short_episode_is_one_padded_item(self):
    # Episode of 2 steps: obs 0, 1, 2(LAST); 2 front + 3 real + 2 rear pads.
    items = self._write_episode(episode_length=2, expected_items=1)
    self.assertEqual(items[0].data.step_type.tolist(),
                     [F, F, F, M, L, L, L])
    self.assertEqual(items[0].data.observation[:, 0].tolist(),
                     [0, 0, 0, 1, 2, 0, 0])


class BatchedSequenceWriterTest(_ReverbTestCase):

  def _write_both(self, agent, episode_length, episode_lengths, num_steps,
                  priorities_fn, storage=None):
    """The same transitions into a batched writer (table 'batched') and one
    observer per env (table 'per_env'), then both flushed.

    The envs are Counting envs of `episode_length` truncated at each of
    `episode_lengths` (same specs, different episode lengths). Returns the
    client, the batched writer and the per-env observers.
    """
    from tf_agents.environments import batched_py_environment  # pylint: disable=g-import-not-at-top
    from tfa_explore.testing import fake_envs  # pylint: disable=g-import-not-at-top
    config = agent.sequence_config
    signature = tables.sequence_signature(agent.collect_data_spec,
                                          config.sequence_length)
    _, client = self.start_server([
        reverb.Table.queue('batched', max_size=1000, signature=signature),
        reverb.Table.queue('per_env', max_size=1000, signature=signature)])
    client = _CountingClient(client)
    env = batched_py_environment.BatchedPyEnvironment(
        [fake_envs.load_counting(episode_length=episode_length,
                                 max_episode_steps=n)
         for n in episode_lengths], multithreading=False)
    batched_writer = sequence_writer.BatchedSequenceWriter(
        client, 'batched', config, len(episode_lengths),
        agent.collect_data_spec, priorities_fn=priorities_fn,
        storage=storage)
    per_env = [sequence_writer.R2D2SequenceObserver(
        client, 'per_env', config, priority_fn=agent.initial_priority_fn())
               for _ in episode_lengths]
    policy = py_tf_eager_policy.PyTFEagerPolicy(
        agent.actor_collect_policy(0, 1, envs_per_actor=len(episode_lengths)),
        batch_time_steps=False)
    time_step = env.reset()
    state = policy.get_initial_state(len(episode_lengths))
    for _ in range(num_steps):
      policy_step = policy.action(time_step, state)
      next_time_step = env.step(policy_step.action)
      transition = trajectory_lib.from_transition(time_step, policy_step,
                                                  next_time_step)
      batched_writer(transition)
      for index, observer in enumerate(per_env):
        observer(tf.nest.map_structure(lambda x, i=index: x[i], transition))
      state, time_step = policy_step.state, next_time_step
    batched_writer.flush()
    for observer in per_env:
      observer.flush()
    return client, batched_writer, per_env

  def test_same_items_as_one_observer_per_env_and_batched_priorities(self):
    self._check_same_items(storage=None)

  def test_sequence_copies_store_the_same_items_with_one_writer(self):
    client = self._check_same_items(storage=sequence_storage.SequenceCopies())
    # One writer for the three envs: one insert stream, not one per env.
    self.assertEqual(client.num_writers, 1 + 3)  # + the per-env observers

  def _check_same_items(self, storage):
    agent = support.make_agent(env=support.counting_env(episode_length=9))
    # 23 steps end episodes of every env, some mid-item.
    client, batched_writer, per_env = self._write_both(
        agent, 9, (2, 9, 5), 23, agent.initial_priorities_fn(), storage)

    num_items = batched_writer.num_items_written
    # An episode of n steps is n + 1 trajectories (the last one is the
    # boundary). 23 per env = 7 episodes of 2 (+ 2), 2 of 9 (+ 3), 3 of 5
    # (+ 5); 1 item per 2-episode, 4 per 9-episode, 2 per 5-episode (the
    # padded layouts of SequenceWriterTest); of the running episodes only
    # the last one's 2 pads + 5 steps fill an item of 7.
    self.assertEqual(num_items, 7 * 1 + 2 * 4 + 3 * 2 + 1)
    self.assertEqual(num_items,
                     sum(observer.num_items_written for observer in per_env))

    def items(table):
      return [(item.data.observation[:, 0].tolist(),
               item.data.step_type.tolist(), item.info.priority, item.data)
              for item in _queue_items(client, table, num_items)]
    batched_items, per_env_items = items('batched'), items('per_env')
    self.assertCountEqual([(o, s) for o, s, _, _ in batched_items],
                          [(o, s) for o, s, _, _ in per_env_items])
    single_priority = agent.initial_priority_fn()
    for _, _, priority, data in batched_items:
      self.assertAllClose(priority, single_priority(data), rtol=1e-5)
    self.assertGreater(min(p for _, _, p, _ in batched_items), 0.0)
    return client

  def test_items_wait_for_one_priority_call_within_a_stride(self):
    # Long episodes out of step: items complete one env at a time, and
    # wait until a stride passed, there is one per env or an episode
    # ended; then one call computes all their priorities. Their steps are
    # still alive in the writers (Reverb raises on expired references).
    agent = support.make_agent(env=support.counting_env(episode_length=40))
    priorities_fn = agent.initial_priorities_fn()
    calls = []

    def counted_priorities(trajectories):
      calls.append(len(trajectories.step_type))
      return priorities_fn(trajectories)

    client, batched_writer, per_env = self._write_both(
        agent, 40, (29, 34, 40), 100, counted_priorities)

    num_items = batched_writer.num_items_written
    self.assertEqual(num_items,
                     sum(observer.num_items_written for observer in per_env))
    # Fewer calls than items: items waited and shared calls.
    self.assertEqual(sum(calls), num_items)
    # Written at every step, these 135 items took 70 calls (1.9 each).
    self.assertEqual(num_items, 135)
    self.assertGreater(num_items / len(calls), 2.5)
    batched_items = _queue_items(client, 'batched', num_items)
    per_env_items = _queue_items(client, 'per_env', num_items)
    self.assertCountEqual(
        [item.data.observation[:, 0].tolist() for item in batched_items],
        [item.data.observation[:, 0].tolist() for item in per_env_items])
    single_priority = agent.initial_priority_fn()
    for item in batched_items:
      self.assertAllClose(item.info.priority, single_priority(item.data),
                          rtol=1e-5)


class PackerTest(support.TestCase):

  def test_rebuilds_what_unflatten_as_rebuilds(self):
    # A Trajectory with the R2D2 policy info's nesting: a dict (flattened
    # in sorted key order, here not its insertion order) holding a tuple.
    structure = support.random_sequences(
        support.make_agent(), np.ones((1, 3), np.int32))
    structure = structure._replace(policy_info={
        'prev_reward': 1, 'network_state': (2, 3), 'prev_action': 4})
    leaves = [np.full((), i) for i in range(len(tree.flatten(structure)))]
    packed = sequence_writer._packer(structure)(iter(leaves))  # pylint: disable=protected-access
    expected = tree.unflatten_as(structure, leaves)
    self.assertIs(type(packed), type(expected))
    tree.assert_same_structure(packed, expected)
    for got, want in zip(tree.flatten(packed), tree.flatten(expected)):
      self.assertIs(got, want)


class _CountingClient:
  """A `reverb.Client` that counts the trajectory writers it made."""

  def __init__(self, client):
    self._client = client
    self.num_writers = 0

  def trajectory_writer(self, *args, **kwargs):
    self.num_writers += 1
    return self._client.trajectory_writer(*args, **kwargs)

  def __getattr__(self, name):
    return getattr(self._client, name)


class CloseTest(support.TestCase):

  def test_sequence_copies_end_and_close_their_one_writer_once(self):
    client = _SlowClosingClient(close_seconds=0.0)
    writer = sequence_writer.BatchedSequenceWriter(
        client, TABLE, support.SMALL_CONFIG, num_envs=4,
        storage=sequence_storage.SequenceCopies())
    writer.close(timeout_ms=250)
    self.assertLen(client.end_episode_timeouts, 1)
    self.assertEqual(client.num_closed, 1)

  def test_storage_must_be_a_sequence_storage(self):
    with self.assertRaisesRegex(ValueError, 'SequenceStorage'):
      sequence_writer.BatchedSequenceWriter(
          _SlowClosingClient(0.0), TABLE, support.SMALL_CONFIG, num_envs=2,
          storage='copies')

  def test_one_timeout_covers_every_env(self):
    client = _SlowClosingClient(close_seconds=0.1)
    writer = sequence_writer.BatchedSequenceWriter(
        client, TABLE, support.SMALL_CONFIG, num_envs=4)
    writer.close(timeout_ms=250)
    # Each env waits for what the earlier ones left of the 250 ms (each
    # takes 100 ms): not 250 ms each, which would be 4 x the timeout.
    timeouts = client.end_episode_timeouts
    self.assertLen(timeouts, 4)
    self.assertLessEqual(timeouts[0], 250)
    self.assertLessEqual(timeouts[1], 160)
    self.assertEqual(timeouts[-1], 0)
    self.assertEqual(client.num_closed, 4)


class _SlowClosingClient:
  """Trajectory writers whose `end_episode` takes a while."""

  def __init__(self, close_seconds):
    self.close_seconds = close_seconds
    self.end_episode_timeouts = []
    self.num_closed = 0

  def trajectory_writer(self, num_keep_alive_refs):
    del num_keep_alive_refs
    client = self

    class _Writer:

      def end_episode(self, clear_buffers, timeout_ms):
        del clear_buffers
        client.end_episode_timeouts.append(timeout_ms)
        time.sleep(client.close_seconds)

      def close(self):
        client.num_closed += 1

    return _Writer()


class SignatureTest(_ReverbTestCase):

  def test_mismatched_table_is_named(self):
    agent = support.make_agent()
    other = support.make_agent(lstm_size=4)  # stored state of 4 units
    table = tables.make_prioritized_table(
        TABLE, 10, other.collect_data_spec,
        agent.sequence_config.sequence_length, samples_per_insert=1.0,
        min_size_to_sample=1)
    server, client = self.start_server([table])
    with self.assertRaisesRegex(ValueError, 'network_state.*float32\\[7, 4\\]'):
      sequence_writer.R2D2SequenceObserver(
          client, TABLE, agent.sequence_config, agent.collect_data_spec)
    buffer = reverb_replay_buffer.ReverbReplayBuffer(
        agent.collect_data_spec, TABLE, 7, local_server=server)
    with self.assertRaisesRegex(ValueError, 'network_state'):
      replay_dataset.replay_dataset(buffer, agent, batch_size=2)

  def test_mismatched_success_table_is_named(self):
    agent = support.make_agent()
    other = support.make_agent(lstm_size=4)
    length = agent.sequence_config.sequence_length
    _, client = self.start_server([
        tables.make_prioritized_table(
            name, 10, spec, length, samples_per_insert=1.0,
            min_size_to_sample=1)
        for name, spec in ((TABLE, agent.collect_data_spec),
                           ('successes', other.collect_data_spec))])
    with self.assertRaisesRegex(ValueError,
                                "'successes'.*network_state.*\\[7, 4\\]"):
      success_copies.SuccessCopies(
          client, 'successes', agent.sequence_config, min_return=1.0,
          collect_data_spec=agent.collect_data_spec)

  def test_other_sequence_length_is_named(self):
    agent = support.make_agent()
    table = tables.make_prioritized_table(
        TABLE, 10, agent.collect_data_spec, sequence_length=9,
        samples_per_insert=1.0, min_size_to_sample=1)
    _, client = self.start_server([table])
    with self.assertRaisesRegex(ValueError, 'sequence_length=7'):
      sequence_writer.R2D2SequenceObserver(
          client, TABLE, agent.sequence_config, agent.collect_data_spec)


class PrioritiesTest(_ReverbTestCase):

  def _fill_table(self, agent, priority_fn, episodes=2):
    # A rate-limiter slack far beyond what the test samples, so that the
    # dataset's background sampling never blocks the test's own samples.
    table = tables.make_prioritized_table(
        TABLE, 100, agent.collect_data_spec,
        agent.sequence_config.sequence_length, samples_per_insert=1.0,
        min_size_to_sample=1, error_buffer=1e6)
    server, client = self.start_server([table])
    observer = sequence_writer.R2D2SequenceObserver(
        client, TABLE, agent.sequence_config, agent.collect_data_spec,
        priority_fn=priority_fn)
    policy = py_tf_eager_policy.PyTFEagerPolicy(agent.collect_policy)
    _run_episodes(support.counting_env(episode_length=5), policy, observer,
                  num_episodes=episodes)
    observer.flush()
    return server, client, observer.num_items_written

  def test_actor_priorities_match_the_learner_before_training(self):
    agent = support.make_agent()
    server, _, num_items = self._fill_table(agent,
                                            agent.initial_priority_fn())
    self.assertEqual(num_items, 4)  # 2 items per 5-step episode
    buffer = reverb_replay_buffer.ReverbReplayBuffer(
        agent.collect_data_spec, TABLE, 7, local_server=server)
    experience, sample_info = next(iter(
        replay_dataset.replay_dataset(buffer, agent, batch_size=4)))
    # Before any update the target network equals the online one, so the
    # learner's priorities are exactly what the actor inserted.
    priorities = agent.loss(experience).extra.priorities
    self.assertAllClose(priorities, sample_info.priority, rtol=1e-5)
    self.assertGreater(np.min(sample_info.priority), 0.0)

  def test_sampled_batches_are_replay_dataset_batches(self):
    # The learner's own path (one stream, no per-sequence maps) gives the
    # structure, shapes and priorities a TF-Agents buffer's dataset gives.
    agent = support.make_agent()
    server, _, _ = self._fill_table(agent, agent.initial_priority_fn())
    buffer = reverb_replay_buffer.ReverbReplayBuffer(
        agent.collect_data_spec, TABLE, 7, local_server=server)
    expected = next(iter(replay_dataset.replay_dataset(buffer, agent, 4)))
    experience, sample_info = next(iter(replay_dataset.sampled_batches(
        f'localhost:{server.port}', TABLE, agent, batch_size=4)))
    tf.nest.assert_same_structure((experience, sample_info), expected)
    for got, want in zip(tf.nest.flatten((experience, sample_info)),
                         tf.nest.flatten(expected)):
      self.assertEqual(got.shape, want.shape)
      self.assertEqual(got.dtype, want.dtype)
    self.assertAllEqual(sample_info.priority.shape, [4])
    # Each sampled sequence comes with the priority the actor gave it.
    self.assertAllClose(agent.loss(experience).extra.priorities,
                        sample_info.priority, rtol=1e-5)

  def test_learner_priorities_are_written_back_by_key(self):
    agent = support.make_agent()
    server, client, num_items = self._fill_table(agent, None)
    buffer = reverb_replay_buffer.ReverbReplayBuffer(
        agent.collect_data_spec, TABLE, 7, local_server=server)
    experience, sample_info = next(iter(
        replay_dataset.replay_dataset(buffer, agent, batch_size=2)))
    self.assertAllEqual(sample_info.priority, [1.0, 1.0])  # default
    loss_info = agent.train(experience)
    updater = priority_updater.PriorityUpdater(
        buffer.tf_client.server_address, TABLE)
    updater((experience, sample_info), loss_info)

    expected = dict(zip(sample_info.key.numpy().tolist(),
                        loss_info.extra.priorities.numpy().tolist()))
    self.assertTrue(all(p != 1.0 for p in expected.values()))
    seen = {}
    for sample in client.sample(TABLE, num_samples=200,
                                emit_timesteps=False):
      seen[int(sample.info.key)] = float(sample.info.priority)
      if len(seen) == num_items:
        break
    for key, priority in expected.items():
      self.assertAllClose(seen[key], priority, rtol=1e-6)
    untouched = [p for k, p in seen.items() if k not in expected]
    self.assertTrue(all(p == 1.0 for p in untouched))
    self.assertLen(seen, num_items)


class TableSizesTest(_ReverbTestCase):

  def test_sizes_are_those_of_server_info(self):
    _, client = self.start_server([
        reverb.Table.queue('progress', 10),
        reverb.Table.queue('other', 10)])
    for _ in range(3):
      client.insert([np.int64(1)], priorities={'progress': 1.0})
    client.insert([np.int64(2)], priorities={'other': 1.0})
    self.assertEqual(tables.table_sizes(client), {'progress': 3, 'other': 1})
    self.assertEqual(
        {name: info.current_size
         for name, info in client.server_info().items()},
        tables.table_sizes(client))


class TfClientTest(support.TestCase):
  """`tables.tf_client` clients work when built in many threads at once.

  Unnamed `reverb.TFClient(address)` clients fail this test with NotFound
  (the race behind a thread-mode actor crash); see `tables.tf_client`.
  """

  def _sample_in_threads(self, make_client):
    """Errors of 8 threads x 20 clients x 3 samples, 3 rounds."""
    server = reverb.Server(
        [reverb.Table('v', reverb.selectors.Uniform(),
                      reverb.selectors.Fifo(), 1,
                      reverb.rate_limiters.MinSize(1))],
        port=portpicker.pick_unused_port())
    self.addCleanup(server.stop)
    address = f'localhost:{server.port}'
    reverb.Client(address).insert(np.float32(1.0), {'v': 1.0})
    errors = []

    def work():
      try:
        for _ in range(20):
          client = make_client(address)
          for _ in range(3):
            client.sample('v', [tf.float32])
      except tf.errors.NotFoundError as error:
        errors.append(error)

    for _ in range(3):
      threads = [threading.Thread(target=work) for _ in range(8)]
      for thread in threads:
        thread.start()
      for thread in threads:
        thread.join()
    return errors

  def test_clients_built_in_threads_keep_their_resource(self):
    self.assertEqual(
        self._sample_in_threads(
            lambda address: tables.tf_client(address, 'test')), [])


class MiniLoopTest(_ReverbTestCase):

  def test_actor_writes_and_stock_learner_trains(self):
    agent = support.make_agent(
        sequence_config=r2d2_config.SequenceConfig(2, 4, 2),
        target_update_period=2)
    train_step = agent.train_step_counter
    length = agent.sequence_config.sequence_length
    # Inserts are allowed while spi * inserts - samples <= spi * min_size +
    # error_buffer, samples while samples <= spi * (inserts - min_size) +
    # error_buffer = 2 * 2 + 100. The slack must exceed what the dataset's
    # parallel sampling streams hold in flight (4 streams here), or a
    # single-threaded actor-then-learner test can starve a stream.
    table = tables.make_prioritized_table(
        TABLE, 1000, agent.collect_data_spec, length,
        samples_per_insert=2.0, min_size_to_sample=2, error_buffer=100)
    server, _ = self.start_server([table])
    buffer = reverb_replay_buffer.ReverbReplayBuffer(
        agent.collect_data_spec, TABLE, length, local_server=server)
    observer = sequence_writer.R2D2SequenceObserver(
        buffer.py_client, TABLE, agent.sequence_config,
        agent.collect_data_spec, priority_fn=agent.initial_priority_fn())
    collect_actor = actor.Actor(
        support.counting_env(episode_length=6),
        py_tf_eager_policy.PyTFEagerPolicy(
            agent.actor_collect_policy(0, 2), use_tf_function=True),
        train_step, steps_per_run=14, observers=[observer])
    root_dir = self.get_temp_dir()
    updater = priority_updater.PriorityUpdater(
        buffer.tf_client.server_address, TABLE)
    updates = tf.Variable(0)

    def counting_updater(experience_and_sample_info, loss_info):
      updates.assign_add(1)
      return updater(experience_and_sample_info, loss_info)

    r2d2_learner = learner.Learner(
        root_dir, train_step, agent,
        experience_dataset_fn=lambda: replay_dataset.replay_dataset(
            buffer, agent, batch_size=4),
        after_train_strategy_step_fn=counting_updater,
        checkpoint_interval=3, summary_interval=1, triggers=[])
    weights_before = [v.numpy() for v in agent.q_network.variables]

    collect_actor.run()  # 14 steps = 2 episodes of 7 -> 4 items
    observer.flush()
    self.assertEqual(observer.num_items_written, 4)
    loss_info = r2d2_learner.run(iterations=3)  # SampleToInsertRatio: 8 max

    self.assertEqual(int(train_step), 3)
    self.assertTrue(np.isfinite(loss_info.loss.numpy()))
    # Some weights moved (not a given one: the first layer's 8 ReLUs of a
    # scalar input can all start dead, 1 init in 256).
    self.assertTrue(any(
        not np.allclose(after.numpy(), before, rtol=1e-6, atol=1e-6)
        for after, before in zip(agent.q_network.variables, weights_before)))
    self.assertEqual(int(updates), 3)  # priorities sent after every step
    info = buffer.py_client.server_info()[TABLE]
    self.assertEqual(info.rate_limiter_info.insert_stats.completed, 4)
    self.assertGreaterEqual(info.rate_limiter_info.sample_stats.completed, 12)
    self.assertNotEmpty(
        tf.io.gfile.glob(os.path.join(root_dir, 'train', 'checkpoints',
                                      'ckpt-3*')))


if __name__ == '__main__':
  tf.test.main()
