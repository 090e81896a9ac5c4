"""R2D3 experiments: demo table filling, mixed batches, pre-training, errors.

The R2D2 tiny settings (`test_r2d2_experiment.TINY_GIN`: Counting-v0
episodes of 6 steps, sequences of burn-in 2 + trace 4 + 1) plus the R2D3
bindings; the demonstrations are 4 recorded Counting episodes (always
action 1), written to a file in each test.
"""

import os
import re
import threading
from unittest import mock

from absl.testing import absltest
import gin
import numpy as np
import portpicker
import pytest
import reverb
import tensorflow as tf

import run_helpers  # pylint: disable=g-bad-import-order
import test_r2d2_experiment as r2d2_test  # pylint: disable=g-bad-import-order
from tfa_explore.testing import r2d3 as support  # pylint: disable=g-bad-import-order

from tfa_explore import config
from tfa_explore import errors
from tfa_explore.agents.r2d3 import agent as r2d3_agent
from tfa_explore.experiments import evaluation
from tfa_explore.experiments import r2d2
from tfa_explore.experiments import r2d3
from tfa_explore.replay import demonstrations
from tfa_explore.replay import mixed_dataset
from tfa_explore.testing import fake_envs

R2D3_BINDINGS = """
import tfa_explore.experiments.r2d3

r2d2.Settings.agent_fn = @r2d3.r2d3_agent_fn
r2d3.r2d3_agent_fn.margin = 0.8
r2d3.r2d3_agent_fn.ntd_loss_weight = 1.0
r2d3.r2d3_agent_fn.td1_loss_weight = 1.0
r2d3.r2d3_agent_fn.margin_loss_weight = 1.0
r2d3.r2d3_agent_fn.l2_loss_weight = 1e-5
r2d2.Settings.replay = @r2d3.DemonstrationReplay()
r2d3.DemonstrationReplay.path = '{path}'
r2d3.DemonstrationReplay.demo_ratio = 0.5
r2d3.DemonstrationReplay.pretrain_steps = 5
r2d3.DemonstrationReplay.table_capacity = 100
r2d2.Settings.eval_success_threshold = 0.0
r2d2.Settings.summary_interval = 1
r2d2.Settings.batch_size = 8
"""

NUM_DEMO_EPISODES = 4
PRETRAIN_STEPS = 5


def write_demo_file(path, num_actions=2, env_id=None):
  """4 Counting-v0 episodes (6 steps, action 1) in a demonstration file."""
  env = fake_envs.load_counting(seed=0, episode_length=6,
                               num_actions=num_actions)
  episodes = demonstrations.record_episodes(
      env, support.ActionSequenceSource([1]), NUM_DEMO_EPISODES)
  demonstrations.write_demonstrations(
      path, env_id or env.env_id, env.time_step_spec(), env.action_spec(),
      episodes)
  env.close()
  return episodes


class _TestCase(r2d2_test._TestCase):  # pylint: disable=protected-access

  def setUp(self):
    super().setUp()
    self.demo_path = os.path.join(self.get_temp_dir(), 'counting.demo')
    self.demo_episodes = write_demo_file(self.demo_path)
    self.r2d3_gin_file = os.path.join(self.get_temp_dir(), 'tiny_r2d3.gin')
    with open(self.r2d3_gin_file, 'w') as f:
      f.write(r2d2_test.TINY_GIN + R2D3_BINDINGS.format(path=self.demo_path))

  def r2d3_settings(self, *bindings):
    gin.clear_config()
    config.parse_gin([self.r2d3_gin_file], list(bindings))
    return r2d2.Settings()

  def expected_demo_sequences(self, settings):
    _, agent = r2d2.Builder(settings).make_agent()
    return demonstrations.count_sequences(self.demo_episodes, agent)


class _RecordingUpdater(mixed_dataset.MixedPriorityUpdater):
  """Counts the keys whose priorities go to each table."""

  instances = []

  def __init__(self, *args, **kwargs):
    super().__init__(*args, **kwargs)
    self.demo_keys = tf.Variable(0, dtype=tf.int64)
    self.agent_keys = tf.Variable(0, dtype=tf.int64)
    _RecordingUpdater.instances.append(self)

  def __call__(self, experience_and_sample_info, loss_info):
    experience, _ = experience_and_sample_info
    is_demo = tf.cast(tf.reshape(experience.is_demo, [-1]), tf.int64)
    self.demo_keys.assign_add(tf.reduce_sum(is_demo))
    self.agent_keys.assign_add(tf.reduce_sum(1 - is_demo))
    return super().__call__(experience_and_sample_info, loss_info)


@pytest.mark.integration
class SingleMachineTest(_TestCase):

  def test_fills_mixes_pretrains_and_does_not_pretrain_again_on_resume(self):
    root_dir = os.path.join(self.get_temp_dir(), 'run')
    settings = self.r2d3_settings()
    expected_sequences = self.expected_demo_sequences(settings)
    self.assertGreater(expected_sequences, NUM_DEMO_EPISODES)
    pretrain_calls = []
    real_pretrain = r2d3_agent.pretrain

    def recording_pretrain(agent, dataset, num_steps, after_train_step=None):
      pretrain_calls.append(num_steps)
      return real_pretrain(agent, dataset, num_steps=num_steps,
                           after_train_step=after_train_step)

    _RecordingUpdater.instances = []
    with mock.patch.object(r2d3_agent, 'pretrain', recording_pretrain), \
        mock.patch.object(mixed_dataset, 'MixedPriorityUpdater',
                          _RecordingUpdater):
      result = r2d2.train_eval(root_dir=root_dir)
    self.assertGreaterEqual(result['EnvironmentSteps'], 120)
    # Counting-v0 always pays 21 > 0: every eval episode is a success.
    self.assertEqual(result['SuccessRate'], 1.0)
    self.assertEqual(pretrain_calls, [PRETRAIN_STEPS])

    train = run_helpers.read_events(os.path.join(root_dir, 'train'))
    evals = run_helpers.read_events(os.path.join(root_dir, 'eval'))
    # The demo table holds exactly the file's sequences (filled once).
    self.assertEqual(int(train['Replay/r2d3_demonstrations/size'][-1][1]),
                     expected_sequences)
    self.assertGreater(int(train['Replay/r2d3_demonstrations/sampled'][-1][1]), 0)
    for tag in ('Losses/ntd', 'Losses/td1', 'Losses/margin', 'Losses/l2',
                'Losses/total', 'Losses/td_loss', 'Q/demo_action',
                'Q/other_actions', 'Replay/demo_fraction'):
      self.assertIn(tag, train)
    # Eval right after pre-training (env step 0) and at the end.
    self.assertEqual(evals['Metrics/SuccessRate'][0][0], 0)
    self.assertEqual(float(evals['Metrics/SuccessRate'][-1][1]), 1.0)
    # Pre-training batches are all demonstrations (x-axis: train step),
    # then mixed ones follow (their ratio: test_mixed_batches_near_rho).
    fractions = {step: float(value)
                 for step, value in train['Replay/demo_fraction']}
    self.assertTrue(all(fractions[step] == 1.0
                        for step in range(1, PRETRAIN_STEPS + 1)))
    self.assertTrue(any(step > PRETRAIN_STEPS for step in fractions))
    # Priorities went to both tables: the learner's updater saw demo and
    # agent keys (which table gets which is tested in test_r2d3_replay).
    learner_updaters = [u for u in _RecordingUpdater.instances
                        if u._agent_table is not None]  # pylint: disable=protected-access
    self.assertLen(learner_updaters, 1)
    self.assertGreater(int(learner_updaters[0].demo_keys), 0)
    self.assertGreater(int(learner_updaters[0].agent_keys), 0)
    train_steps = int(train['Metrics/LearnerSteps'][-1][1])
    self.assertGreater(train_steps, PRETRAIN_STEPS)

    # Resume with a larger budget: no pre-training again.
    gin.clear_config()
    config.parse_gin([self.r2d3_gin_file], ['NUM_ENV_STEPS = 200'])
    pretrain_calls.clear()
    with mock.patch.object(r2d3_agent, 'pretrain', recording_pretrain):
      result = r2d2.train_eval(root_dir=root_dir)
    self.assertEqual(pretrain_calls, [])
    self.assertGreaterEqual(result['EnvironmentSteps'], 200)
    # The restored train step goes on (the resumed run's own learner steps
    # depend on how fast actors outrun the learner in 80 env steps).
    train = run_helpers.read_events(os.path.join(root_dir, 'train'))
    self.assertGreaterEqual(int(train['Metrics/LearnerSteps'][-1][1]),
                            train_steps)

  def test_r2d2_without_demonstrations_is_unchanged(self):
    # The twin's server has R2D2's three tables only.
    config.parse_gin([self.gin_file], [])
    settings = r2d2.Settings()
    self.assertIsInstance(settings.replay, r2d2.AgentReplay)
    self.assertIsNone(settings.eval_success_threshold)
    _, agent = r2d2.Builder(settings).make_agent()
    self.assertEqual(
        [table.name for table in r2d2.Builder(settings).make_tables(agent)],
        [r2d2.AGENT_TABLE, r2d2.VARIABLES_TABLE, r2d2.PROGRESS_TABLE])


class SuccessRateTest(absltest.TestCase):

  def test_fraction_of_returns_above_the_threshold(self):
    # MiniGrid returns: 0 (timed out) or 1 - 0.9 t / T > 0 (goal reached).
    # 2 of 4 above 0 -> 0.5; a return equal to the threshold is no success.
    self.assertEqual(evaluation.success_rate([0.0, 0.93, 0.0, 0.5], 0.0), 0.5)
    self.assertEqual(evaluation.success_rate([1.0, 2.0], 1.0), 0.5)
    with self.assertRaisesRegex(ValueError, 'at least one episode'):
      evaluation.success_rate([], 0.0)


@pytest.mark.integration
class InProcessServerTest(_TestCase):
  """make_replay_server + run_learner + run_actor threads (the binaries)."""

  def start_server(self, settings):
    server = r2d2.make_replay_server(settings,
                                     port=portpicker.pick_unused_port())
    self.addCleanup(server.stop)
    address = f'localhost:{server.port}'
    return address, reverb.Client(address)

  def train_with_one_actor(self, settings, address, name):
    """Runs actor 0 in a thread and the learner; returns the final eval."""
    stop = threading.Event()
    self.addCleanup(stop.set)
    actor = threading.Thread(
        target=r2d2.run_actor, daemon=True,
        kwargs=dict(settings=settings, task=0, replay_server=address,
                    stop_event=stop))
    actor.start()
    result = r2d2.run_learner(settings, address,
                              os.path.join(self.get_temp_dir(), name))
    actor.join(timeout=60)
    self.assertFalse(actor.is_alive())
    return result

  def test_learner_and_actors_against_a_server_with_a_demo_table(self):
    settings = self.r2d3_settings(
        'r2d3.DemonstrationReplay.pretrain_steps = 0',
        'r2d2.Settings.num_actors = 1')
    address, client = self.start_server(settings)
    demo_table = r2d3.DEMO_TABLE
    self.assertIn(demo_table, client.server_info())
    self.assertEqual(client.server_info()[demo_table].current_size, 0)
    result = self.train_with_one_actor(settings, address, 'learner')
    self.assertGreaterEqual(result['EnvironmentSteps'], 120)
    expected = self.expected_demo_sequences(settings)
    self.assertEqual(client.server_info()[demo_table].current_size, expected)
    # Demo priorities started at 1.0; the learner rewrote the sampled ones.
    priorities = {}
    for sample in client.sample(demo_table, num_samples=50 * expected,
                                emit_timesteps=False):
      priorities[int(sample.info.key)] = float(sample.info.priority)
    self.assertTrue(any(abs(p - 1.0) > 1e-6 for p in priorities.values()),
                    priorities)

    # A restarted learner (new root_dir, same server) finds the table full
    # and writes nothing.
    _, agent = r2d2.Builder(settings).make_agent()
    self.assertEqual(settings.replay.fill_table(client, agent), 0)
    self.assertEqual(client.server_info()[demo_table].current_size, expected)
    # A partly filled table (learner crash while filling) is refilled.
    client.reset(demo_table)
    written = demonstrations.write_to_table(self.demo_episodes[:1], client,
                                            demo_table, agent)
    self.assertLess(written, expected)
    self.assertEqual(settings.replay.fill_table(client, agent),
                     expected)
    self.assertEqual(client.server_info()[demo_table].current_size, expected)

  def test_demo_and_success_tables_survive_a_server_restart(self):
    settings = self.r2d3_settings(
        'r2d3.DemonstrationReplay.success_min_return = 21.0',
        'r2d3.DemonstrationReplay.success_ratio = 0.5',
        'r2d3.DemonstrationReplay.success_table_capacity = 1000')
    checkpoint_dir = os.path.join(self.get_temp_dir(), 'replay')
    port = portpicker.pick_unused_port()
    server = r2d2.make_replay_server(settings, port, checkpoint_dir)
    client = reverb.Client(f'localhost:{port}')
    _, agent = r2d2.Builder(settings).make_agent()
    expected = self.expected_demo_sequences(settings)
    # The learner's preparation: demonstrations, and the success seed.
    self.assertEqual(settings.replay.fill_table(client, agent), expected)
    client.checkpoint()
    server.stop()

    server = r2d2.make_replay_server(settings, port, checkpoint_dir)
    self.addCleanup(server.stop)
    info = client.server_info()
    self.assertEqual(info[r2d3.DEMO_TABLE].current_size, expected)
    self.assertEqual(info[r2d3.SUCCESS_TABLE].current_size, expected)
    # A restarted learner finds them in place and writes nothing.
    self.assertEqual(settings.replay.fill_table(client, agent), 0)
    self.assertEqual(
        client.server_info()[r2d3.DEMO_TABLE].rate_limiter_info.insert_stats
        .completed, expected)

  def test_actors_copy_successes_that_the_learner_samples(self):
    # Counting-v0 episodes of 6 steps return 21: with a threshold of 21
    # every actor episode is a success; the learner seeds the table with
    # the demonstrations first.
    settings = self.r2d3_settings(
        'r2d3.DemonstrationReplay.pretrain_steps = 0',
        'r2d3.DemonstrationReplay.success_min_return = 21.0',
        'r2d3.DemonstrationReplay.success_ratio = 0.5',
        'r2d3.DemonstrationReplay.success_table_capacity = 1000',
        'r2d2.Settings.num_actors = 1')
    address, client = self.start_server(settings)
    success_table = r2d3.SUCCESS_TABLE
    self.assertEqual(client.server_info()[success_table].current_size, 0)
    result = self.train_with_one_actor(settings, address, 'learner')
    seed = self.expected_demo_sequences(settings)
    info = client.server_info()[success_table]
    # Every complete actor episode (6 steps, like a demo episode) was
    # copied whole; the actor stops within a few episodes of the budget.
    per_episode = seed // NUM_DEMO_EPISODES
    copied = info.rate_limiter_info.insert_stats.completed - seed
    self.assertEqual(copied % per_episode, 0)
    self.assertBetween(copied // per_episode,
                       result['EnvironmentSteps'] // 6 - 4,
                       result['EnvironmentSteps'] // 6 + 4)
    # The learner sampled the success table.
    self.assertGreater(info.rate_limiter_info.sample_stats.completed, 0)
    self.assertGreaterEqual(result['EnvironmentSteps'], 120)

    # A threshold no episode reaches copies nothing beyond the seed.
    settings = self.r2d3_settings(
        'r2d3.DemonstrationReplay.pretrain_steps = 0',
        'r2d3.DemonstrationReplay.success_min_return = 22.0',
        'r2d2.Settings.num_actors = 1')
    address, client = self.start_server(settings)
    self.train_with_one_actor(settings, address, 'learner2')
    info = client.server_info()[success_table]
    self.assertEqual(info.rate_limiter_info.insert_stats.completed, seed)

  def test_mixed_batches_near_rho(self):
    # The learner's dataset on a server whose agent table holds known
    # sequences (Counting episodes, always action 0; the demos always take
    # action 1, padding has action 0). The agent
    # table's SampleToInsertRatio admits about min_size_to_sample + slack
    # inserts without samples (then writes block) and, at 50 samples per
    # insert, enough samples for this test.
    settings = self.r2d3_settings('r2d2.Settings.samples_per_insert = 50.0')
    server = r2d2.make_replay_server(settings)
    self.addCleanup(server.stop)
    address = f'localhost:{server.port}'
    client = reverb.Client(address)
    _, agent = r2d2.Builder(settings).make_agent()
    settings.replay.fill_table(client, agent)
    agent_episodes = demonstrations.record_episodes(
        fake_envs.load_counting(seed=0, episode_length=3),
        support.ActionSequenceSource([0]), 5)
    self.assertBetween(
        demonstrations.count_sequences(agent_episodes, agent),
        settings.min_size_to_sample, settings.min_size_to_sample + 2)
    demonstrations.write_to_table(agent_episodes, client, r2d2.AGENT_TABLE,
                                  agent)
    dataset, _ = settings.replay.sampling(
        address, agent, batch_size=8, seed=0, rate_limiter_timeout_ms=5000)
    flags = []
    for experience, _ in dataset.take(5):
      # The flag matches the table: only demo sequences hold action 1.
      self.assertAllEqual(np.any(experience.trajectory.action == 1, axis=1),
                          experience.is_demo)
      flags.append(experience.is_demo.numpy())
    # 40 elements, rho = 0.5: sigma of the fraction sqrt(0.25 / 40) = 0.079.
    self.assertBetween(np.mean(np.concatenate(flags)), 0.2, 0.8)


class ErrorsTest(_TestCase):

  def assert_config_error(self, regex, *bindings):
    gin.clear_config()
    config.parse_gin([self.r2d3_gin_file], list(bindings))
    with self.assertRaisesRegex(errors.ConfigError, regex):
      r2d2.train_eval(root_dir=os.path.join(self.get_temp_dir(), 'bad'))

  def test_missing_demo_file_names_the_parameter_and_file(self):
    missing = os.path.join(self.get_temp_dir(), 'nope.demo')
    self.assert_config_error(
        f"r2d3.DemonstrationReplay.path = '{missing}': no such file",
        f"r2d3.DemonstrationReplay.path = '{missing}'")

  def test_spec_mismatch_names_the_parameter_and_field(self):
    other = os.path.join(self.get_temp_dir(), 'three_actions.demo')
    write_demo_file(other, num_actions=3)
    self.assert_config_error(
        "r2d3.DemonstrationReplay.path = .*three_actions.demo.*'action' has "
        'maximum 2 in the file but the agent needs 1',
        f"r2d3.DemonstrationReplay.path = '{other}'")

  def test_other_env_id_is_named(self):
    other = os.path.join(self.get_temp_dir(), 'other_env.demo')
    write_demo_file(other, env_id='SomethingElse-v0')
    self.assert_config_error(
        "recorded in 'SomethingElse-v0' but the agent acts in "
        "'tfa_explore_testing/Counting-v0'",
        f"r2d3.DemonstrationReplay.path = '{other}'")

  def test_a_damaged_episode_is_found_before_anything_starts(self):
    header, records_start = demonstrations.read_header(self.demo_path)
    entry = header['episodes'][2]
    position = records_start + entry['offset'] + entry['length'] // 2
    with open(self.demo_path, 'r+b') as f:
      f.seek(position)
      data = f.read(8)
      f.seek(position)
      f.write(bytes(byte ^ 0xFF for byte in data))
    start = records_start + entry['offset']
    expected = re.escape(
        f"r2d3.DemonstrationReplay.path = '{self.demo_path}': "
        f'{self.demo_path}: episode 2 (bytes {start}..'
        f'{start + entry["length"]}): CRC32 checksum mismatch')
    # The strategy's setup check reads the whole file...
    settings = self.r2d3_settings()
    env = settings.env_loader(seed=0)
    self.addCleanup(env.close)
    with self.assertRaisesRegex(errors.ConfigError, expected):
      settings.replay.check(env.time_step_spec(), env.action_spec(),
                                  env.env_id)
    # ...so a run stops before its server, actors and learner start (the
    # first of them would create root_dir).
    root_dir = os.path.join(self.get_temp_dir(), 'damaged')
    with self.assertRaisesRegex(errors.ConfigError, expected):
      r2d2.train_eval(root_dir=root_dir)
    self.assertFalse(os.path.exists(root_dir))

  @pytest.mark.integration
  def test_bad_demo_path_exits_train_eval_with_code_2(self):
    result = run_helpers.run_binary(
        'train_eval.py', f'--root_dir={self.get_temp_dir()}/cli',
        f'--gin_file={self.r2d3_gin_file}',
        "--gin_bindings=r2d3.DemonstrationReplay.path = 'missing.demo'",
        timeout=120)
    self.assertEqual(result.returncode, 2, result.stderr[-2000:])
    self.assertIn("r2d3.DemonstrationReplay.path = 'missing.demo': no such file",
                  result.stderr)

  def test_table_too_small_names_table_capacity(self):
    settings = self.r2d3_settings('r2d3.DemonstrationReplay.table_capacity = 2')
    server = r2d2.make_replay_server(settings)
    self.addCleanup(server.stop)
    _, agent = r2d2.Builder(settings).make_agent()
    with self.assertRaisesRegex(errors.ConfigError,
                                'table_capacity = 2; raise it to at least'):
      settings.replay.fill_table(
          reverb.Client(f'localhost:{server.port}'), agent)

  def test_success_table_too_small_names_its_capacity(self):
    settings = self.r2d3_settings(
        'r2d3.DemonstrationReplay.success_min_return = 1.0',
        'r2d3.DemonstrationReplay.success_table_capacity = 2')
    server = r2d2.make_replay_server(settings)
    self.addCleanup(server.stop)
    _, agent = r2d2.Builder(settings).make_agent()
    with self.assertRaisesRegex(
        errors.ConfigError,
        'success_table_capacity = 2; raise it to at least'):
      settings.replay.fill_table(
          reverb.Client(f'localhost:{server.port}'), agent)

  def test_learner_refuses_a_server_without_the_success_table(self):
    server = r2d2.make_replay_server(self.r2d3_settings())
    self.addCleanup(server.stop)
    settings = self.r2d3_settings(
        'r2d3.DemonstrationReplay.success_min_return = 1.0')
    with self.assertRaisesRegex(ValueError,
                                "no table 'r2d3_agent_successes'.*same gin"):
      r2d2.run_learner(settings, f'localhost:{server.port}',
                       os.path.join(self.get_temp_dir(), 'learner'))

  def test_demonstrations_need_an_r2d3_agent(self):
    settings = self.r2d3_settings(
        'r2d2.Settings.agent_fn = @r2d2.r2d2_agent_fn')
    # Every role that builds the agent refuses it, the server first.
    with self.assertRaisesRegex(errors.ConfigError, 'needs an R2D3Agent'):
      r2d2.make_replay_server(settings)
    with self.assertRaisesRegex(errors.ConfigError, 'needs an R2D3Agent'):
      r2d2.run_learner(settings, 'localhost:1',
                       os.path.join(self.get_temp_dir(), 'learner'))

  def test_learner_refuses_a_server_without_the_demo_table(self):
    config.parse_gin([self.gin_file], [])
    r2d2_server = r2d2.make_replay_server(
        r2d2.Settings())
    self.addCleanup(r2d2_server.stop)
    settings = self.r2d3_settings()
    with self.assertRaisesRegex(ValueError,
                                "no table 'r2d3_demonstrations'.*same gin"):
      r2d2.run_learner(settings, f'localhost:{r2d2_server.port}',
                       os.path.join(self.get_temp_dir(), 'learner'))

  def test_bad_settings(self):
    for binding, regex in (('demo_ratio = 1.5', 'demo_ratio'),
                           ('pretrain_steps = -1', 'pretrain_steps'),
                           ('table_capacity = 0', 'table_capacity'),
                           ('success_ratio = -0.1', 'success_ratio'),
                           ('success_table_capacity = 0',
                            'success_table_capacity')):
      with self.subTest(binding), self.assertRaisesRegex(ValueError, regex):
        self.r2d3_settings(f'r2d3.DemonstrationReplay.{binding}')


class ThreeProcessTest(r2d2_test.ThreeProcessTest):
  """R2D2's three-binary loopback test, run with an R2D3 gin file."""

  test_bad_gin_binding_exits_with_code_2 = None  # Same code path as R2D2.
  test_a_task_out_of_range_exits_2 = None  # Same code path as R2D2.

  def setUp(self):
    super().setUp()
    demo_path = os.path.join(self.get_temp_dir(), 'counting.demo')
    write_demo_file(demo_path)
    self.gin_file = os.path.join(self.get_temp_dir(), 'tiny_r2d3.gin')
    with open(self.gin_file, 'w') as f:
      f.write(r2d2_test.TINY_GIN + R2D3_BINDINGS.format(path=demo_path))

  def test_three_binaries_train_on_loopback(self):
    # The learner fills the server's demo table and pre-trains before the
    # actors get weights; the server and actors never read the file.
    super().test_three_binaries_train_on_loopback()
    train = run_helpers.read_events(
        os.path.join(self.get_temp_dir(), 'distributed', 'train'))
    self.assertIn('Losses/margin', train)
    self.assertGreater(int(train['Replay/r2d3_demonstrations/size'][-1][1]), 0)


if __name__ == '__main__':
  absltest.main()
