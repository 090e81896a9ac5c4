"""The run kit both loops share: Adam's state survives a resume, eval, progress.

Also what a resume must survive: a damaged newest checkpoint (the next
older one loads, with a warning), a rerun of a finished run (its final
evaluation is returned, not made again), and a second run on the same
root_dir (refused while the first holds it).

A resume restores the optimizer through TF's deferred restoration (no
access to the optimizer): its slot variables are filled from the
checkpoint when the first `apply_gradients` creates them. The tests run
each loop (on-policy PPO, the R2D2 learner), then rebuild its agent, restore
the run's latest checkpoint with `checkpointing.Checkpointer` as the loop
does, create the slots as `apply_gradients` would, and compare them with the
checkpoint's values; then they resume the loop itself and count Adam's
iterations.
"""

import glob
import os
import random
import types

from absl.testing import absltest
import gin
import numpy as np
import pytest
import tensorflow as tf
from tf_agents.environments import tf_py_environment

from tfa_explore import config
from tfa_explore import errors
from tfa_explore.experiments import checkpointing
from tfa_explore.experiments import evaluation
from tfa_explore.experiments import r2d2
from tfa_explore.experiments import run_kit
import test_r2d2_experiment
import test_run_lock
import test_train_eval

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CARTPOLE_GIN = os.path.join(REPO_ROOT, 'gin', 'ppo', 'cartpole.gin')
# 2 envs x 16 steps per iteration, 2 epochs: 2 Adam steps per iteration.
SMALL_PPO = (
    'NUM_ENV_STEPS = 64',
    'on_policy.Settings.num_envs = 2',
    'on_policy.Settings.rollout_length = 16',
    'on_policy.Settings.eval_interval = 1000',
    'on_policy.Settings.num_eval_episodes = 1',
    'on_policy.Settings.checkpoint_interval = 1000',
    'on_policy.Settings.log_interval = 1000',
    'ppo.ppo_clip_agent.num_epochs = 2',
    'suite_gymnasium.load.max_episode_steps = 20',
)


def latest_counters(run_dir):
  """(train step, Adam iterations) in the run's latest checkpoint."""
  reader = tf.train.load_checkpoint(
      tf.train.latest_checkpoint(os.path.join(run_dir, 'checkpoints')))
  # Adam's one integer variable is its iteration count.
  iterations = [reader.get_tensor(key) for key, dtype
                in reader.get_variable_to_dtype_map().items()
                if key.startswith('agent/_optimizer/') and dtype.is_integer]
  assert len(iterations) == 1, iterations
  return (int(reader.get_tensor('train_step/.ATTRIBUTES/VARIABLE_VALUE')),
          int(iterations[0]))


def checkpoint_values(checkpoint_path):
  """All float arrays stored in a checkpoint."""
  reader = tf.train.load_checkpoint(checkpoint_path)
  return [reader.get_tensor(key)
          for key, dtype in reader.get_variable_to_dtype_map().items()
          if dtype.is_floating]


class _TestCase(tf.test.TestCase):
  test_session = None

  def setUp(self):
    super().setUp()
    gin.clear_config()
    self.addCleanup(gin.clear_config)

  def assert_slots_restored(self, agent, optimizer, variables, run_dir,
                            untrained='(none)'):
    """Restores `run_dir`'s latest checkpoint into a fresh `agent`.

    `untrained`: slots whose name has it belong to variables no update
    trains (left zero).
    """
    _, expected_iterations = latest_counters(run_dir)
    self.assertGreater(expected_iterations, 0)
    run = run_kit.RunDirectory(run_dir)
    checkpointer = checkpointing.Checkpointer(
        run, tf.Variable(0, dtype=tf.int64), policies={},
        train_step=agent.train_step_counter, max_to_keep=3, agent=agent)
    self.assertTrue(checkpointer.restore())
    self.assertEqual(int(optimizer.iterations), expected_iterations)
    # What the first apply_gradients does before updating.
    optimizer.build(variables)
    slot_variables = optimizer.variables[1:]
    self.assertLen(slot_variables, 2 * len(variables))  # Adam: m, v each.
    stored = checkpoint_values(checkpointer.latest)
    trained_slots = 0
    for slot_variable in slot_variables:
      slot = slot_variable.numpy()
      # A fresh slot is all zeros; a restored one is the checkpoint's. Plain
      # PPO never trains the intrinsic value head, whose slots stay zero.
      if untrained not in slot_variable.name:
        self.assertTrue(np.any(slot != 0.0), slot_variable.name)
        trained_slots += 1
      self.assertTrue(
          any(value.shape == slot.shape and np.array_equal(value, slot)
              for value in stored))
    self.assertGreater(trained_slots, 0)


@pytest.mark.integration
class OnPolicyResumeTest(_TestCase):

  def test_adam_slots_and_iterations_survive_a_resume(self):
    root_dir = os.path.join(self.get_temp_dir(), 'ppo')
    config.run(root_dir, [CARTPOLE_GIN], SMALL_PPO)
    # 64 env steps = 2 iterations of 2 epochs.
    agent_fn = config.experiment_setting('agent_fn').scoped_configurable_fn
    env_loader = config.experiment_setting('env_loader').scoped_configurable_fn
    env = tf_py_environment.TFPyEnvironment(env_loader(seed=0))
    agent = agent_fn(time_step_spec=env.time_step_spec(),
                     action_spec=env.action_spec(),
                     train_step_counter=tf.Variable(0, dtype=tf.int64))
    env.close()
    optimizer = agent._optimizer  # pylint: disable=protected-access
    # PPOAgent applies its gradients to these, sorted by name; Adam keeps
    # its slots in that order, which is how the checkpoint matches them.
    variables = sorted(agent._actor_net.trainable_variables +  # pylint: disable=protected-access
                       agent._value_net.trainable_variables,  # pylint: disable=protected-access
                       key=lambda v: v.name)
    self.assert_slots_restored(agent, optimizer, variables, root_dir,
                               untrained='intrinsic')
    train_steps, iterations = latest_counters(root_dir)
    self.assertEqual(iterations, train_steps)  # One Adam step per epoch.

    # The loop itself resumes and keeps counting Adam's steps.
    gin.clear_config()
    config.run(root_dir, [CARTPOLE_GIN],
               SMALL_PPO + ('NUM_ENV_STEPS = 128',))
    resumed_train_steps, resumed_iterations = latest_counters(root_dir)
    self.assertGreater(resumed_train_steps, train_steps)
    self.assertEqual(resumed_iterations, resumed_train_steps)


@pytest.mark.integration
class R2D2ResumeTest(_TestCase):

  def test_adam_slots_and_iterations_survive_a_resume(self):
    gin_file = os.path.join(self.get_temp_dir(), 'tiny_r2d2.gin')
    with open(gin_file, 'w') as f:
      f.write(test_r2d2_experiment.TINY_GIN)
    root_dir = os.path.join(self.get_temp_dir(), 'r2d2')
    config.parse_gin([gin_file], ['r2d2.Settings.num_actors = 1'])
    settings = r2d2.Settings()
    r2d2.train_eval(root_dir, settings)
    train_steps, iterations = latest_counters(root_dir)
    self.assertGreater(train_steps, 0)
    self.assertEqual(iterations, train_steps)

    _, agent = r2d2.Builder(settings).make_agent()
    self.assert_slots_restored(
        agent, agent._optimizer,  # pylint: disable=protected-access
        agent.q_network.trainable_variables, root_dir)

    # The learner resumes at the same train step and keeps counting.
    result = r2d2.train_eval(
        root_dir, r2d2.Settings(num_env_steps=240, **{
            name: getattr(settings, name)
            for name in settings.__dataclass_fields__
            if name != 'num_env_steps'}))
    self.assertGreaterEqual(result['EnvironmentSteps'], 240)
    resumed_steps, resumed_iterations = latest_counters(root_dir)
    self.assertGreater(resumed_steps, train_steps)
    self.assertEqual(resumed_iterations, resumed_steps)


class CheckpointerTest(_TestCase):

  def checkpointer(self, root_dir, env_steps, train_step, max_to_keep=2,
                   **checkpointed):
    env_steps = tf.Variable(env_steps, dtype=tf.int64)
    train_step = tf.Variable(train_step, dtype=tf.int64)
    return checkpointing.Checkpointer(
        run_kit.RunDirectory(root_dir), env_steps, policies={},
        train_step=train_step, max_to_keep=max_to_keep, env_steps=env_steps,
        **checkpointed)

  def save_three(self, root_dir):
    """Checkpoints at env steps 100, 200, 300; the weights are step / 100."""
    weights = tf.Variable(tf.zeros([500]))
    checkpointer = self.checkpointer(root_dir, 0, 0, max_to_keep=3,
                                     weights=weights)
    for step in (100, 200, 300):
      weights.assign(tf.fill([500], step / 100.0))
      checkpointer._env_steps.assign(step)  # pylint: disable=protected-access
      checkpointer.save()
    return [os.path.join(root_dir, 'checkpoints', f'ckpt-{step}')
            for step in (100, 200, 300)]

  def test_a_damaged_newest_checkpoint_is_skipped_and_kept_aside(self):
    root_dir = os.path.join(self.get_temp_dir(), 'damaged')
    paths = self.save_three(root_dir)
    (data_file,) = glob.glob(paths[2] + '.data-*')
    with open(data_file, 'r+b') as f:
      f.truncate(os.path.getsize(data_file) // 2)  # A copy cut short.

    weights = tf.Variable(tf.zeros([500]))
    resumed = self.checkpointer(root_dir, 0, 0, max_to_keep=3,
                                weights=weights)
    with self.assertLogs('absl', level='WARNING') as logs:
      self.assertTrue(resumed.restore())
    self.assertAllEqual(weights.numpy(), np.full([500], 2.0))
    self.assertEqual(int(resumed._env_steps), 200)  # pylint: disable=protected-access
    skipped, kept = logs.records
    self.assertIn(f'Skipping checkpoint {paths[2]}', skipped.getMessage())
    self.assertIn('Read less bytes than requested', skipped.getMessage())
    (kept_file,) = glob.glob(os.path.join(
        root_dir, 'checkpoints', 'damaged', 'ckpt-300-*',
        os.path.basename(data_file)))
    self.assertIn(os.path.dirname(kept_file), kept.getMessage())
    self.assertFalse(glob.glob(paths[2] + '.*'))
    with open(kept_file, 'rb') as f:
      damaged_bytes = f.read()

    # The run goes on from 200; the damaged checkpoint is out of the
    # rotation, and a new checkpoint at its env step (300) does not
    # replace it.
    self.assertEqual(resumed.latest, paths[1])
    for step in (210, 220, 300):
      resumed._env_steps.assign(step)  # pylint: disable=protected-access
      resumed.save()
    with open(kept_file, 'rb') as f:
      self.assertEqual(f.read(), damaged_bytes)
    self.assertFalse(glob.glob(paths[0] + '.*'))
    self.assertFalse(glob.glob(paths[1] + '.*'))
    self.assertEqual(
        tf.train.get_checkpoint_state(
            os.path.join(root_dir, 'checkpoints')).all_model_checkpoint_paths,
        [os.path.join(root_dir, 'checkpoints', f'ckpt-{step}')
         for step in (210, 220, 300)])

  def test_no_checkpoint_loads_names_the_directory(self):
    root_dir = os.path.join(self.get_temp_dir(), 'all_damaged')
    for path in self.save_three(root_dir):
      (data_file,) = glob.glob(path + '.data-*')
      with open(data_file, 'r+b') as f:
        f.seek(os.path.getsize(data_file) // 2)
        f.write(b'\xff' * 16)  # Flipped bytes: the tensors' CRCs fail.
    resumed = self.checkpointer(root_dir, 0, 0, max_to_keep=3,
                                weights=tf.Variable(tf.zeros([500])))
    with self.assertLogs('absl', level='WARNING') as logs:
      with self.assertRaisesRegex(
          errors.RunDirectoryError,
          f'No checkpoint in {os.path.join(root_dir, "checkpoints")} loads '
          r'\(ckpt-300: .*Checksum does not match.*ckpt-100: '):
        resumed.restore()
    self.assertLen(logs.records, 3)

  def test_the_final_eval_is_stored_with_the_checkpoint(self):
    root_dir = os.path.join(self.get_temp_dir(), 'final_eval')
    first = self.checkpointer(root_dir, env_steps=500, train_step=7)
    self.assertIsNone(first.final_eval(500))
    results = {'AverageReturn': 1.25, 'EnvironmentSteps': 500}
    self.assertTrue(first.record_final_eval(results))
    self.assertFalse(first.record_final_eval(dict(results)))  # Unchanged.
    first.save()
    resumed = self.checkpointer(root_dir, env_steps=0, train_step=0)
    resumed.restore()
    self.assertEqual(resumed.final_eval(500), results)
    self.assertIsNone(resumed.final_eval(600))  # Another run's end.

  def test_a_resume_says_once_from_which_step(self):
    root_dir = os.path.join(self.get_temp_dir(), 'resume')
    fresh = self.checkpointer(root_dir, env_steps=12_000, train_step=300)
    with self.assertNoLogs('absl', level='INFO'):
      self.assertFalse(fresh.restore())
    fresh.save()
    resumed = self.checkpointer(root_dir, env_steps=0, train_step=0)
    with self.assertLogs('absl', level='INFO') as logs:
      self.assertTrue(resumed.restore())
    self.assertEqual(
        [record.getMessage() for record in logs.records],
        ['Resumed from checkpoint at env step 12,000 (train step 300).'])


class RunDirectoryTest(_TestCase):

  def test_holds_root_dir_until_released(self):
    root_dir = os.path.join(self.get_temp_dir(), 'locked')
    run = run_kit.RunDirectory(root_dir)
    self.assertFalse(test_run_lock.is_free(root_dir))
    run.release()
    self.assertTrue(test_run_lock.is_free(root_dir))
    run.release()  # Twice is harmless.
    # The next run in the same process.
    run_kit.RunDirectory(root_dir).release()

  def test_an_unwritable_root_dir_is_named(self):
    parent_file = os.path.join(self.get_temp_dir(), 'a_file')
    with open(parent_file, 'w') as f:
      f.write('not a directory')
    with self.assertRaisesRegex(errors.RunDirectoryError,
                                f'{parent_file}/run cannot be written'):
      run_kit.RunDirectory(os.path.join(parent_file, 'run'))


@pytest.mark.integration
class RerunTest(_TestCase):
  """A finished run, run again: no second eval; a resume: no start-up rate."""

  def run_ppo(self, root_dir, *bindings):
    gin.clear_config()
    return config.run(root_dir, [CARTPOLE_GIN], SMALL_PPO + bindings)

  def test_a_rerun_returns_the_final_eval_and_writes_none(self):
    root_dir = os.path.join(self.get_temp_dir(), 'rerun')
    # The iteration that crosses 64 env steps ends the run, and the loop
    # itself evaluates and checkpoints there, so `finish` stores the eval
    # in a second save of that checkpoint.
    intervals = ('on_policy.Settings.eval_interval = 64',
                 'on_policy.Settings.checkpoint_interval = 64')
    first = self.run_ppo(root_dir, *intervals)
    last_step = first['EnvironmentSteps']
    self.assertGreaterEqual(last_step, 64)
    checkpoint_files = sorted(os.listdir(os.path.join(root_dir,
                                                      'checkpoints')))

    with self.assertLogs('absl', level='INFO') as logs:
      second = self.run_ppo(root_dir, *intervals)
    self.assertEqual(second, first)
    self.assertIn(
        f'This run already ended at env step {last_step:,}: nothing to '
        'train (a larger NUM_ENV_STEPS continues it); its final eval: '
        f"average return {first['AverageReturn']:.2f}.",
        [record.getMessage() for record in logs.records])
    eval_events = test_train_eval.read_events(os.path.join(root_dir, 'eval'))
    for tag in ('Metrics/AverageReturn', 'Metrics/AverageEpisodeLength'):
      self.assertEqual([step for step, _ in eval_events[tag]], [last_step],
                       tag)
    self.assertEqual(
        sorted(os.listdir(os.path.join(root_dir, 'checkpoints'))),
        checkpoint_files)

    # A larger budget resumes; its first progress line (after its first
    # iteration) times nothing yet: no rate and no ETA.
    with self.assertLogs('absl', level='INFO') as logs:
      third = self.run_ppo(root_dir, 'NUM_ENV_STEPS = 128',
                           'on_policy.Settings.log_interval = 32')
    lines = [record.getMessage() for record in logs.records
             if record.getMessage().startswith('env steps ')]
    self.assertGreaterEqual(len(lines), 2)
    self.assertNotIn('env steps/s', lines[0])
    self.assertTrue(lines[0].endswith('| rate and ETA from the next line'),
                    lines[0])
    self.assertIn('env steps/s', lines[1])
    eval_events = test_train_eval.read_events(os.path.join(root_dir, 'eval'))
    self.assertEqual(
        [step for step, _ in eval_events['Metrics/AverageReturn']],
        [last_step, third['EnvironmentSteps']])


class EvaluatorTest(_TestCase):

  def test_recurrent_policy_results_and_success_rate(self):
    gin_file = os.path.join(self.get_temp_dir(), 'tiny_r2d2.gin')
    with open(gin_file, 'w') as f:
      f.write(test_r2d2_experiment.TINY_GIN)
    config.parse_gin([gin_file], [])
    settings = r2d2.Settings()
    _, agent = r2d2.Builder(settings).make_agent()
    evaluator = evaluation.Evaluator(agent.policy, settings.env_loader,
                                     num_episodes=2, seed=0,
                                     success_threshold=20.5)
    self.addCleanup(evaluator.close)
    first = evaluator(env_steps=0)
    second = evaluator(env_steps=10)
    # Counting-v0 pays 0 + 1 + ... + 6 = 21 whatever the actions; 21 > 20.5
    # is a success. The LSTM policy's state is the evaluator's own.
    self.assertEqual(first['AverageReturn'], 21.0)
    self.assertEqual(first['SuccessRate'], 1.0)
    self.assertEqual(second['EnvironmentSteps'], 10)
    self.assertEqual(
        {k: v for k, v in first.items() if k != 'EnvironmentSteps'},
        {k: v for k, v in second.items() if k != 'EnvironmentSteps'})


class SetTfThreadsTest(absltest.TestCase):

  def test_none_keeps_tensorflow_pools_and_bad_values_raise(self):
    before = (tf.config.threading.get_intra_op_parallelism_threads(),
              tf.config.threading.get_inter_op_parallelism_threads())
    run_kit.set_tf_threads(None)
    self.assertEqual(
        (tf.config.threading.get_intra_op_parallelism_threads(),
         tf.config.threading.get_inter_op_parallelism_threads()), before)
    with self.assertRaisesRegex(ValueError, 'tf_threads'):
      run_kit.set_tf_threads(0)

  def test_after_tensorflow_started_it_warns_and_changes_nothing(self):
    tf.constant(1.0) + 1.0  # TensorFlow is running.
    current = tf.config.threading.get_intra_op_parallelism_threads()
    wanted = current + 3
    with self.assertLogs(level='WARNING') as logs:
      run_kit.set_tf_threads(wanted)
    self.assertIn(f'tf_threads={wanted}', logs.output[0])
    self.assertEqual(tf.config.threading.get_intra_op_parallelism_threads(),
                     current)


class FakeClock:
  """Seconds that advance only when a test says so."""

  def __init__(self, now=1000.0):
    self.now = now

  def __call__(self):
    return self.now


class ProgressLogTest(absltest.TestCase):

  def log_line(self, progress, *args, **kwargs):
    with self.assertLogs('absl', level='INFO') as logs:
      line = progress.log(*args, **kwargs)
    self.assertLen(logs.records, 1)
    self.assertEqual(logs.records[0].getMessage(), line)
    return line

  def test_due(self):
    progress = run_kit.ProgressLog(num_env_steps=1000, interval=100)
    self.assertFalse(progress.due(0, 99))
    self.assertTrue(progress.due(99, 100))
    self.assertTrue(progress.due(990, 1000))

  def test_start_up_is_not_a_rate(self):
    clock = FakeClock()
    progress = run_kit.ProgressLog(num_env_steps=100_000, interval=1000,
                                   clock=clock)
    clock.now += 60.0  # Building, tracing: the first iteration.
    with self.assertLogs('absl', level='INFO') as logs:
      progress.iteration_done(1000)
    self.assertEqual(logs.records[0].getMessage(),
                     'First iteration done at env step 1,000; a progress '
                     'line every 1,000 env steps.')
    # The first iteration's own line: nothing timed behind it.
    self.assertEqual(
        self.log_line(progress, 1000, {'loss': '0.5'}),
        'env steps 1,000/100,000 (1%) | loss 0.5 | '
        'rate and ETA from the next line')
    clock.now += 2.0
    with self.assertNoLogs('absl', level='INFO'):
      progress.iteration_done(2000)  # The clock has started: no effect.
    # 1,000 steps in 2 s since the previous line: 500/s, not 2,000 / 62 s.
    # ETA: 98,000 steps / 500 per s = 196 s.
    self.assertEqual(
        self.log_line(progress, 2000, {'loss': '0.4'}),
        'env steps 2,000/100,000 (2%) | 500 env steps/s | loss 0.4 | '
        'ETA 0:03:16')

  def test_first_line_measures_from_the_first_iteration(self):
    clock = FakeClock()
    progress = run_kit.ProgressLog(num_env_steps=100_000, interval=20_000,
                                   clock=clock)
    clock.now += 50.0  # Start-up and the first iteration (4,096 steps).
    progress.iteration_done(4096)
    clock.now += 8.0
    # (20,480 - 4,096) / 8 s = 2,048/s; 79,520 left / 2,048 = 38.8 s.
    self.assertEqual(
        self.log_line(progress, 20_480, {}),
        'env steps 20,480/100,000 (20%) | 2,048 env steps/s | ETA 0:00:39')

  def test_rate_of_the_last_interval_not_the_average(self):
    clock = FakeClock()
    progress = run_kit.ProgressLog(num_env_steps=10_000, interval=1000,
                                   clock=clock)
    progress.iteration_done(0)
    clock.now += 10.0
    self.log_line(progress, 1000, {})  # 100/s.
    clock.now += 1.0
    # 1,000 steps in the last 1 s: 1,000/s (the average would be 182/s);
    # 8,000 left at 1,000/s = 8 s.
    self.assertEqual(
        self.log_line(progress, 2000, {}),
        'env steps 2,000/10,000 (20%) | 1,000 env steps/s | ETA 0:00:08')

  def test_counters_are_rates_of_the_same_interval(self):
    clock = FakeClock()
    progress = run_kit.ProgressLog(num_env_steps=10_000, interval=1000,
                                   clock=clock)
    clock.now += 30.0
    progress.iteration_done(200, {'learner steps': 10})
    clock.now += 4.0
    # (1,200 - 200) / 4 s = 250 env steps/s; (110 - 10) / 4 s = 25.0
    # learner steps/s; 8,800 / 250 = 35.2 s.
    self.assertEqual(
        self.log_line(progress, 1200, {'train step': '110'},
                      counters={'learner steps': 110}),
        'env steps 1,200/10,000 (12%) | 250 env steps/s | '
        '25.0 learner steps/s | train step 110 | ETA 0:00:35')

  def test_no_steps_since_the_last_line_is_no_rate(self):
    clock = FakeClock()
    progress = run_kit.ProgressLog(num_env_steps=1000, interval=100,
                                   clock=clock)
    progress.iteration_done(100)
    clock.now += 5.0
    self.log_line(progress, 200, {})
    clock.now += 5.0
    self.assertEqual(self.log_line(progress, 200, {}),
                     'env steps 200/1,000 (20%) | '
                     'rate and ETA from the next line')

  def test_last_line(self):
    clock = FakeClock()
    progress = run_kit.ProgressLog(num_env_steps=1000, interval=100,
                                   clock=clock)
    progress.iteration_done(900)
    clock.now += 1.0
    self.assertEqual(self.log_line(progress, 1024, {}),
                     'env steps 1,024/1,000 (102%) | 124 env steps/s | '
                     'ETA 0:00:00')

  def test_episode_budget_counts_episodes_and_its_eta(self):
    clock = FakeClock()
    progress = run_kit.ProgressLog(num_env_steps=10_000_000, interval=1000,
                                   clock=clock, num_episodes=1000)
    clock.now += 60.0
    progress.iteration_done(1000, episodes=20)
    self.assertEqual(
        self.log_line(progress, 1000, {}, episodes=20),
        'episodes 20/1,000 (2%) | env steps 1,000 | '
        'rate and ETA from the next line')
    clock.now += 10.0
    # 100 episodes in 10 s: 880 left at 10/s = 88 s (the env-step cap at
    # 500/s would be 5.5 hours away).
    self.assertEqual(
        self.log_line(progress, 6000, {}, episodes=120),
        'episodes 120/1,000 (12%) | env steps 6,000 | 500 env steps/s | '
        '10.0 episodes/s | ETA 0:01:28')
    self.assertFalse(progress.due(6000, 6500, episodes=999))
    self.assertTrue(progress.due(6000, 6500, episodes=1000))

  def test_episode_budget_eta_is_the_earlier_end(self):
    clock = FakeClock()
    progress = run_kit.ProgressLog(num_env_steps=10_000, interval=1000,
                                   clock=clock, num_episodes=1000)
    progress.iteration_done(0, episodes=0)
    clock.now += 10.0
    # The env-step cap first: 8,000 steps at 200/s = 40 s, 990 episodes at
    # 1/s = 990 s.
    self.assertEqual(
        self.log_line(progress, 2000, {}, episodes=10),
        'episodes 10/1,000 (1%) | env steps 2,000 | 200 env steps/s | '
        '1.0 episodes/s | ETA 0:00:40')
    clock.now += 10.0
    # No episode ended in the interval: the cap's ETA only.
    self.assertEqual(
        self.log_line(progress, 4000, {}, episodes=10),
        'episodes 10/1,000 (1%) | env steps 4,000 | 200 env steps/s | '
        '0.0 episodes/s | ETA 0:00:30')

  def test_crossed_and_duration(self):
    self.assertTrue(run_kit.crossed(99, 100, 100))
    self.assertFalse(run_kit.crossed(100, 199, 100))
    self.assertFalse(run_kit.crossed(0, 500, 0))
    self.assertEqual(run_kit.format_duration(3725), '1:02:05')


class IterationEndTest(absltest.TestCase):
  """What both loops do at the end of an iteration, and at their start."""

  def calls(self, previous_steps, current_steps, budget_spent=False):
    done = []
    run_kit.evaluate_and_checkpoint_when_due(
        previous_steps, current_steps,
        types.SimpleNamespace(eval_interval=100, checkpoint_interval=300),
        budget_spent=budget_spent,
        evaluate=lambda: done.append('evaluate'),
        checkpoint=lambda: done.append('checkpoint'))
    return done

  def test_each_when_its_interval_was_crossed(self):
    self.assertEqual(self.calls(250, 280), [])
    self.assertEqual(self.calls(180, 220), ['evaluate'])
    self.assertEqual(self.calls(280, 320), ['evaluate', 'checkpoint'])

  def test_no_checkpoint_once_the_budget_is_spent(self):
    # `finish` saves then, with the final evaluation.
    self.assertEqual(self.calls(280, 320, budget_spent=True), ['evaluate'])

  def test_global_seeds_repeat_tensorflow_and_numpy(self):
    def draws(seed):
      run_kit.set_global_seeds(seed)
      return float(tf.random.uniform([])), float(np.random.uniform())
    self.assertEqual(draws(3), draws(3))
    # numpy takes the seed modulo 2**32.
    self.assertEqual(draws(2**32 + 3)[1], draws(3)[1])

  def test_global_seeds_repeat_keras_initial_weights(self):
    # Unseeded Keras initialisers draw their seeds from Python's `random`;
    # what the process drew before must not change a run's weights.
    def weights(seed, draws_before):
      for _ in range(draws_before):
        random.random()
      run_kit.set_global_seeds(seed)
      layer = tf.keras.layers.Dense(4)
      layer.build((None, 3))
      return layer.kernel.numpy()
    np.testing.assert_array_equal(weights(3, 0), weights(3, 5))
    self.assertFalse(np.array_equal(weights(3, 0), weights(4, 0)))


class _BudgetEnv:
  """What `run_kit.episode_budget` reads of an env."""

  env_id = 'fake/0'

  def __init__(self, episode_budget):
    self.episode_budget = episode_budget
    self.closed = False

  def close(self):
    self.closed = True


class EpisodeBudgetTest(absltest.TestCase):

  def budget(self, num_episodes, own):
    built = []

    def env_loader(seed):
      self.assertEqual(seed, 7)
      built.append(_BudgetEnv(own))
      return built[-1]
    with self.assertLogs('absl', level='INFO') as logs:
      budget = run_kit.episode_budget(num_episodes, env_loader, 7, 10_000,
                                      'loop.num_episodes')
    self.assertTrue(built[0].closed)
    return budget, [record.getMessage() for record in logs.records]

  def test_the_envs_own_unless_bound(self):
    self.assertEqual(self.budget(None, 1000), (1000, [
        "Budget: 1,000 episodes, fake/0's own (bind loop.num_episodes to "
        'change it); at most 10,000 env steps.']))
    self.assertEqual(self.budget(50, 1000), (50, [
        'Budget: 50 episodes (loop.num_episodes); at most 10,000 env steps.']))
    self.assertEqual(self.budget(50, None)[0], 50)

  def test_above_the_envs_own_warns(self):
    budget, lines = self.budget(2000, 1000)
    self.assertEqual(budget, 2000)
    self.assertEqual(lines[1], "loop.num_episodes = 2,000 is above fake/0's "
                     'own budget of 1,000 episodes: its log stops there.')

  def test_no_budget_without_either(self):
    env = _BudgetEnv(None)
    with self.assertNoLogs('absl', level='INFO'):
      self.assertIsNone(run_kit.episode_budget(
          None, lambda seed: env, 0, 100, 'loop.num_episodes'))
    # Envs of other loaders have no budget of their own.
    from tfa_explore.testing import fake_envs  # pylint: disable=g-import-not-at-top
    self.assertIsNone(fake_envs.load_counting(seed=0).episode_budget)


if __name__ == '__main__':
  absltest.main()
