"""tfa_explore.environments.bsuite: ids, specs, journals and bsuite's CSV."""

import glob
import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile
from unittest import mock

from absl.testing import absltest
from bsuite.experiments import summary_analysis
from bsuite.experiments.deep_sea import sweep as deep_sea_sweep
from bsuite.logging import csv_load
import gin
import numpy as np
import pandas as pd
import pytest
import tensorflow as tf
from tf_agents.trajectories import time_step as ts

from tfa_explore import config
from tfa_explore import errors
from tfa_explore.environments import batched
from tfa_explore.environments import bsuite as bsuite_env
from tfa_explore.environments import bsuite_journal
from tfa_explore.environments import run_context
from tfa_explore.experiments import r2d2
import test_bsuite_sweep  # pylint: disable=g-bad-import-order

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _episodes_in_journals(root_dir):
  return sum(len(records)
             for records in bsuite_journal.read_journals(root_dir).values())


class _TestCase(tf.test.TestCase):
  test_session = None

  def setUp(self):
    super().setUp()
    gin.clear_config()
    self.addCleanup(gin.clear_config)
    previous = os.environ.pop(run_context.RUN_DIR_VARIABLE, None)

    def restore():
      os.environ.pop(run_context.RUN_DIR_VARIABLE, None)
      if previous is not None:
        os.environ[run_context.RUN_DIR_VARIABLE] = previous
    self.addCleanup(restore)


class LoadTest(_TestCase):

  def test_specs_and_id(self):
    env = bsuite_env.load('bsuite/deep_sea/0', seed=0)
    self.assertEqual(env.env_id, 'bsuite/deep_sea/0')
    # The 10 x 10 grid, flattened as bsuite's reference agents do.
    self.assertEqual(env.observation_spec().shape, (100,))
    self.assertEqual(env.observation_spec().dtype, np.float32)
    self.assertEqual(env.action_spec().dtype, np.int64)
    self.assertEqual((int(env.action_spec().minimum),
                      int(env.action_spec().maximum)), (0, 1))
    self.assertEqual(bsuite_env.load('deep_sea/0').env_id,
                     'bsuite/deep_sea/0')

  def test_deep_sea_episode_ends_in_a_termination(self):
    env = bsuite_env.load('bsuite/deep_sea/0', seed=0)
    step = env.reset()
    self.assertEqual(step.step_type, ts.StepType.FIRST)
    for _ in range(9):
      step = env.step(np.int64(0))
      self.assertEqual(step.step_type, ts.StepType.MID)
      self.assertEqual(float(step.discount), 1.0)
    step = env.step(np.int64(0))
    self.assertEqual(step.step_type, ts.StepType.LAST)
    self.assertEqual(float(step.discount), 0.0)
    # TF-Agents' auto-reset: the next step starts an episode.
    self.assertEqual(env.step(np.int64(0)).step_type, ts.StepType.FIRST)

  def test_copies_are_one_task_and_seeded_envs_differ_where_bsuite_seeds(
      self):
    # deep_sea's action mapping is bsuite's mapping_seed, the same in
    # every copy; memory_len's contexts follow our seed.
    first = bsuite_env.raw_env('deep_sea/3', seed=0)
    second = bsuite_env.raw_env('deep_sea/3', seed=1)
    np.testing.assert_array_equal(first._action_mapping,
                                  second._action_mapping)

    def contexts(seed):
      env = bsuite_env.load('bsuite/memory_len/0', seed=seed)
      return [tuple(env.reset().observation) for _ in range(20)]
    self.assertEqual(contexts(3), contexts(3))
    self.assertNotEqual(contexts(3), contexts(4))

  def test_episode_budget_is_bsuites_for_the_id(self):
    # What a run without its own num_episodes stops at (run_kit).
    self.assertEqual(bsuite_env.load('bsuite/deep_sea/0').episode_budget,
                     10_000)
    self.assertEqual(
        bsuite_env.load('bsuite/discounting_chain/0').episode_budget, 1000)
    self.assertEqual(bsuite_env.episode_budget('discounting_chain/0'), 1000)

  def test_unknown_ids_raise_a_config_error_naming_them(self):
    for bad, hint in [('bsuite/deep_sea/99', 'deep_sea has settings 0 to 20'),
                      ('bsuite/deepsea/1', 'Did you mean: bsuite/deep_sea/1'),
                      ('bsuite/nothing/1', 'Experiments: bandit')]:
      with self.assertRaises(errors.ConfigError) as raised:
        bsuite_env.load(bad)
      self.assertIn(repr(bad), str(raised.exception))
      self.assertIn(hint, str(raised.exception))


def _trajectory(env, actions):
  """(step type, reward, observation) of `env` reset, then stepped."""
  steps = [env.reset()] + [env.step(np.int64(action)) for action in actions]
  return [(int(step.step_type), float(step.reward),
           tuple(np.ravel(step.observation))) for step in steps]


def _actions(env, count=300):
  spec = env.action_spec()
  return np.random.default_rng(0).integers(
      int(spec.minimum), int(spec.maximum) + 1, size=count)


class SeedTest(_TestCase):

  def test_every_experiment_repeats_with_one_seed(self):
    # bsuite's settings set the seed to None (cartpole, catch, the noise
    # wrappers) or its loader takes none (deep_sea_stochastic): unseeded,
    # two loads would differ. MNIST's needs a download: left out.
    from bsuite import sweep  # pylint: disable=g-import-not-at-top
    experiments = sorted({name.partition('/')[0] for name in sweep.SWEEP
                          if not name.startswith('mnist')})
    self.assertIn('deep_sea_stochastic', experiments)
    for experiment in experiments:
      with self.subTest(experiment=experiment):
        first = bsuite_env.load(f'{experiment}/0', seed=5)
        second = bsuite_env.load(f'{experiment}/0', seed=5)
        actions = _actions(first)
        self.assertEqual(_trajectory(first, actions),
                         _trajectory(second, actions))

  def test_deep_sea_stochastic_follows_the_seed(self):
    def trajectory(seed):
      env = bsuite_env.load('bsuite/deep_sea_stochastic/0', seed=seed)
      # Always "left" in deep_sea's mapping: at the bottom-left cell the
      # reward gets bsuite's N(0, 1) noise, every episode.
      return _trajectory(env, np.zeros(100, np.int64))
    self.assertEqual(trajectory(3), trajectory(3))
    self.assertNotEqual(trajectory(3), trajectory(4))

  def test_deep_sea_stochastic_is_bsuites_env_with_a_seed(self):
    from bsuite import bsuite as bsuite_lib  # pylint: disable=g-import-not-at-top
    # bsuite's loader, which ours stands in for, takes these only.
    self.assertEqual(
        list(inspect.signature(bsuite_lib.EXPERIMENT_NAME_TO_ENVIRONMENT[
            'deep_sea_stochastic']).parameters), ['size', 'mapping_seed'])
    for setting in (0, 7):
      ours = bsuite_env.raw_env(f'deep_sea_stochastic/{setting}', seed=0)
      theirs = bsuite_lib.load_from_id(f'deep_sea_stochastic/{setting}')
      self.assertIs(type(ours), type(theirs))
      self.assertEqual(ours.bsuite_num_episodes, theirs.bsuite_num_episodes)
      self.assertEqual(ours.observation_spec(), theirs.observation_spec())
      np.testing.assert_array_equal(ours._action_mapping,
                                    theirs._action_mapping)
      self.assertFalse(ours._deterministic)

  def test_deterministic_deep_sea_is_bsuites(self):
    from bsuite import bsuite as bsuite_lib  # pylint: disable=g-import-not-at-top
    actions = np.random.default_rng(1).integers(0, 2, size=200)
    for seed in (0, 9):
      ours = bsuite_env.raw_env('deep_sea/4', seed=seed)
      theirs = bsuite_lib.load_from_id('deep_sea/4')
      for env in (ours, theirs):
        env.reset()
      for action in actions:
        mine, bsuites = ours.step(int(action)), theirs.step(int(action))
        self.assertEqual((mine.step_type, mine.reward),
                         (bsuites.step_type, bsuites.reward))
        np.testing.assert_array_equal(mine.observation, bsuites.observation)
        if mine.last():
          ours.reset()
          theirs.reset()

  def test_two_runs_with_one_seed_log_the_same_episodes(self):
    def journaled(seed):
      root_dir = os.path.join(self.get_temp_dir(), f'run{seed}_{len(runs)}')
      runs.append(root_dir)
      run_context.set_run_dir(root_dir)
      # Env i gets seed + i (batched.make_batched_env).
      env = batched.make_batched_env(
          lambda seed: bsuite_env.load('deep_sea_stochastic/0', seed=seed),
          2, seed)
      env.reset()
      for action in np.random.default_rng(0).integers(0, 2, size=(60, 2)):
        env.step(action)
      env.close()
      by_env = {}
      for path in glob.glob(os.path.join(root_dir, bsuite_journal.LOG_DIR,
                                         bsuite_journal.JOURNAL_DIR, '*.jsonl')):
        # <id>.<pid>.<seed>.<number>.jsonl
        env_seed = os.path.basename(path).split('.')[2]
        with open(path) as f:
          by_env[env_seed] = [(record['length'], record['return'])
                              for record in map(json.loads, f)]
      return by_env
    runs = []
    first = journaled(3)
    self.assertEqual(sorted(first), ['3', '4'])
    self.assertLen(first['3'], 5)  # 60 steps: 5 episodes and a reset each
    self.assertEqual(journaled(3), first)
    self.assertNotEqual(journaled(5)['5'], first['3'])


class JournalTest(_TestCase):

  def _run_random(self, root_dir, num_envs=3, steps=70, bsuite_id='deep_sea/0'):
    run_context.set_run_dir(root_dir)
    env = batched.make_batched_env(
        lambda seed: bsuite_env.load(bsuite_id, seed=seed), num_envs, 0)
    env.reset()
    rng = np.random.default_rng(0)
    for _ in range(steps):
      env.step(rng.integers(0, 2, size=num_envs))
    env.close()

  def test_no_run_dir_no_journal_and_eval_envs_keep_none(self):
    root_dir = self.get_temp_dir()
    env = bsuite_env.load('deep_sea/0')
    env.reset()
    for _ in range(25):
      env.step(np.int64(1))
    self.assertEmpty(glob.glob(os.path.join(root_dir, '**', '*.jsonl'),
                               recursive=True))
    run_context.set_run_dir(root_dir)
    with run_context.evaluation():
      env = bsuite_env.load('deep_sea/0')
    env.reset()
    for _ in range(25):
      env.step(np.int64(1))
    self.assertEqual(_episodes_in_journals(root_dir), 0)

  def test_one_experiment_across_envs_read_by_bsuite(self):
    root_dir = self.get_temp_dir()
    # 3 envs x 70 steps: each auto-reset step is a FIRST, so every env
    # ends 6 episodes of 10 steps.
    self._run_random(root_dir)
    self.assertEqual(_episodes_in_journals(root_dir), 18)
    [path] = bsuite_journal.write_csv(root_dir)
    self.assertEqual(os.path.basename(path), 'bsuite_id_-_deep_sea-0.csv')
    frame = pd.read_csv(path)
    self.assertEqual(list(frame.columns)[:5],
                     ['steps', 'episode', 'total_return', 'episode_len',
                      'episode_return'])
    # bsuite's logarithmic points (1-10, then 12, 14, 17) and the last.
    self.assertEqual(list(frame.episode),
                     [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 17, 18])
    self.assertEqual(frame.steps.iloc[-1], 180)
    # Every random 10-step episode misses the treasure (p = 2^-10 each).
    self.assertEqual(frame.total_bad_episodes.iloc[-1], 18)
    df, sweep_vars = csv_load.load_bsuite({'ours': os.path.dirname(path)})
    scores = summary_analysis.bsuite_score(df, sweep_vars)
    [score] = scores[scores.bsuite_env == 'deep_sea'].score
    self.assertBetween(score, 0.0, 1.0)

  def test_rows_sum_envs_in_the_order_episodes_ended(self):
    def episode(time, length, ret, **info):
      return {'time': time, 'length': length, 'return': ret, 'info': info}
    rows = bsuite_journal.csv_rows(
        [episode(1.0, 10, 1.0, total_bad_episodes=0.0, best_episode=3.0),
         episode(2.0, 10, -0.1, total_bad_episodes=1.0, best_episode=1.0),
         episode(3.0, 12, 0.5, total_bad_episodes=1.0, best_episode=5.0)],
        budget=2)
    # The budget cuts the third episode.
    self.assertEqual([row['episode'] for row in rows], [1, 2])
    self.assertEqual(rows[-1]['steps'], 20)
    self.assertAlmostEqual(rows[-1]['total_return'], 0.9)
    self.assertEqual(rows[-1]['total_bad_episodes'], 1.0)
    self.assertEqual(rows[-1]['best_episode'], 3.0)  # a maximum, not a sum

  def test_a_torn_line_is_skipped_and_max_episodes_cuts(self):
    root_dir = self.get_temp_dir()
    self._run_random(root_dir, num_envs=2, steps=45)
    [journal, *_] = glob.glob(os.path.join(
        root_dir, bsuite_journal.LOG_DIR, bsuite_journal.JOURNAL_DIR, '*.jsonl'))
    with open(journal, 'a') as f:
      f.write('{"time": 12')  # a kill mid-line
    self.assertEqual(_episodes_in_journals(root_dir), 8)
    [path] = bsuite_journal.write_csv(root_dir, max_episodes=5)
    self.assertEqual(pd.read_csv(path).episode.max(), 5)
    for line in open(journal).read().splitlines()[:-1]:
      self.assertEqual(set(json.loads(line)),
                       {'time', 'length', 'return', 'info'})


@pytest.mark.integration
class EndOfRunTest(_TestCase):

  def test_hooks_run_once_each_with_the_run(self):
    calls = []

    def hook(root_dir, num_episodes):
      calls.append((root_dir, num_episodes))

    run_context.register_end_of_run(hook)
    run_context.register_end_of_run(hook)
    self.addCleanup(run_context._END_OF_RUN_HOOKS.remove, hook)  # pylint: disable=protected-access
    run_context.end_of_run('/some/run', 7)
    self.assertEqual(calls, [('/some/run', 7)])

  def test_the_bsuite_loader_registers_its_csv_writer(self):
    self.assertIn(bsuite_journal.end_of_run,
                  run_context._END_OF_RUN_HOOKS)  # pylint: disable=protected-access
    root_dir = os.path.join(self.get_temp_dir(), 'end_of_run')
    journal = bsuite_journal.journal(root_dir, 'bsuite/deep_sea/0', seed=0)
    journal.record(10, 0.0, {'total_bad_episodes': 1})
    journal.close()
    run_context.end_of_run(root_dir, None)
    frame = pd.read_csv(bsuite_journal.csv_path(root_dir, 'deep_sea/0'))
    self.assertEqual(list(frame.episode), [1])
    self.assertEqual(list(frame.total_bad_episodes), [1])


class RunTest(_TestCase):

  def test_on_policy_run_stops_at_its_episode_budget(self):
    root_dir = os.path.join(self.get_temp_dir(), 'ppo')
    gin_file = os.path.join(self.get_temp_dir(), 'tiny_ppo.gin')
    with open(gin_file, 'w') as f:
      f.write(test_bsuite_sweep.TINY_PPO_GIN)
    # 3 evaluation episodes, so that journaling them would show.
    config.run(root_dir, [gin_file], [
        'NUM_EPISODES = 7', 'on_policy.Settings.num_eval_episodes = 3'])
    # 2 envs x 10 steps per iteration: one episode per env per iteration,
    # so the run stops after the 4th iteration (8 episodes >= 7).
    self.assertEqual(_episodes_in_journals(root_dir), 8)
    frame = pd.read_csv(bsuite_journal.csv_path(root_dir, 'deep_sea/0'))
    self.assertEqual(frame.episode.max(), 7)

  def test_run_without_num_episodes_stops_at_bsuites_budget(self):
    root_dir = os.path.join(self.get_temp_dir(), 'budget')
    gin_file = os.path.join(self.get_temp_dir(), 'no_budget_ppo.gin')
    with open(gin_file, 'w') as f:
      f.write('\n'.join(
          line for line in test_bsuite_sweep.TINY_PPO_GIN.splitlines()
          if 'NUM_EPISODES' not in line))
    # bsuite's own budget for deep_sea, shrunk from 10,000 to a test's.
    with mock.patch.object(deep_sea_sweep, 'NUM_EPISODES', 6), \
        self.assertLogs('absl', level='INFO') as logs:
      config.run(root_dir, [gin_file],
                 ['on_policy.Settings.log_interval = 20'])
    lines = [record.getMessage() for record in logs.records]
    self.assertIn("Budget: 6 episodes, bsuite/deep_sea/0's own (bind "
                  'on_policy.Settings.num_episodes to change it); at most '
                  '100,000 env steps.', lines)
    # 2 envs of 10-step episodes, each ending its 3rd in the 4th iteration
    # (a reset step after each episode): 6 episodes end the run.
    self.assertEqual(_episodes_in_journals(root_dir), 6)
    frame = pd.read_csv(bsuite_journal.csv_path(root_dir, 'deep_sea/0'))
    self.assertEqual(frame.episode.max(), 6)
    progress = [line for line in lines if line.startswith('episodes ')]
    self.assertTrue(progress, lines)
    self.assertRegex(progress[-1], r'^episodes 6/6 \(100%\) \| env steps \d+ \| '
                     r'.* \| ETA 0:00:00$')
    self.assertFalse([line for line in lines
                      if line.startswith('env steps ')])

  def test_r2d2_run_logs_its_actors_episodes_not_its_evals(self):
    root_dir = os.path.join(self.get_temp_dir(), 'r2d2')
    gin_file = os.path.join(REPO_ROOT, 'gin', 'r2d2', 'bsuite_deep_sea.gin')
    config.parse_gin([gin_file], [
        'NUM_EPISODES = 30', 'r2d2.Settings.min_size_to_sample = 4',
        'r2d2.Settings.batch_size = 4', 'r2d2.Settings.samples_per_insert = 2.0',
        'r2d2.r2d2_agent_fn.lstm_size = 8', 'r2d2.r2d2_agent_fn.jit_compile = False',
        'r2d2.Settings.actor_update_period = 20',
        'r2d2.Settings.train_steps_per_iteration = 2',
        'r2d2.Settings.shutdown_timeout_seconds = 20.0',
        'r2d2.Settings.sample_timeout_seconds = 5.0'])
    result = r2d2.train_eval(root_dir=root_dir)
    journaled = _episodes_in_journals(root_dir)
    self.assertGreaterEqual(journaled, 30)
    frame = pd.read_csv(bsuite_journal.csv_path(root_dir, 'deep_sea/0'))
    self.assertEqual(frame.episode.max(), 30)
    # The final evaluation's 4 episodes are in no journal: every journaled
    # episode is an actor's (4 envs, so at most 4 under way when stopped,
    # plus those ended while the learner read its last reports).
    self.assertGreaterEqual(result['EnvironmentSteps'], 300)
    self.assertLessEqual(journaled * 10, result['EnvironmentSteps'] + 4 * 10)

  def test_users_file_elsewhere_includes_a_shipped_file(self):
    # A user's three lines in their own folder, run from there as the
    # docs show; only what makes R2D2 this short is on the command line.
    folder = tempfile.mkdtemp(prefix='tfa_explore_user_')
    self.addCleanup(shutil.rmtree, folder, ignore_errors=True)
    self.assertFalse(folder.startswith(REPO_ROOT))
    with open(os.path.join(folder, 'mine.gin'), 'w') as f:
      f.write("include 'gin/r2d2/bsuite_memory_len.gin'\n"
              "BSUITE_ID = 'bsuite/memory_len/0'\n"
              'NUM_EPISODES = 40\n')
    result = subprocess.run(
        [sys.executable, os.path.join(REPO_ROOT, 'train', 'train_eval.py'),
         '--root_dir=runs/mine', '--gin_file=mine.gin',
         '--gin_bindings=r2d2.Settings.min_size_to_sample = 4',
         '--gin_bindings=r2d2.r2d2_agent_fn.jit_compile = False',
         '--gin_bindings=r2d2.Settings.actor_update_period = 20'],
        cwd=folder, capture_output=True, text=True, timeout=300, check=False)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    self.assertIn('Budget: 40 episodes (r2d2.Settings.num_episodes)',
                  result.stderr)
    # R2D2's progress line counts episodes too.
    self.assertRegex(result.stderr,
                     r'\d\d:\d\d:\d\d episodes \d+/40 \(\d+%\) \| env steps ')
    frame = pd.read_csv(bsuite_journal.csv_path(
        os.path.join(folder, 'runs', 'mine'), 'memory_len/0'))
    self.assertEqual(frame.episode.max(), 40)

  def test_unknown_id_exits_2_with_one_line(self):
    result = subprocess.run(
        [sys.executable, os.path.join(REPO_ROOT, 'train', 'train_eval.py'),
         f'--root_dir={self.get_temp_dir()}/bad',
         '--gin_file=' + os.path.join(REPO_ROOT, 'gin', 'r2d2',
                                      'bsuite_deep_sea.gin'),
         "--gin_bindings=BSUITE_ID='bsuite/deep_sea/21'"],
        capture_output=True, text=True, timeout=300, check=False)
    self.assertEqual(result.returncode, 2, result.stderr[-2000:])
    errors_printed = [line for line in result.stderr.splitlines()
                      if line.startswith('ERROR:')]
    self.assertLen(errors_printed, 1)
    self.assertIn("'bsuite/deep_sea/21'", errors_printed[0])
    self.assertIn('deep_sea has settings 0 to 20', errors_printed[0])


if __name__ == '__main__':
  absltest.main()
