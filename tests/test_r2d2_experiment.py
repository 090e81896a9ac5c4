"""R2D2 experiments: single-machine train_eval, three-process run, errors.

Tiny settings on the fake Counting env (episodes of 6 steps, sequences of
burn-in 2 + trace 4 + 1), so each run takes seconds plus TF start-up.
"""

import functools
import glob
import os
import signal
import subprocess
import sys
import tempfile
import time

from absl.testing import absltest
import gin
import numpy as np
import portpicker
import pytest
import reverb
import tensorflow as tf
# Registers the distribution TypeSpecs a PolicySaver SavedModel refers to.
import tensorflow_probability  # pylint: disable=unused-import
from tf_agents.specs import array_spec
from tf_agents.specs import tensor_spec
from tf_agents.trajectories import time_step as ts

from tfa_explore import config
from tfa_explore import errors
from tfa_explore.experiments import r2d2
import run_helpers  # pylint: disable=g-bad-import-order
import test_console  # pylint: disable=g-bad-import-order

TINY_GIN = """
import tfa_explore.agents.r2d2.config
import tfa_explore.environments.suite_gymnasium
import tfa_explore.experiments.r2d2
import tfa_explore.config.experiment
import tfa_explore.testing.fake_envs

NUM_ENV_STEPS = 120
SEED = 0
run_experiment.experiment = @r2d2.train_eval
r2d2.Settings.env_loader = @suite_gymnasium.load
suite_gymnasium.load.env_id = 'tfa_explore_testing/Counting-v0'
suite_gymnasium.load.gym_kwargs = {'episode_length': 6}
r2d2.Settings.agent_fn = @r2d2.r2d2_agent_fn
r2d2.Settings.num_env_steps = %NUM_ENV_STEPS
r2d2.Settings.seed = %SEED
r2d2.Settings.num_actors = 2
r2d2.Settings.batch_size = 4
r2d2.Settings.replay_capacity = 1000
r2d2.Settings.samples_per_insert = 2.0
r2d2.Settings.min_size_to_sample = 4
r2d2.Settings.priority_exponent = 0.9
r2d2.Settings.eval_interval = 1000000
r2d2.Settings.num_eval_episodes = 2
r2d2.Settings.checkpoint_interval = 1000000
r2d2.Settings.log_interval = 40
r2d2.Settings.summary_interval = 2
r2d2.Settings.train_steps_per_iteration = 2
r2d2.Settings.variable_push_period = 2
r2d2.Settings.actor_update_period = 12
r2d2.Settings.sample_timeout_seconds = 5.0
r2d2.Settings.shutdown_timeout_seconds = 20.0
r2d2.r2d2_agent_fn.sequence_config = @r2d2/SequenceConfig()
r2d2/SequenceConfig.burn_in_steps = 2
r2d2/SequenceConfig.trace_length = 4
r2d2/SequenceConfig.replay_period = 2
r2d2.r2d2_agent_fn.lstm_size = 8
r2d2.r2d2_agent_fn.torso_fc_layer_params = (8,)
r2d2.r2d2_agent_fn.dueling_fc_layer_params = (8,)
r2d2.r2d2_agent_fn.learning_rate = 1e-3
r2d2.r2d2_agent_fn.adam_epsilon = 1e-3
r2d2.r2d2_agent_fn.n_step = 2
r2d2.r2d2_agent_fn.gamma = 0.9
r2d2.r2d2_agent_fn.target_update_period = 5
r2d2.r2d2_agent_fn.importance_sampling_exponent = 0.6
r2d2.r2d2_agent_fn.priority_max_weight = 0.9
r2d2.r2d2_agent_fn.gradient_clipping = 40.0
"""

# An NGU bonus on TINY_GIN's agent (small networks).
TINY_NGU_BINDINGS = """
import tfa_explore.experiments.intrinsic
import tfa_explore.networks.rnd_networks
r2d2.r2d2_agent_fn.exploration = @intrinsic.ngu_bonus
intrinsic.ngu_bonus.rnd_fn = @intrinsic.rnd_intrinsic_reward
intrinsic.ngu_bonus.arms = True
intrinsic.ngu_bonus.memory_size = 8
intrinsic.ngu_bonus.max_modulator = 5.0
intrinsic.rnd_intrinsic_reward.coef = 0.3
intrinsic.rnd_intrinsic_reward.discount = 0.7
intrinsic.rnd_intrinsic_reward.non_episodic = False
intrinsic.rnd_intrinsic_reward.normalize_returns = False
intrinsic.rnd_intrinsic_reward.normalize_observations = True
intrinsic.rnd_intrinsic_reward.observation_clip = 5.0
intrinsic.rnd_intrinsic_reward.learning_rate = 1e-4
intrinsic.rnd_intrinsic_reward.adam_epsilon = 1e-5
intrinsic.rnd_intrinsic_reward.predictor_update_proportion = 0.25
intrinsic.rnd_intrinsic_reward.first_visits_only = False
intrinsic.rnd_intrinsic_reward.networks_fn = @rnd_mlp_networks
rnd_mlp_networks.torso_fc_layer_params = (8,)
rnd_mlp_networks.predictor_fc_layer_params = (8,)
rnd_mlp_networks.output_dim = 4
"""


class _TestCase(tf.test.TestCase):
  # tf.test.TestCase's deprecated `test_session` is not a test.
  test_session = None

  def setUp(self):
    super().setUp()
    gin.clear_config()
    self.addCleanup(gin.clear_config)
    self.gin_file = os.path.join(self.get_temp_dir(), 'tiny_r2d2.gin')
    with open(self.gin_file, 'w') as f:
      f.write(TINY_GIN)

  def settings(self, *bindings):
    config.parse_gin([self.gin_file], list(bindings))
    return r2d2.Settings()


@pytest.mark.integration
class SingleMachineTest(_TestCase):

  def test_train_eval_trains_evaluates_checkpoints_and_resumes(self):
    root_dir = os.path.join(self.get_temp_dir(), 'run')
    config.parse_gin([self.gin_file], [])
    result = r2d2.train_eval(root_dir=root_dir)
    self.assertGreaterEqual(result['EnvironmentSteps'], 120)
    # Counting-v0: reward t at step t, 6 steps -> 0 + 1 + ... + 5 + 6 = 21.
    self.assertEqual(result['AverageReturn'], 21.0)
    self.assertEqual(result['AverageEpisodeLength'], 6.0)

    self.assertTrue(os.path.exists(os.path.join(root_dir,
                                                'operative_config.gin')))
    train = run_helpers.read_events(os.path.join(root_dir, 'train'))
    for tag in ('Losses/td_loss', 'Q/selected_mean', 'Q/selected_max',
                'Replay/priority_mean', 'Replay/priority_max', 'Replay/size',
                'Replay/inserts_per_second', 'Replay/samples_per_second',
                'Metrics/EnvironmentSteps', 'Metrics/AverageReturn',
                'Actor/0/Epsilon', 'Actor/1/Epsilon', 'operative_config'):
      self.assertIn(tag, train)
    # An actor thread starved on a busy machine may end no episode in 120
    # steps: a slot's return appears once it has one.
    self.assertTrue({'Actor/0/AverageReturn', 'Actor/1/AverageReturn'} &
                    set(train))
    # epsilon_i = 0.4^(1 + 7 i / (N - 1)): 0.4 and 0.4^8 for N = 2.
    self.assertAllClose(train['Actor/0/Epsilon'][-1][1], 0.4)
    self.assertAllClose(train['Actor/1/Epsilon'][-1][1], 0.4**8)
    self.assertTrue(np.isfinite(train['Losses/td_loss'][-1][1]))
    self.assertGreater(train['Replay/inserted'][-1][1], 0)
    evals = run_helpers.read_events(os.path.join(root_dir, 'eval'))
    self.assertEqual(float(evals['Metrics/AverageReturn'][-1][1]), 21.0)
    actor_events = run_helpers.read_events(
        os.path.join(root_dir, 'actors', '0'))
    self.assertIn('Actor/SequencesPerSecond', actor_events)

    # The exported greedy policy is stateful and runs on raw time steps.
    policy = tf.saved_model.load(
        os.path.join(root_dir, 'policies', 'greedy_policy'))
    state = policy.get_initial_state(1)
    step = ts.restart(tf.constant([[0.0]]), batch_size=1)
    action = policy.action(step, state).action
    self.assertIn(int(action[0]), (0, 1))

    checkpoints = tf.train.get_checkpoint_state(
        os.path.join(root_dir, 'checkpoints'))
    first_checkpoint = checkpoints.model_checkpoint_path
    train_steps = int(train['Metrics/LearnerSteps'][-1][1])
    self.assertGreater(train_steps, 0)

    # A rerun of the finished run returns its final eval and writes no
    # second point at the same env step.
    gin.clear_config()
    config.parse_gin([self.gin_file], [])
    self.assertEqual(r2d2.train_eval(root_dir=root_dir), result)
    self.assertEqual(
        run_helpers.read_events(os.path.join(root_dir, 'eval')).keys(),
        evals.keys())
    self.assertLen(run_helpers.read_events(os.path.join(root_dir, 'eval'))[
        'Metrics/AverageReturn'], len(evals['Metrics/AverageReturn']))
    self.assertLen(run_helpers.read_events(os.path.join(root_dir, 'train'))[
        'Metrics/EnvironmentSteps'], len(train['Metrics/EnvironmentSteps']))

    # Resume with a larger budget: the counters continue.
    gin.clear_config()
    config.parse_gin([self.gin_file], ['NUM_ENV_STEPS = 200'])
    result = r2d2.train_eval(root_dir=root_dir)
    self.assertGreaterEqual(result['EnvironmentSteps'], 200)
    latest = tf.train.get_checkpoint_state(
        os.path.join(root_dir, 'checkpoints')).model_checkpoint_path
    self.assertNotEqual(latest, first_checkpoint)
    train = run_helpers.read_events(os.path.join(root_dir, 'train'))
    self.assertGreater(int(train['Metrics/LearnerSteps'][-1][1]),
                       train_steps)
    # The resumed run's env-step axis starts where the first one ended.
    resumed_steps = [s for s, _ in train['Metrics/LearnerSteps']]
    self.assertGreaterEqual(min(resumed_steps[-1:]), 120)

  def test_learning_rate_decay_reaches_the_optimizer(self):
    settings = self.settings(
        'r2d2.r2d2_agent_fn.learning_rate_decay_steps = 10')
    env = settings.env_loader(seed=0)
    agent = settings.agent_fn(
        time_step_spec=tensor_spec.from_spec(env.time_step_spec()),
        action_spec=tensor_spec.from_spec(env.action_spec()),
        train_step_counter=tf.Variable(0, dtype=tf.int64))
    env.close()
    # The optimizer's config holds the schedule it was built with.
    schedule = tf.keras.optimizers.schedules.deserialize(
        agent.optimizer.get_config()['learning_rate'])
    lr = float(schedule(0))
    self.assertGreater(lr, 0.0)
    self.assertAllClose([float(schedule(s)) for s in (5, 10, 20)],
                        [lr / 2, 0.0, 0.0])

  def test_feed_forward_baseline_runs(self):
    root_dir = os.path.join(self.get_temp_dir(), 'ff')
    config.parse_gin([self.gin_file],
                     ['r2d2.r2d2_agent_fn.lstm_size = None',
                      "r2d2.Settings.actor_mode = 'thread'"])
    result = r2d2.train_eval(root_dir=root_dir)
    self.assertGreaterEqual(result['EnvironmentSteps'], 120)


  def test_batched_actors_report_every_epsilon_slot(self):
    root_dir = os.path.join(self.get_temp_dir(), 'batched')
    config.parse_gin([self.gin_file],
                     ['r2d2.Settings.envs_per_actor = 3',
                      'r2d2.Settings.summary_interval = 1'])
    result = r2d2.train_eval(root_dir=root_dir)
    self.assertGreaterEqual(result['EnvironmentSteps'], 120)
    train = run_helpers.read_events(os.path.join(root_dir, 'train'))
    # 2 actors x 3 envs = 6 slots; each finished 6-step episodes.
    for slot in range(6):
      self.assertIn(f'Actor/{slot}/AverageReturn', train)
    self.assertNotIn('Actor/6/AverageReturn', train)
    epsilons = [float(train[f'Actor/{slot}/Epsilon'][-1][1])
                for slot in range(6)]
    self.assertAllClose(epsilons, [0.4**(1 + 7 * j / 5) for j in range(6)],
                        rtol=1e-6)


def _process_running(pid):
  """True while `pid` exists and is not a zombie (Linux /proc)."""
  try:
    with open(f'/proc/{pid}/stat') as stat:
      state = stat.read().rsplit(')', 1)[1].split()[0]
  except FileNotFoundError:
    return False
  return state not in ('Z', 'X')


@pytest.mark.integration
class OrphanedActorTest(absltest.TestCase):

  def test_actor_process_exits_when_its_parent_is_killed(self):
    self._check_orphan_exits('')

  def test_orphan_exits_when_its_stderr_is_a_broken_pipe(self):
    # As after a kill of train_eval and its stderr line filter: absl's
    # handler raises on the watchdog's last line, which must not stop the
    # exit.
    self._check_orphan_exits(
        'read_end, write_end = os.pipe()\n'
        'os.close(read_end)\n'
        'os.dup2(write_end, 2)\n'
        'from absl import logging\n'
        'logging.use_absl_handler()\n')

  def _check_orphan_exits(self, child_setup):
    # parent (SIGKILLed below, so no clean-up runs) -> child with the
    # watchdog `_actor_process_main` installs, sleeping as a blocked actor.
    child_code = (
        'import os, time\n' + child_setup +
        'from tfa_explore.experiments.r2d2 import launcher\n'
        'launcher.exit_when_orphaned(os.getppid(), poll_seconds=0.1)\n'
        'print("ready", flush=True)\n'
        'time.sleep(120)\n')
    parent_code = (
        'import subprocess, sys, time\n'
        f'child = subprocess.Popen([sys.executable, "-c", {child_code!r}])\n'
        'print(child.pid, flush=True)\n'
        'time.sleep(120)\n')
    parent = subprocess.Popen([sys.executable, '-c', parent_code],
                              stdout=subprocess.PIPE, text=True,
                              cwd=run_helpers.REPO_ROOT)
    child_pid = int(parent.stdout.readline())
    try:
      # The child shares the parent's stdout.
      self.assertEqual(parent.stdout.readline().strip(), 'ready')
      self.assertTrue(_process_running(child_pid))
      parent.kill()
      parent.wait(timeout=10)
      deadline = time.time() + 30
      while _process_running(child_pid) and time.time() < deadline:
        time.sleep(0.2)
      self.assertFalse(_process_running(child_pid),
                       'the orphaned child is still running')
    finally:
      if _process_running(child_pid):
        os.kill(child_pid, 9)
      parent.stdout.close()


class ErrorsTest(_TestCase):

  def test_non_discrete_action_spec_is_named(self):
    settings = self.settings()
    env = settings.env_loader(seed=0)
    time_step_spec = tensor_spec.from_spec(env.time_step_spec())
    env.close()
    continuous = tensor_spec.BoundedTensorSpec((), tf.float32, -1.0, 1.0)
    with self.assertRaisesRegex(ValueError, 'discrete.*float32'):
      settings.agent_fn(time_step_spec=time_step_spec,
                        action_spec=continuous,
                        train_step_counter=tf.Variable(0, dtype=tf.int64))

  def test_continuous_env_is_refused_before_anything_starts(self):
    settings = self.settings()
    env = settings.env_loader(seed=0)
    time_step_spec = env.time_step_spec()
    env.close()
    continuous = array_spec.BoundedArraySpec((1,), np.float32, -1.0, 1.0)
    with self.assertRaisesRegex(
        errors.ConfigError,
        r"r2d2.Settings.env_loader: R2D2 needs a discrete action space .*"
        r"'Pendulum-v1' has action spec BoundedArraySpec\(shape=\(1,\), "
        r"dtype=dtype\('float32'\)"):
      settings.replay.check(time_step_spec, continuous, 'Pendulum-v1')

  def test_replay_server_of_another_agent_is_refused(self):
    server = r2d2.make_replay_server(self.settings())
    self.addCleanup(server.stop)
    gin.clear_config()
    other = self.settings('r2d2.r2d2_agent_fn.lstm_size = 4')
    address = f'localhost:{server.port}'
    with self.assertRaisesRegex(ValueError, 'network_state.*float32\\[7, 4\\]'):
      r2d2.run_actor(other, task=0, replay_server=address)
    with self.assertRaisesRegex(ValueError, 'network_state'):
      r2d2.run_learner(other, address,
                       os.path.join(self.get_temp_dir(), 'learner'))

  def test_server_without_r2d2_tables_is_named(self):
    server = reverb.Server([reverb.Table.queue('other', 10)], port=None)
    self.addCleanup(server.stop)
    with self.assertRaisesRegex(ValueError, 'no table.*r2d2_sequences'):
      r2d2.run_actor(self.settings(), task=0,
                     replay_server=f'localhost:{server.port}')

  def test_values_that_cannot_work_are_config_errors_naming_the_factory(self):
    counter = tf.Variable(0, dtype=tf.int64)
    for binding, message in (
        ('r2d2.r2d2_agent_fn.learning_rate = -1e-4',
         'r2d2.r2d2_agent_fn: learning_rate must be > 0, got -0.0001.'),
        ('r2d2.r2d2_agent_fn.n_step = 0',
         'r2d2.r2d2_agent_fn: n_step must be >= 1, got 0.')):
      with self.subTest(binding):
        gin.clear_config()
        settings = self.settings(binding)
        env = settings.env_loader(seed=0)
        specs = dict(time_step_spec=env.time_step_spec(),
                     action_spec=env.action_spec())
        env.close()
        with self.assertRaises(errors.ConfigError) as raised:
          settings.agent_fn(train_step_counter=counter, **specs)
        self.assertEqual(errors.user_message(raised.exception), message)

  def test_bad_bonus_settings_are_config_errors_naming_the_binding(self):
    rnd = 'intrinsic.rnd_intrinsic_reward'
    q_bonus = ('r2d2.r2d2_agent_fn.exploration = @intrinsic.intrinsic_q_bonus',
               'intrinsic.intrinsic_q_bonus.reward_fn = '
               '@intrinsic.rnd_intrinsic_reward',
               'intrinsic.intrinsic_q_bonus.arms = False')
    cases = [
        ((), None),  # the valid bonus builds
        ((f'{rnd}.non_episodic = True',), f'{rnd}.non_episodic'),
        (q_bonus + (f'{rnd}.non_episodic = True',), f'{rnd}.non_episodic'),
        ((f'{rnd}.normalize_returns = True',), f'{rnd}.normalize_returns'),
        ((f'{rnd}.first_visits_only = True',), 'first_visits_only'),
        (('intrinsic.ngu_bonus.memory_size = 0',),
         'intrinsic.ngu_bonus.memory_size'),
        (('intrinsic.ngu_bonus.max_modulator = 0.5',),
         'intrinsic.ngu_bonus.max_modulator'),
        ((f'{rnd}.predictor_update_proportion = 1.5',),
         f'{rnd}.predictor_update_proportion'),
    ]
    counter = tf.Variable(0, dtype=tf.int64)
    for bindings, parameter in cases:
      with self.subTest(bindings=bindings):
        gin.clear_config()
        settings = self.settings(TINY_NGU_BINDINGS, *bindings)
        env = settings.env_loader(seed=0)
        specs = dict(time_step_spec=env.time_step_spec(),
                     action_spec=env.action_spec())
        env.close()
        if parameter is None:
          self.assertIsNotNone(settings.agent_fn(
              train_step_counter=counter, **specs).exploration.reward)
          continue
        with self.assertRaises(errors.ConfigError) as raised:
          settings.agent_fn(train_step_counter=counter, **specs)
        # The binaries print this one line and exit with code 2.
        message = errors.user_message(raised.exception)
        self.assertNotIn('\n', message)
        self.assertStartsWith(message, 'r2d2.r2d2_agent_fn.exploration')
        self.assertIn(parameter, message)
        self.assertRegex(message, 'must be')

  def test_bad_values_are_refused_before_root_dir_is_touched(self):
    # Counting-v0's episodes here are cut at 5 steps by gymnasium's
    # TimeLimit; the tiny sequences need burn-in 2 + trace 4 = 6.
    for binding, message in (
        ('r2d2/SequenceConfig.trace_length = 0',
         'r2d2.Settings.agent_fn: r2d2/SequenceConfig.trace_length must be '
         '>= 1, got 0.'),
        ('r2d2/SequenceConfig.burn_in_steps = -1',
         'r2d2.Settings.agent_fn: r2d2/SequenceConfig.burn_in_steps must be '
         '>= 0, got -1.'),
        ("r2d2.r2d2_agent_fn.learning_rate = 'nan'",
         "r2d2.r2d2_agent_fn.learning_rate must be a finite number, got "
         "'nan' (str)."),
        ('r2d2.r2d2_agent_fn.learning_rate = 1e999',
         'r2d2.r2d2_agent_fn.learning_rate must be a finite number, got '
         'inf.'),
        ('suite_gymnasium.load.max_episode_steps = 5',
         'SequenceConfig.burn_in_steps + trace_length = 2 + 4 = 6 must be '
         "<= the env's episode limit of 5 steps (max_episode_steps)")):
      with self.subTest(binding):
        gin.clear_config()
        root_dir = os.path.join(self.get_temp_dir(), 'refused')
        with self.assertRaises(errors.ConfigError) as raised:
          config.run(root_dir, [self.gin_file], [binding])
        self.assertStartsWith(errors.user_message(raised.exception),
                              message)
        self.assertFalse(os.path.exists(root_dir))
    # A limit that holds the sequence is accepted.
    gin.clear_config()
    config.parse_gin([self.gin_file],
                     ['suite_gymnasium.load.max_episode_steps = 6'])
    config.check_before_start()

  def test_task_out_of_range_names_num_actors(self):
    with self.assertRaisesRegex(
        errors.ConfigError,
        r'^--task must be in \[0, r2d2.Settings.num_actors = 2\), got 2\.$'):
      r2d2.run_actor(self.settings(), task=2, replay_server='localhost:1')


@pytest.mark.integration
class ThreeProcessTest(_TestCase):
  """replay_server.py, learner.py and 2 x actor.py on loopback."""

  def _start(self, name, args, log_dir, log_name=None):
    log = open(os.path.join(log_dir, f'{log_name or name}.log'), 'w')
    self.addCleanup(log.close)
    process = subprocess.Popen(
        [sys.executable,
         os.path.join(run_helpers.REPO_ROOT, 'train', f'{name}.py')] + args,
        stdout=log, stderr=subprocess.STDOUT, cwd=run_helpers.REPO_ROOT)

    def stop():
      if process.poll() is None:
        process.kill()
      process.wait(timeout=30)
    self.addCleanup(stop)
    return process

  def _log(self, log_dir, name):
    with open(os.path.join(log_dir, f'{name.split()[0]}.log')) as f:
      return f.read()[-3000:]

  def _wait_for_line(self, process, log_dir, name, text):
    """Waits (at most 120 s) until `name`'s log holds `text`."""
    run_helpers.wait_until(
        self, lambda: text in self._log(log_dir, name), process, 120,
        lambda: self._log(log_dir, name))

  def test_three_binaries_train_on_loopback(self):
    port = portpicker.pick_unused_port()
    address = f'127.0.0.1:{port}'
    root_dir = os.path.join(self.get_temp_dir(), 'distributed')
    log_dir = tempfile.mkdtemp(dir=self.get_temp_dir())
    gin_args = [f'--gin_file={self.gin_file}']
    server = self._start('replay_server', [f'--port={port}'] + gin_args,
                         log_dir)
    learner = self._start(
        'learner', [f'--replay_server={address}', f'--root_dir={root_dir}'] +
        gin_args, log_dir)
    actors = []
    for task in range(2):
      actors.append(self._start(
          'actor', [f'--task={task}', f'--replay_server={address}',
                    f'--root_dir={root_dir}'] + gin_args, log_dir,
          log_name=f'actor_{task}'))
    try:
      # A hang guard, not a speed test: on a loaded machine the three
      # processes share its cores with the rest of the suite.
      learner_code = learner.wait(timeout=900)
    except subprocess.TimeoutExpired:
      self.fail('learner did not finish in 900 s:\n' +
                self._log(log_dir, 'learner'))
    self.assertEqual(learner_code, 0, self._log(log_dir, 'learner'))
    for task, actor_process in enumerate(actors):
      # Actors stop on their own once the learner has published `finished`.
      self.assertEqual(actor_process.wait(timeout=60), 0,
                       self._log(log_dir, f'actor_{task}'))
    self.assertIsNone(server.poll())  # serves until killed
    # Every binary's console holds our lines only, the first one printed
    # before anything is built.
    for name in ('replay_server', 'learner', 'actor_0', 'actor_1'):
      with open(os.path.join(log_dir, f'{name}.log')) as f:
        lines = [line for line in f.read().splitlines() if line.strip()]
      self.assertNotEmpty(lines, name)
      self.assertEqual(
          [line for line in lines if not test_console.OUR_LINE.match(line)],
          [], f'{name} printed lines that are not ours')
      self.assertIn('Starting', lines[0], name)

    train = run_helpers.read_events(os.path.join(root_dir, 'train'))
    self.assertGreaterEqual(int(train['Metrics/EnvironmentSteps'][-1][1]),
                            120)
    self.assertGreater(int(train['Metrics/LearnerSteps'][-1][1]), 0)
    # Both actors' slots are reported; a slot's return once it ended an
    # episode (an actor starved on a busy machine may end none in 120).
    self.assertIn('Actor/0/Epsilon', train)
    self.assertIn('Actor/1/Epsilon', train)
    self.assertTrue({'Actor/0/AverageReturn', 'Actor/1/AverageReturn'} &
                    set(train))
    self.assertTrue(os.path.isdir(
        os.path.join(root_dir, 'policies', 'greedy_policy')))

  def test_a_second_actor_with_a_running_task_exits_2(self):
    port = portpicker.pick_unused_port()
    address = f'127.0.0.1:{port}'
    root_dir = os.path.join(self.get_temp_dir(), 'duplicate_task')
    log_dir = tempfile.mkdtemp(dir=self.get_temp_dir())
    gin_args = [f'--gin_file={self.gin_file}']
    self._start('replay_server', [f'--port={port}'] + gin_args, log_dir)
    actor_args = ['--task=0', f'--replay_server={address}',
                  f'--root_dir={root_dir}'] + gin_args
    first = self._start('actor', actor_args, log_dir)
    # Without a learner it waits for weights, holding its task.
    self._wait_for_line(first, log_dir, 'actor', 'waiting for the learner')
    second = run_helpers.run_binary('actor.py', *actor_args, timeout=120)
    error = run_helpers.assert_one_error_line(
        self, second, 'Actor --task=0 of this run is already running')
    self.assertIn(f'pid {first.pid}', error)
    self.assertIsNone(first.poll())

  def test_a_task_out_of_range_exits_2(self):
    result = run_helpers.run_binary('actor.py', '--task=2',
                                    '--replay_server=127.0.0.1:1',
                                    f'--gin_file={self.gin_file}')
    self.assertEqual(
        run_helpers.assert_one_error_line(self, result, '--task'),
        'ERROR: --task must be in [0, r2d2.Settings.num_actors = 2), got 2.')

  def test_sigterm_checkpoints_the_replay_server_and_ends_actors(self):
    port = portpicker.pick_unused_port()
    address = f'127.0.0.1:{port}'
    root_dir = os.path.join(self.get_temp_dir(), 'stopped_roles')
    checkpoint_dir = os.path.join(self.get_temp_dir(), 'replay_ckpt')
    log_dir = tempfile.mkdtemp(dir=self.get_temp_dir())
    gin_args = [f'--gin_file={self.gin_file}']
    server = self._start('replay_server', [
        f'--port={port}', f'--checkpoint_dir={checkpoint_dir}'] + gin_args,
                         log_dir)
    actor = self._start('actor', [
        '--task=0', f'--replay_server={address}', f'--root_dir={root_dir}'] +
                        gin_args, log_dir)
    self._wait_for_line(actor, log_dir, 'actor', 'waiting for the learner')
    # Blocked in Reverb, waiting for weights no learner sends: Ctrl-C
    # still ends it at once.
    actor.send_signal(signal.SIGINT)
    self.assertEqual(actor.wait(timeout=30), -signal.SIGINT)
    server.send_signal(signal.SIGTERM)
    self.assertEqual(server.wait(timeout=60), 128 + signal.SIGTERM,
                     self._log(log_dir, 'replay_server'))
    log = self._log(log_dir, 'replay_server')
    self.assertNotIn('Traceback', log)
    self.assertIn('Replay server stopped by SIGTERM; its tables were '
                  f'checkpointed to {checkpoint_dir}', log)
    self.assertLen(glob.glob(os.path.join(checkpoint_dir, '*', 'DONE')), 1)


if __name__ == '__main__':
  absltest.main()
