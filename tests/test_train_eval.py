"""train/train_eval.py end to end, run as a subprocess like a user would.

Short CartPole runs (a few hundred env steps) with the shipped gin file and
smaller loop settings; checks the root_dir layout, TensorBoard tags, the
saved policy, resume, a SIGKILL during training, bad-gin errors, and user
errors (bad values, env ids, action spaces, root_dirs): one ERROR line and
exit code 2.
"""

import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from absl.testing import absltest
from absl.testing import parameterized
import gin
import numpy as np
import pytest
import tensorflow as tf
# Registers the distribution TypeSpecs a PolicySaver SavedModel refers to.
import tensorflow_probability  # pylint: disable=unused-import


from tf_agents.trajectories import time_step as ts

from tfa_explore import config
from tfa_explore import errors
from tfa_explore.agents import RndPPOAgent
from tfa_explore.experiments import ppo
from tfa_explore.testing import processes
from tfa_explore.utils import files
import test_run_lock  # pylint: disable=g-bad-import-order

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.path.join(REPO_ROOT, 'train', 'train_eval.py')
CARTPOLE_GIN = os.path.join(REPO_ROOT, 'gin', 'ppo', 'cartpole.gin')
R2D2_GIN = os.path.join(REPO_ROOT, 'gin', 'r2d2', 'stateless_cartpole.gin')
RND_PPO_GIN = os.path.join(REPO_ROOT, 'gin', 'rnd_ppo', 'mountaincar.gin')

# Small loop: 4 envs x 32 steps = 128 driver steps per iteration.
SMALL_LOOP = (
    'on_policy.Settings.num_envs = 4',
    'on_policy.Settings.rollout_length = 32',
    'on_policy.Settings.eval_interval = 256',
    'on_policy.Settings.num_eval_episodes = 2',
    'on_policy.Settings.checkpoint_interval = 256',
    'on_policy.Settings.log_interval = 128',
    'ppo.ppo_clip_agent.num_epochs = 2',
)


def train_command(root_dir, gin_files=(CARTPOLE_GIN,), bindings=(),
                  flags=()):
  command = [sys.executable, BINARY, f'--root_dir={root_dir}']
  command += [f'--gin_file={path}' for path in gin_files]
  command += [f'--gin_bindings={binding}' for binding in bindings]
  return command + list(flags)


def run_binary(root_dir, gin_files=(CARTPOLE_GIN,), bindings=(),
               timeout=300, flags=()):
  return subprocess.run(
      train_command(root_dir, gin_files, bindings, flags),
      capture_output=True, text=True, timeout=timeout, cwd=REPO_ROOT,
      check=False)


def read_events(directory):
  """{tag: [(step, value)]} of all event files in `directory`."""
  events = {}
  for path in sorted(glob.glob(os.path.join(directory, 'events.out.*'))):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        tensor = tf.make_ndarray(value.tensor)
        events.setdefault(value.tag, []).append((event.step, tensor))
  return events


def env_steps_logged(stderr):
  return [int(m.replace(',', ''))
          for m in re.findall(r'env steps ([\d,]+)/', stderr)]


def resumed_line(env_steps):
  return f'Resumed from checkpoint at env step {env_steps:,} (train step '


class TestCase(absltest.TestCase):

  def make_dir(self):
    path = tempfile.mkdtemp(prefix='tfa_explore_test_')
    self.addCleanup(shutil.rmtree, path, ignore_errors=True)
    return path

  def make_gin_file(self, name, text):
    path = os.path.join(self.make_dir(), name)
    with open(path, 'w') as f:
      f.write(text)
    return path


@pytest.mark.integration
class TrainEvalTest(TestCase):

  def test_run_writes_layout_and_resumes(self):
    root_dir = self.make_dir()
    first = run_binary(root_dir, bindings=('NUM_ENV_STEPS = 300',) + SMALL_LOOP)
    self.assertEqual(first.returncode, 0, first.stderr[-3000:])

    # Operative config: written after the agent is built, so it records the
    # agent's hyperparameters and the overridden macro.
    with open(os.path.join(root_dir, 'operative_config.gin')) as f:
      config = f.read()
    self.assertIn('NUM_ENV_STEPS = 300', config)
    self.assertIn('ppo_clip_agent.learning_rate = ', config)
    self.assertIn('ppo_clip_agent.num_epochs = 2', config)
    self.assertIn('Settings.num_envs = 4', config)

    train_events = read_events(os.path.join(root_dir, 'train'))
    for tag in ('Metrics/AverageReturn', 'Metrics/AverageEpisodeLength',
                'Metrics/EnvironmentSteps', 'Metrics/NumberOfEpisodes',
                'Metrics/StepsPerSecond', 'Losses/total_loss',
                # Written by the agent itself inside agent.train: proves the
                # default summary writer is set around training.
                'Losses/policy_gradient_loss', 'Losses/extrinsic_value_loss',
                'operative_config'):
      self.assertIn(tag, train_events)
    # Plain PPO has no intrinsic stream to report.
    self.assertEmpty([tag for tag in train_events if 'intrinsic' in tag])
    eval_events = read_events(os.path.join(root_dir, 'eval'))
    self.assertIn('Metrics/AverageReturn', eval_events)
    self.assertIn('Metrics/AverageEpisodeLength', eval_events)
    first_steps = [int(v) for _, v in train_events['Metrics/EnvironmentSteps']]
    self.assertGreaterEqual(first_steps[-1], 300)
    self.assertEqual(first_steps, sorted(first_steps))
    # CartPole pays 1 per step: the greedy return equals the episode length.
    _, eval_return = eval_events['Metrics/AverageReturn'][-1]
    _, eval_length = eval_events['Metrics/AverageEpisodeLength'][-1]
    self.assertGreaterEqual(float(eval_return), 8.0)
    self.assertAlmostEqual(float(eval_return), float(eval_length))

    # Progress lines with env steps, throughput, return and ETA.
    self.assertRegex(first.stderr, r'env steps \d+/300 .* steps/s \| recent '
                     r'return [\d.]+ .* ETA \d+:\d\d:\d\d')

    checkpoint = tf.train.latest_checkpoint(
        os.path.join(root_dir, 'checkpoints'))
    self.assertEqual(checkpoint, os.path.join(
        root_dir, 'checkpoints', f'ckpt-{first_steps[-1]}'))

    # The greedy policy loads with plain TF (+ tfp's registered types), acts.
    policy = tf.saved_model.load(
        os.path.join(root_dir, 'policies', 'greedy_policy'))
    time_step = tf.nest.map_structure(
        tf.convert_to_tensor,
        {'step_type': np.zeros([3], np.int32),
         'reward': np.zeros([3], np.float32),
         'discount': np.ones([3], np.float32),
         'observation': np.array([[0.0, 0.0, 0.1, 0.0],
                                  [0.0, 0.0, -0.1, 0.0],
                                  [0.0, 0.5, 0.0, 0.0]], np.float32)})
    action = policy.action(ts.TimeStep(**time_step), ()).action.numpy()
    self.assertEqual(action.shape, (3,))
    self.assertTrue(set(action.tolist()) <= {0, 1})
    self.assertTrue(os.path.isdir(
        os.path.join(root_dir, 'policies', 'collect_policy')))
    # No temporary export directories are left behind.
    self.assertEqual(
        [p for p in os.listdir(os.path.join(root_dir, 'policies'))
         if p.startswith('.')], [])

    # Same command, larger budget: continues from the checkpoint.
    second = run_binary(root_dir, bindings=('NUM_ENV_STEPS = 600',) +
                        SMALL_LOOP)
    self.assertEqual(second.returncode, 0, second.stderr[-3000:])
    self.assertIn(resumed_line(first_steps[-1]), second.stderr)
    logged = env_steps_logged(second.stderr)
    self.assertGreater(logged[0], first_steps[-1])
    self.assertLess(logged[0], first_steps[-1] + 128)
    self.assertGreaterEqual(logged[-1], 600)
    train_events = read_events(os.path.join(root_dir, 'train'))
    steps = [int(v) for _, v in train_events['Metrics/EnvironmentSteps']]
    self.assertEqual(steps, sorted(steps))
    # The train step (gradient steps, 2 per iteration) also continued.
    train_steps = [s for s, _ in train_events['Losses/total_loss']]
    self.assertEqual(train_steps, sorted(train_steps))
    self.assertEqual(len(set(train_steps)), len(train_steps))

  def test_sigkill_then_resume(self):
    root_dir = self.make_dir()
    # Checkpoint and export every iteration so a kill is likely to land
    # during a checkpoint or policy write.
    bindings = ('NUM_ENV_STEPS = 1000000',) + SMALL_LOOP + (
        'on_policy.Settings.checkpoint_interval = 128',
        'on_policy.Settings.eval_interval = 100000')
    process = subprocess.Popen(
        train_command(root_dir, bindings=bindings), cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
      state_file = os.path.join(root_dir, 'checkpoints', 'checkpoint')
      deadline = time.time() + 240
      while time.time() < deadline and process.poll() is None:
        if (os.path.exists(state_file) and
            len(glob.glob(os.path.join(root_dir, 'checkpoints',
                                       '*.index'))) >= 2):
          break
        time.sleep(0.05)
      self.assertIsNone(process.poll(), 'training exited early')
      self.assertLess(time.time(), deadline, 'no checkpoint written in time')
      time.sleep(0.37)  # Land somewhere inside the next iterations.
      process.send_signal(signal.SIGKILL)
      process.wait(timeout=30)
    finally:
      processes.end(process)
    self.assertEqual(process.returncode, -signal.SIGKILL)

    checkpoint = tf.train.latest_checkpoint(
        os.path.join(root_dir, 'checkpoints'))
    self.assertIsNotNone(checkpoint)
    killed_at = int(checkpoint.rsplit('-', 1)[1])
    reader = tf.train.load_checkpoint(checkpoint)  # Complete and readable.
    self.assertNotEmpty(reader.get_variable_to_shape_map())
    tf.saved_model.load(files.previous_export(
        os.path.join(root_dir, 'policies', 'greedy_policy')))

    resumed = run_binary(root_dir, bindings=(
        f'NUM_ENV_STEPS = {killed_at + 200}',) + SMALL_LOOP)
    self.assertEqual(resumed.returncode, 0, resumed.stderr[-3000:])
    self.assertIn(resumed_line(killed_at), resumed.stderr)
    self.assertGreater(env_steps_logged(resumed.stderr)[0], killed_at)
    self.assertGreater(
        int(tf.train.latest_checkpoint(
            os.path.join(root_dir, 'checkpoints')).rsplit('-', 1)[1]),
        killed_at)


@pytest.mark.integration
class StopSignalTest(TestCase, parameterized.TestCase):
  """SIGINT (Ctrl-C) and SIGTERM (schedulers) save the run and exit."""

  def _read_until(self, process, lines, ready, timeout=240):
    """Appends `process`'s stderr lines to `lines` until `ready(text)`."""
    deadline = time.time() + timeout
    for line in process.stderr:
      lines.append(line)
      if ready(''.join(lines)):
        return
      self.assertLess(time.time(), deadline, ''.join(lines[-20:]))

  def _start_then_signal(self, root_dir, gin_files, bindings, signum,
                         ready=None, stop_seconds=120):
    """Starts the binary, sends `signum` once `ready(stderr so far)`
    (default: training under way, a progress line after the first one);
    (exit code, stderr). The process must end within `stop_seconds` of
    the signal."""
    ready = ready or (lambda text: len(env_steps_logged(text)) >= 2)
    process = subprocess.Popen(
        train_command(root_dir, gin_files, bindings), cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = []
    try:
      self._read_until(process, lines, ready)
      process.send_signal(signum)
      lines.extend(process.stderr)
      process.wait(timeout=stop_seconds)
    finally:
      processes.end(process)
    return process.returncode, ''.join(lines)

  @parameterized.named_parameters(('sigterm', signal.SIGTERM),
                                  ('sigint', signal.SIGINT))
  def test_ppo_saves_a_checkpoint_and_resumes_from_it(self, signum):
    root_dir = self.make_dir()
    bindings = ('NUM_ENV_STEPS = 1000000',) + SMALL_LOOP + (
        'on_policy.Settings.checkpoint_interval = 1000000',
        'on_policy.Settings.eval_interval = 1000000')
    code, stderr = self._start_then_signal(root_dir, (CARTPOLE_GIN,),
                                           bindings, signum)
    self.assertEqual(code, 128 + signum, stderr[-3000:])
    self.assertNotIn('Traceback', stderr)
    stopped = re.findall(
        rf'Stopped by {signal.Signals(signum).name} at env step ([\d,]+); '
        'a checkpoint was saved there', stderr)
    self.assertLen(stopped, 1, stderr[-3000:])
    stopped_at = int(stopped[0].replace(',', ''))
    # No checkpoint was due before (interval 1M): this one is the stop's.
    checkpoint = tf.train.latest_checkpoint(
        os.path.join(root_dir, 'checkpoints'))
    self.assertEqual(int(checkpoint.rsplit('-', 1)[1]), stopped_at)
    self.assertGreater(stopped_at, 0)
    resumed = run_binary(root_dir, bindings=(
        f'NUM_ENV_STEPS = {stopped_at + 200}',) + SMALL_LOOP)
    self.assertEqual(resumed.returncode, 0, resumed.stderr[-3000:])
    self.assertIn(resumed_line(stopped_at), resumed.stderr)

  def test_r2d2_sigterm_saves_learner_and_replay(self):
    root_dir = self.make_dir()
    bindings = ('NUM_ENV_STEPS = 1000000',
                'r2d2.Settings.log_interval = 500',
                'r2d2.Settings.checkpoint_interval = 1000000',
                'r2d2.Settings.eval_interval = 1000000',
                'r2d2.Settings.num_eval_episodes = 1',
                'r2d2.Settings.min_size_to_sample = 20',
                'r2d2.Settings.envs_per_actor = 4',
                "r2d2.Settings.actor_mode = 'thread'",
                'r2d2.r2d2_agent_fn.jit_compile = False')
    code, stderr = self._start_then_signal(root_dir, (R2D2_GIN,), bindings,
                                           signal.SIGTERM)
    self.assertEqual(code, 128 + signal.SIGTERM, stderr[-3000:])
    self.assertNotIn('Traceback', stderr)
    stopped = re.findall(r'Stopped by SIGTERM at env step ([\d,]+)', stderr)
    self.assertLen(stopped, 1, stderr[-3000:])
    stopped_at = int(stopped[0].replace(',', ''))
    checkpoint = tf.train.latest_checkpoint(
        os.path.join(root_dir, 'checkpoints'))
    self.assertEqual(int(checkpoint.rsplit('-', 1)[1]), stopped_at)
    self.assertNotEmpty(glob.glob(
        os.path.join(root_dir, 'replay_checkpoints', '*', 'DONE')))

  @parameterized.named_parameters(('sigterm', signal.SIGTERM),
                                  ('sigint', signal.SIGINT))
  def test_r2d2_learner_waiting_on_an_empty_table_stops(self, signum):
    # The agent table never holds enough to sample from: the learner only
    # waits, in sample calls that end every sample_timeout_seconds (2 s).
    bindings = ('NUM_ENV_STEPS = 1000000',
                'r2d2.Settings.replay_capacity = 1000000',
                'r2d2.Settings.min_size_to_sample = 1000000',
                'r2d2.Settings.sample_timeout_seconds = 2.0',
                'r2d2.Settings.num_actors = 1',
                "r2d2.Settings.actor_mode = 'thread'",
                'r2d2.r2d2_agent_fn.jit_compile = False')
    code, stderr = self._start_then_signal(
        self.make_dir(), (R2D2_GIN,), bindings, signum,
        ready=lambda text: 'No replay sample for' in text,
        # A deadline, not a measure: it waited for ever before.
        stop_seconds=60)
    self.assertEqual(code, 128 + signum, stderr[-3000:])
    self.assertNotIn('Traceback', stderr)
    self.assertRegex(
        stderr, rf'Stopped by {signal.Signals(signum).name} at env step ')

  @parameterized.named_parameters(
      ('ppo', CARTPOLE_GIN, ('NUM_ENV_STEPS = 1000000',) + SMALL_LOOP),
      ('r2d2', R2D2_GIN, ('NUM_ENV_STEPS = 1000000',
                          'r2d2.Settings.log_interval = 500',
                          'r2d2.Settings.min_size_to_sample = 20',
                          "r2d2.Settings.actor_mode = 'thread'",
                          'r2d2.r2d2_agent_fn.jit_compile = False')))
  def test_a_second_sigint_ends_the_run_at_once(self, gin_file, bindings):
    process = subprocess.Popen(
        train_command(self.make_dir(), (gin_file,), bindings), cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = []
    try:
      self._read_until(
          process, lines, lambda text: len(env_steps_logged(text)) >= 2)
      process.send_signal(signal.SIGINT)
      for line in process.stderr:
        lines.append(line)
        if 'send it again to stop at once' in line:
          break
      process.send_signal(signal.SIGINT)
      # The kernel's default action: no saving, no clean-up to wait for.
      process.wait(timeout=5)
      lines.extend(process.stderr)
    finally:
      processes.end(process)
    stderr = ''.join(lines)
    self.assertEqual(process.returncode, -signal.SIGINT, stderr[-3000:])
    self.assertNotIn('Traceback', stderr)
    self.assertNotIn('Stopped by SIGINT at env step', stderr)


PRE_TRAINING_CALLS = []


@gin.configurable(module='test_train_eval')
def record_pre_training(agent, environment):
  PRE_TRAINING_CALLS.append((agent, environment.batch_size))


class MarkerAgent(RndPPOAgent):
  """Writes a summary without writer or step, like an agent's own code."""

  def _train(self, experience, weights):
    tf.summary.scalar('Custom/marker', 1.0)
    return super()._train(experience, weights)


@gin.configurable(module='test_train_eval')
def marker_agent(time_step_spec, action_spec, train_step_counter):
  return ppo.ppo_clip_agent(time_step_spec, action_spec, train_step_counter,
                            agent_class=MarkerAgent)


@pytest.mark.integration
class HooksTest(TestCase):
  """In-process: pre_training_fn and agent summaries with default step."""

  def tearDown(self):
    gin.clear_config()
    super().tearDown()

  def run_in_process(self, root_dir, num_env_steps):
    gin.clear_config()
    return config.run(root_dir, [CARTPOLE_GIN], [
        f'NUM_ENV_STEPS = {num_env_steps}',
        'on_policy.Settings.agent_fn = @test_train_eval.marker_agent',
        'on_policy.Settings.pre_training_fn = '
        '@test_train_eval.record_pre_training',
        'on_policy.Settings.num_eval_episodes = 1',
    ] + list(SMALL_LOOP[:2]) + ['ppo.ppo_clip_agent.num_epochs = 1'])

  def test_pre_training_once_and_agent_summaries(self):
    del PRE_TRAINING_CALLS[:]
    root_dir = self.make_dir()
    result = self.run_in_process(root_dir, 100)
    self.assertLen(PRE_TRAINING_CALLS, 1)
    self.assertEqual(PRE_TRAINING_CALLS[0][1], 4)  # The batched collect env.
    self.assertGreaterEqual(result['EnvironmentSteps'], 100)
    self.assertIn('AverageReturn', result)
    # Resume: not called again.
    self.run_in_process(root_dir, 200)
    self.assertLen(PRE_TRAINING_CALLS, 1)

    train_events = read_events(os.path.join(root_dir, 'train'))
    marker_steps = [step for step, _ in train_events['Custom/marker']]
    env_steps = [int(v) for _, v in train_events['Metrics/EnvironmentSteps']]
    # One marker per iteration, at the env step count when train started,
    # i.e. the env steps of the iteration's summaries.
    self.assertLen(marker_steps, len(env_steps))
    self.assertEqual(marker_steps, env_steps)


@pytest.mark.integration
class BadConfigTest(TestCase):
  """Bad gin exits with code 2 and gin's message, not a traceback."""

  def assert_config_error(self, result, *expected):
    self.assertEqual(result.returncode, 2, result.stderr[-3000:])
    self.assertNotIn('Traceback', result.stderr)
    for text in expected:
      self.assertIn(text, result.stderr)

  def test_unknown_parameter_in_file(self):
    with open(CARTPOLE_GIN) as f:
      text = f.read()
    bad_gin = self.make_gin_file(
        'bad.gin', text + '\nppo.ppo_clip_agent.learning_rat = 0.1\n')
    result = run_binary(self.make_dir(),
                        gin_files=(bad_gin,))
    self.assert_config_error(result, 'learning_rat', bad_gin)

  def test_unknown_parameter_in_binding(self):
    result = run_binary(self.make_dir(),
                        bindings=('on_policy.Settings.num_env_stepz = 5',))
    self.assert_config_error(result, 'num_env_stepz')

  def test_missing_required_value(self):
    with open(CARTPOLE_GIN) as f:
      text = f.read()
    bad_gin = self.make_gin_file('no_lr.gin', re.sub(
        r'(?m)^ppo\.ppo_clip_agent\.learning_rate.*$', '', text))
    result = run_binary(self.make_dir(),
                        gin_files=(bad_gin,),
                        bindings=('NUM_ENV_STEPS = 100',))
    self.assert_config_error(result, 'learning_rate', 'ppo_clip_agent',
                             bad_gin)

  def test_missing_gin_file(self):
    missing = os.path.join(self.make_dir(), 'nope.gin')
    result = run_binary(self.make_dir(), gin_files=(missing,))
    self.assert_config_error(result, 'nope.gin')


def numeric_bindings(gin_file):
  """[(binding name, value)] of every number `gin_file` binds, macros
  resolved, as a user would rebind them."""
  gin.clear_config()
  config.parse_gin([gin_file], [])
  found = []
  # pylint: disable=protected-access
  for (scope, selector), parameters in gin.config._CONFIG.items():
    if selector == 'gin.macro':
      continue
    configurable = gin.config._REGISTRY.get_match(selector)
    name = config.bound_values._binding_name(scope, configurable, selector)
    for parameter, value in parameters.items():
      value = config.bound_values._macro_value(value)
      if isinstance(value, (int, float)) and not isinstance(value, bool):
        found.append((f'{name}.{parameter}', value))
  # pylint: enable=protected-access
  gin.clear_config()
  return found


class BoundValueTypeTest(parameterized.TestCase):
  """Every number the shipped files of the three families bind is checked
  at parsing: a string or a non-finite float in its place is refused by
  name (`config.check_bound_values`), in every binary, before anything is
  built. Parsing only: milliseconds a case."""

  def tearDown(self):
    gin.clear_config()
    super().tearDown()

  @parameterized.parameters(CARTPOLE_GIN, RND_PPO_GIN, R2D2_GIN,
                            os.path.join(REPO_ROOT, 'gin', 'r2d3',
                                         'minigrid_doorkey8x8.gin'))
  def test_every_number_refuses_a_string_and_non_finite_values(self,
                                                                gin_file):
    bindings = numeric_bindings(gin_file)
    # The family's files bind their numbers (guards the loop below).
    self.assertGreater(len(bindings), 10)
    for name, _ in bindings:
      for bad, shown in (("'nan'", "'nan' (str)"), ('1e999', 'inf'),
                         ('-1e999', '-inf')):
        with self.subTest(binding=name, value=bad):
          gin.clear_config()
          with self.assertRaises(errors.ConfigError) as raised:
            config.parse_gin([gin_file], [f'{name} = {bad}'])
          message = str(raised.exception)
          self.assertStartsWith(message, f'{name} must be ')
          self.assertIn(f'got {shown}', message)

  def test_shipped_values_pass(self):
    for gin_file in glob.glob(os.path.join(REPO_ROOT, 'gin', '**', '*.gin'),
                              recursive=True):
      with self.subTest(gin_file=gin_file):
        gin.clear_config()
        config.parse_gin([gin_file], [])


@pytest.mark.integration
class UserErrorTest(TestCase, parameterized.TestCase):
  """What a user must fix: `ERROR: <one line>`, exit code 2, no traceback.

  Each case stops before any training; a case costs the binary's start-up
  (imports), so they are few.
  """

  def make_root_dir(self, kind):
    """A root_dir that is free, under a file, or held by a live run."""
    root_dir = os.path.join(self.make_dir(), 'run')
    if kind == 'under_a_file':
      parent = os.path.dirname(root_dir)
      with open(os.path.join(parent, 'a_file'), 'w') as f:
        f.write('not a directory')
      return os.path.join(parent, 'a_file', 'run'), {}
    if kind == 'held':
      holder = subprocess.Popen(
          [sys.executable, '-c', test_run_lock._HOLDER, root_dir],  # pylint: disable=protected-access
          cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)

      def stop():
        holder.kill()
        holder.wait(timeout=30)
        holder.stdout.close()
      self.addCleanup(stop)
      self.assertEqual(holder.stdout.readline().strip(), 'locked')
      return root_dir, {'pid': holder.pid}
    return root_dir, {}

  @parameterized.named_parameters(
      ('negative_budget', CARTPOLE_GIN, 'NUM_ENV_STEPS = -5', 'free',
       'on_policy.Settings.num_env_steps must be >= 1, got -5.'),
      ('budget_of_the_wrong_type', CARTPOLE_GIN, 'NUM_ENV_STEPS = "abc"',
       'free', "on_policy.Settings.num_env_steps must be an integer, "
       "got 'abc' (str)."),
      ('r2d2_budget_of_the_wrong_type', R2D2_GIN, 'NUM_ENV_STEPS = 1.5',
       'free', 'r2d2.Settings.num_env_steps must be an integer, got 1.5 '
       '(float).'),
      ('r2d2_zero_trace', R2D2_GIN, 'r2d2/SequenceConfig.trace_length = 0',
       'free', 'r2d2/SequenceConfig.trace_length must be >= 1, got 0.'),
      ('r2d2_negative_burn_in', R2D2_GIN,
       'r2d2/SequenceConfig.burn_in_steps = -1', 'free',
       'r2d2/SequenceConfig.burn_in_steps must be >= 0, got -1.'),
      ('r2d2_infinite_learning_rate', R2D2_GIN,
       'r2d2.r2d2_agent_fn.learning_rate = 1e999', 'free',
       'r2d2.r2d2_agent_fn.learning_rate must be a finite number, got inf.'),
      ('r2d2_learning_rate_string', R2D2_GIN,
       "r2d2.r2d2_agent_fn.learning_rate = 'nan'", 'free',
       "r2d2.r2d2_agent_fn.learning_rate must be a finite number, got 'nan' "
       '(str).'),
      # StatelessCartPole's episodes end within 500 steps (its TimeLimit).
      ('r2d2_sequence_beyond_the_episode_limit', R2D2_GIN,
       'r2d2/SequenceConfig.burn_in_steps = 1000', 'free',
       'SequenceConfig.burn_in_steps + trace_length = 1000 + 16 = 1016 must '
       "be <= the env's episode limit of 500 steps (max_episode_steps)"),
      ('r2d2_replay_below_the_batch', R2D2_GIN,
       'r2d2.Settings.replay_capacity = 2', 'free',
       'r2d2.Settings.replay_capacity (2) is below batch_size'),
      ('ppo_negative_clipping', CARTPOLE_GIN,
       'ppo.ppo_clip_agent.importance_ratio_clipping = -0.2', 'free',
       'ppo.ppo_clip_agent: importance_ratio_clipping must be >= 0.0, got '
       '-0.2.'),
      ('ppo_discount_above_1', CARTPOLE_GIN,
       'ppo.ppo_clip_agent.discount_factor = 1.5', 'free',
       'ppo.ppo_clip_agent: discount_factor must be in [0.0, 1.0], got 1.5.'),
      ('r2d2_gamma_above_1', R2D2_GIN, 'r2d2.r2d2_agent_fn.gamma = 1.5',
       'free', 'r2d2.r2d2_agent_fn: gamma must be in [0, 1], got 1.5.'),
      ('r2d2_negative_priority_exponent', R2D2_GIN,
       'r2d2.Settings.priority_exponent = -1.0', 'free',
       'r2d2.Settings.priority_exponent must be >= 0, got -1.0.'),
      ('r2d2_sequence_storage_not_a_storage', R2D2_GIN,
       "r2d2.Settings.sequence_storage = 'copies'", 'free',
       'r2d2.Settings.sequence_storage must be @r2d2.StepStream() or '
       "@r2d2.SequenceCopies(), got 'copies'."),
      ('unknown_env_id', CARTPOLE_GIN,
       "suite_gymnasium.load.env_id = 'CartPol-v1'", 'free',
       "Unknown gymnasium env id 'CartPol-v1'. Did you mean: CartPole-v1"),
      ('r2d2_negative_budget', R2D2_GIN, 'NUM_ENV_STEPS = -5', 'free',
       'r2d2.Settings.num_env_steps must be >= 1, got -5.'),
      ('r2d2_continuous_actions', R2D2_GIN,
       "suite_gymnasium.load.env_id = 'MountainCarContinuous-v0'", 'free',
       "r2d2.Settings.env_loader: R2D2 needs a discrete action space (one "
       "scalar integer action), but 'MountainCarContinuous-v0' has action "
       'spec BoundedArraySpec(shape=(1,), dtype=dtype(\'float32\')'),
      ('unknown_parameter', CARTPOLE_GIN,
       'on_policy.Settings.no_such_parameter = 1', 'free',
       "Configurable 'on_policy.Settings' doesn't have a parameter named "
       "'no_such_parameter'. In bindings string line 1: "
       'on_policy.Settings.no_such_parameter = 1'),
      # A user's gin file that binds a renamed configurable is told its
      # new name.
      ('renamed_loop_setting', CARTPOLE_GIN,
       'on_policy.train_eval.num_envs = 4', 'free',
       'on_policy.train_eval.num_envs = 4 `on_policy.train_eval` is now '
       '`on_policy.Settings`: rename it in the gin file.'),
      ('renamed_ppo_factory', CARTPOLE_GIN,
       'rnd_ppo.rnd_ppo_agent.num_epochs = 4', 'free',
       '`rnd_ppo.rnd_ppo_agent` is now `ppo.ppo_clip_agent`: rename it in '
       'the gin file.'),
      ('renamed_ppo_module', CARTPOLE_GIN,
       'import tfa_explore.experiments.rnd_ppo', 'free',
       '`tfa_explore.experiments.rnd_ppo` is now '
       '`tfa_explore.experiments.ppo`: rename it in the gin file.'),
      ('renamed_warm_up_module', CARTPOLE_GIN,
       'import tfa_explore.agents.rnd_ppo.warm_up', 'free',
       '`tfa_explore.agents.rnd_ppo.warm_up` is now '
       '`tfa_explore.experiments.warm_up`: rename it in the gin file.'),
      ('ppo_zero_epochs', CARTPOLE_GIN, 'ppo.ppo_clip_agent.num_epochs = 0',
       'free', 'ppo.ppo_clip_agent: num_epochs must be >= 1, got 0.'),
      ('ppo_negative_learning_rate', CARTPOLE_GIN,
       'ppo.ppo_clip_agent.learning_rate = -1e-3', 'free',
       'ppo.ppo_clip_agent: learning_rate must be > 0, got -0.001.'),
      ('r2d2_negative_learning_rate', R2D2_GIN,
       'r2d2.r2d2_agent_fn.learning_rate = -1e-3', 'free',
       'r2d2.r2d2_agent_fn: learning_rate must be > 0, got -0.001.'),
      ('rnd_ppo_fewer_envs_than_minibatches', RND_PPO_GIN,
       'on_policy.Settings.num_envs = 2', 'free',
       'on_policy.Settings.num_envs = 2 is too few for the agent: Batch of '
       '2 sequences cannot make 4 minibatches.'),
      ('root_dir_under_a_file', CARTPOLE_GIN, 'NUM_ENV_STEPS = 100',
       'under_a_file', '{root_dir} cannot be written: Not a directory'),
      ('root_dir_in_use', CARTPOLE_GIN, 'NUM_ENV_STEPS = 100', 'held',
       'root_dir {root_dir} is in use by another run, pid {pid} on host '),
  )
  def test_one_line_and_exit_code_2(self, gin_file, binding, root_dir_kind,
                                    expected):
    root_dir, facts = self.make_root_dir(root_dir_kind)
    result = run_binary(root_dir, gin_files=(gin_file,), bindings=(binding,))
    self.assertEqual(result.returncode, 2, result.stderr[-3000:])
    self.assertNotIn('Traceback', result.stderr)
    self.assertNotIn('In call to configurable', result.stderr)
    errors_printed = [line for line in result.stderr.splitlines()
                      if 'ERROR' in line]
    self.assertLen(errors_printed, 1, result.stderr[-3000:])
    self.assertStartsWith(errors_printed[0], 'ERROR: ')
    self.assertIn(expected.format(root_dir=root_dir, **facts),
                  errors_printed[0])
    # The message is one line: nothing follows it.
    self.assertEqual(result.stderr.strip().splitlines()[-1],
                     errors_printed[0])
    # Refused before the run's first line and its first file.
    self.assertNotIn('Training in', result.stderr)
    if root_dir_kind == 'free':
      self.assertFalse(os.path.exists(root_dir))
    elif root_dir_kind == 'held':
      self.assertEqual(os.listdir(root_dir), ['run.lock'])

  @parameterized.named_parameters(
      ('learner', 'learner', ('--replay_server=127.0.0.1:1',
                              '--root_dir={root_dir}'),
       'r2d2.Settings.no_such_parameter = 1',
       "Configurable 'r2d2.Settings' doesn't have a parameter named "
       "'no_such_parameter'. In bindings string line 1: "
       'r2d2.Settings.no_such_parameter = 1'),
      ('actor', 'actor', ('--task=0', '--replay_server=127.0.0.1:1',
                          '--root_dir={root_dir}'),
       'r2d2.Settings.batch_size = 0',
       'r2d2.Settings.batch_size must be >= 1, got 0.'),
      ('replay_server', 'replay_server', ('--port=1',),
       'r2d2.Settings.batch_size = 0',
       'r2d2.Settings.batch_size must be >= 1, got 0.'),
  )
  def test_r2d2_role_binaries_refuse_a_bad_value(self, binary, flags,
                                                 binding, expected):
    root_dir = os.path.join(self.make_dir(), 'run')
    result = subprocess.run(
        [sys.executable, os.path.join(REPO_ROOT, 'train', f'{binary}.py'),
         *[flag.format(root_dir=root_dir) for flag in flags],
         f'--gin_file={R2D2_GIN}', f'--gin_bindings={binding}'],
        capture_output=True, text=True, timeout=300, cwd=REPO_ROOT,
        check=False)
    self.assertEqual(result.returncode, 2, result.stderr[-3000:])
    self.assertNotIn('Traceback', result.stderr)
    errors_printed = [line for line in result.stderr.splitlines()
                      if 'ERROR' in line]
    self.assertLen(errors_printed, 1, result.stderr[-3000:])
    self.assertStartsWith(errors_printed[0], 'ERROR: ')
    self.assertIn(expected, errors_printed[0])
    self.assertEqual(result.stderr.strip().splitlines()[-1],
                     errors_printed[0])
    self.assertFalse(os.path.exists(root_dir))

  def test_a_bad_flag_is_one_line_and_exit_code_2(self):
    result = subprocess.run(
        train_command(self.make_dir(), flags=('--no_such_flag=1',)),
        capture_output=True, text=True, timeout=300, cwd=REPO_ROOT,
        check=False)
    self.assertEqual(result.returncode, 2, result.stderr[-3000:])
    self.assertEqual(result.stderr.strip().splitlines(), [
        "ERROR: Unknown command line flag 'no_such_flag' (--helpshort lists "
        'the flags)'])

  def test_verbose_shows_the_traceback(self):
    result = run_binary(self.make_dir(), bindings=('NUM_ENV_STEPS = -5',),
                        flags=('--verbose',))
    self.assertEqual(result.returncode, 2, result.stderr[-3000:])
    self.assertIn('Traceback', result.stderr)
    self.assertIn('check_count', result.stderr)
    self.assertIn(
        '\nERROR: on_policy.Settings.num_env_steps must be >= 1, got -5.',
        result.stderr)


if __name__ == '__main__':
  absltest.main()
