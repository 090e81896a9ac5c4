"""benchmarks/bsuite_sweep.py: its flags, and a sweep end to end.

The unit tests call the functions of the script and of the modules it
imports (bsuite_runs.py: the runs; bsuite_scores.py: their scoring); the
command-line tests run it as a user would. The end-to-end sweep runs our
PPO (a tiny gin file) and bsuite's random reference agent on deep_sea/0
for 3 episodes each, scores them with bsuite's analysis, then runs the same
command again, which must skip both.
"""

import contextlib
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from unittest import mock

from absl.testing import absltest
import pytest

import benchmark_scripts  # pylint: disable=g-bad-import-order

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCHMARKS = os.path.join(REPO_ROOT, 'benchmarks')
SCRIPT = os.path.join(BENCHMARKS, 'bsuite_sweep.py')

# PPO on bsuite, as small as it runs: 2 envs x 10 steps (one deep_sea/0
# episode each) per iteration; evaluation and checkpoints only at the end.
TINY_PPO_GIN = """
import gin.tf.external_configurables
import tfa_explore.environments.bsuite
import tfa_explore.experiments.on_policy
import tfa_explore.experiments.ppo
import tfa_explore.config.experiment

BSUITE_ID = 'bsuite/deep_sea/0'
NUM_EPISODES = 10000

run_experiment.experiment = @on_policy.train_eval
on_policy.Settings.env_loader = @bsuite.load
bsuite.load.bsuite_id = %BSUITE_ID
on_policy.Settings.num_episodes = %NUM_EPISODES
on_policy.Settings.num_env_steps = 100000
on_policy.Settings.seed = 0
on_policy.Settings.num_envs = 2
on_policy.Settings.rollout_length = 10
on_policy.Settings.tf_threads = 1
on_policy.Settings.eval_interval = 100000
on_policy.Settings.num_eval_episodes = 1
on_policy.Settings.checkpoint_interval = 100000
on_policy.Settings.log_interval = 100000
on_policy.Settings.agent_fn = @ppo.ppo_clip_agent

ppo.ppo_clip_agent.intrinsic_reward = None
ppo.ppo_clip_agent.learning_rate = 1e-3
ppo.ppo_clip_agent.num_epochs = 1
ppo.ppo_clip_agent.num_minibatches = 1
ppo.ppo_clip_agent.importance_ratio_clipping = 0.2
ppo.ppo_clip_agent.lambda_value = 0.95
ppo.ppo_clip_agent.discount_factor = 0.99
ppo.ppo_clip_agent.entropy_regularization = 0.0
ppo.ppo_clip_agent.value_pred_loss_coef = 0.5
ppo.ppo_clip_agent.extrinsic_advantage_coef = 1.0
ppo.ppo_clip_agent.normalize_observations = False
ppo.ppo_clip_agent.actor_fc_layers = (8,)
ppo.ppo_clip_agent.value_fc_layers = (8,)
ppo.ppo_clip_agent.activation_fn = @tf.nn.tanh
"""


sweep = benchmark_scripts.load('bsuite_sweep')
# The modules the script imports from next to it: the same objects.
import bsuite_runs  # pylint: disable=g-import-not-at-top,wrong-import-position
import bsuite_scores  # pylint: disable=g-import-not-at-top,wrong-import-position


def run_sweep(*flags, timeout=240):
  return subprocess.run([sys.executable, SCRIPT, *flags], cwd=REPO_ROOT,
                        capture_output=True, text=True, timeout=timeout,
                        check=False)


class TestCase(absltest.TestCase):

  def make_dir(self):
    path = tempfile.mkdtemp(prefix='tfa_explore_test_')
    self.addCleanup(shutil.rmtree, path, ignore_errors=True)
    return path


class ParseIdsTest(TestCase):

  def test_ids_with_or_without_prefix(self):
    self.assertEqual(sweep.parse_ids(['deep_sea/3', 'bsuite/memory_len/0']),
                     ['deep_sea/3', 'memory_len/0'])

  def test_range_is_inclusive_and_ids_come_once_in_order(self):
    self.assertEqual(sweep.parse_ids(['deep_sea/2', 'bsuite/deep_sea/0-3']),
                     ['deep_sea/2', 'deep_sea/0', 'deep_sea/1', 'deep_sea/3'])
    self.assertEqual(sweep.parse_ids([' deep_sea/5-5 ', '']), ['deep_sea/5'])

  def test_experiment_name_is_all_its_settings(self):
    from bsuite import sweep as bsuite_sweep  # pylint: disable=g-import-not-at-top
    self.assertEqual(sweep.parse_ids(['deep_sea']), list(bsuite_sweep.DEEP_SEA))

  def test_bad_ids_name_the_item(self):
    for item, hint in (('deep_sea/21', 'deep_sea has settings 0 to 20'),
                       ('deep_sea/0-21', 'deep_sea has settings 0 to 20'),
                       ('bsuite/deep_sea/x', 'deep_sea has settings 0 to 20'),
                       ('deep_se/1', 'did you mean deep_sea'),
                       ('nope/0', 'experiments: bandit'),
                       ('deep_sea/3-1', 'goes down')):
      with self.subTest(item=item):
        with self.assertRaisesRegex(sweep.UsageError, hint) as raised:
          sweep.parse_ids(['deep_sea/0', item])
        self.assertIn(repr(item), str(raised.exception))

  def test_no_ids(self):
    with self.assertRaisesRegex(sweep.UsageError, 'at least one'):
      sweep.parse_ids(['', ' '])


class FlagsTest(TestCase):

  def test_agents_and_references(self):
    gin_file = os.path.join(self.make_dir(), 'a.gin')
    open(gin_file, 'w').close()
    agents = sweep.parse_agents([f'ours={gin_file}'], ['random', 'dqn'])
    self.assertEqual([(a.name, a.is_reference) for a in agents],
                     [('ours', False), ('random', True), ('dqn', True)])
    self.assertEqual(agents[2].module, 'bsuite.baselines.tf.dqn.run')
    for agent_flags, references, message in (
        (['ours'], [], 'NAME=GIN_FILE'),
        ([f'a/b={gin_file}'], [], 'NAME=GIN_FILE'),
        (['ours=missing.gin'], [], 'no gin file'),
        ([], ['dq'], "reference agents are dqn"),
        ([f'random={gin_file}'], ['random'], "'random' given twice"),
        ([], [], 'at least one')):
      with self.subTest(message=message):
        with self.assertRaisesRegex(sweep.UsageError, message):
          sweep.parse_agents(agent_flags, references)

  def test_num_episodes_within_bsuite_budget(self):
    sweep.check_num_episodes(None, ['deep_sea/0'])
    sweep.check_num_episodes(10_000, ['deep_sea/0'])
    with self.assertRaisesRegex(sweep.UsageError, r'above .* deep_sea'):
      sweep.check_num_episodes(10_001, ['deep_sea/0'])
    with self.assertRaisesRegex(sweep.UsageError, '>= 1'):
      sweep.check_num_episodes(0, ['deep_sea/0'])

  def test_commands(self):
    ours, random = sweep.parse_agents(['ours=x.gin'], ['random'],
                                      check_files=False)
    job = bsuite_runs.make_job(ours, 'deep_sea/3', '/w', 50, ['SEED=1'])
    self.assertEqual(job.run_dir, '/w/ours/deep_sea-3')
    self.assertIn('--root_dir=/w/ours/deep_sea-3', job.command)
    # The sweep's bindings after the user's: they win.
    self.assertEqual(
        [f for f in job.command if f.startswith('--gin_bindings=')],
        ['--gin_bindings=SEED=1',
         "--gin_bindings=BSUITE_ID='bsuite/deep_sea/3'",
         '--gin_bindings=NUM_EPISODES=50'])
    job = bsuite_runs.make_job(random, 'deep_sea/3', '/w', None, ['SEED=1'])
    self.assertEqual(job.command[1:3], ['-m', 'bsuite.baselines.random.run'])
    self.assertIn('--save_path=/w/random/deep_sea-3', job.command)
    self.assertIn('--overwrite=True', job.command)
    self.assertFalse([f for f in job.command if 'num_episodes' in f])


def write_journal(run_dir, outcomes, bsuite_id='deep_sea-0'):
  """A run's bsuite journal: one deep_sea episode per outcome (True: good)."""
  path = os.path.join(run_dir, 'bsuite', 'episodes', f'{bsuite_id}.1.0.0.jsonl')
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, 'w') as f:
    for number, good in enumerate(outcomes):
      f.write(json.dumps({
          'time': float(number), 'length': 10, 'return': float(good),
          'info': {'total_bad_episodes': float(not good),
                   'denoised_return': float(good)}}) + '\n')


# A script for a fake run: writes a deep_sea journal of 200 bad then 100
# good episodes, then waits to be stopped (143 on SIGTERM, as ours).
FAKE_RUN = """
import json, os, signal, sys, time
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
path = os.path.join(sys.argv[1], 'bsuite', 'episodes', 'deep_sea-0.1.0.0.jsonl')
os.makedirs(os.path.dirname(path), exist_ok=True)
with open(path, 'w') as f:
  for number in range(300):
    good = number >= 200
    f.write(json.dumps({'time': float(number), 'length': 10,
                        'return': float(good),
                        'info': {'total_bad_episodes': float(not good),
                                 'denoised_return': float(good)}}) + '\\n')
time.sleep(60)
sys.exit(1)  # never stopped
"""


class StopWhenSolvedTest(TestCase):

  def job(self, run_dir, command=(), bsuite_id='deep_sea/0'):
    ours, = sweep.parse_agents(['ours=x.gin'], [], check_files=False)
    job = bsuite_runs.make_job(ours, bsuite_id, '/w', None, [],
                               stop_when_solved=True)
    job.run_dir = run_dir
    job.command = list(command)
    return job

  def test_solved_at_bsuites_first_logged_episode_below_threshold(self):
    run_dir = self.make_dir()
    job = self.job(run_dir)
    # 200 bad episodes, then good ones: the share of bad ones falls below
    # 0.9 after episode 222; bsuite logs at 200 and 250, not in between.
    write_journal(run_dir, [False] * 200 + [True] * 30)
    self.assertIsNone(bsuite_runs.solved_episode(job, None))
    write_journal(run_dir, [False] * 200 + [True] * 60)
    self.assertEqual(bsuite_runs.solved_episode(job, None), 250)
    # Within a smaller budget only.
    self.assertIsNone(bsuite_runs.solved_episode(job, 240))
    write_journal(run_dir, [False] * 300)
    self.assertIsNone(bsuite_runs.solved_episode(job, None))
    self.assertIsNone(
        bsuite_runs.solved_episode(self.job(self.make_dir()), None))

  def test_deep_sea_stochastic_by_its_own_criterion(self):
    # bsuite's deep_sea_stochastic finder takes no `merge`, skips episodes
    # before 100 and needs a bad share below 0.8: 200 bad episodes then
    # good ones reach 0.8 at episode 250 (not below), 0.67 at 300.
    run_dir = self.make_dir()
    job = self.job(run_dir, bsuite_id='deep_sea_stochastic/0')
    # Before episode 100 its finder has no rows to count: not yet solved.
    write_journal(run_dir, [True] * 60, bsuite_id='deep_sea_stochastic-0')
    self.assertIsNone(bsuite_runs.solved_episode(job, None))
    write_journal(run_dir, [False] * 200 + [True] * 60,
                  bsuite_id='deep_sea_stochastic-0')
    self.assertIsNone(bsuite_runs.solved_episode(job, None))
    write_journal(run_dir, [False] * 200 + [True] * 110,
                  bsuite_id='deep_sea_stochastic-0')
    self.assertEqual(bsuite_runs.solved_episode(job, None), 300)
    self.assertIsNone(bsuite_runs.solved_episode(job, 280))

  def test_only_for_experiments_with_a_solved_criterion(self):
    sweep.check_stop_when_solved(['deep_sea/0', 'deep_sea_stochastic/3'])
    with self.assertRaisesRegex(sweep.UsageError, 'memory_len has no solved'):
      sweep.check_stop_when_solved(['deep_sea/0', 'memory_len/0'])

  def test_settings_name_it_only_when_on(self):
    ours, = sweep.parse_agents(['ours=x.gin'], [], check_files=False)
    self.assertNotIn(
        'stop_when_solved',
        bsuite_runs.make_job(ours, 'deep_sea/0', '/w', None, []).settings)
    self.assertTrue(self.job('/w').settings['stop_when_solved'])

  def test_runner_stops_a_solved_run_and_marks_it_finished(self):
    run_dir = self.make_dir()
    job = self.job(run_dir, [sys.executable, '-c', FAKE_RUN, run_dir])
    poll = bsuite_runs.SOLVED_POLL_SECONDS
    bsuite_runs.SOLVED_POLL_SECONDS = 0.5
    self.addCleanup(setattr, bsuite_runs, 'SOLVED_POLL_SECONDS', poll)
    runner = bsuite_runs.Runner([job], 1)
    runner.run()
    self.assertEqual(runner.failed, [])
    done = bsuite_runs.read_done(run_dir)
    self.assertEqual(done['solved_at_episode'], 250)
    self.assertEqual(done['exit_code'], 143)
    self.assertLess(done['wall_seconds'], 30)


def finish(run_dir):
  """Marks a fake run finished, as the sweep does when a run exits 0."""
  with open(os.path.join(run_dir, 'SWEEP_DONE.json'), 'w') as f:
    json.dump({'exit_code': 0, 'total_wall_seconds': 1.0,
               'total_cpu_seconds': 1.0, 'settings': {}}, f)


class ScoreReportTest(TestCase):
  """scores.md from fake runs' journals: budgets, ids, plots, paths."""

  def setUp(self):
    super().setUp()
    self.root = self.make_dir()
    self.work_dir = os.path.join(self.root, 'work')
    # A gin file outside the checkout (it is never run here).
    self.gin_file = os.path.join(self.root, 'mine', 'ours.gin')
    self.agents = sweep.parse_agents([f'ours={self.gin_file}'], [],
                                     check_files=False)
    # deep_sea/0 and deep_sea_stochastic/0 finished, deep_sea/1 logged
    # and stopped, deep_sea/2 asked and never run.
    for bsuite_id, done in (('deep_sea/0', True), ('deep_sea/1', False),
                            ('deep_sea_stochastic/0', True)):
      run_dir = bsuite_runs.run_dir(self.work_dir, self.agents[0], bsuite_id)
      write_journal(run_dir, [False] * 150 + [True] * 150,
                    bsuite_id.replace('/', '-'))
      if done:
        finish(run_dir)
    self.ids = ['deep_sea/0', 'deep_sea/1', 'deep_sea/2',
                'deep_sea_stochastic/0']

  def score(self, num_episodes):
    out_dir = os.path.join(self.root, f'out{num_episodes}')
    markdown = bsuite_scores.score(self.agents, self.ids, self.work_dir,
                                   out_dir, num_episodes,
                                   'python benchmarks/bsuite_sweep.py')
    with open(os.path.join(out_dir, 'scores.md')) as f:
      self.assertEqual(f.read(), markdown)
    return markdown, out_dir

  def test_ids_budget_plots_and_paths(self):
    markdown, out_dir = self.score(10_000)
    # The ids each score is over: finished and logged, not asked.
    self.assertIn("(deep_sea: 1 finished and 1 unfinished of bsuite's 21; "
                  "deep_sea_stochastic: 1 finished of bsuite's 21)", markdown)
    self.assertIn('| 2/4 (+1 unfinished) |', markdown)
    # bsuite's own budget: no note of a trial.
    self.assertNotIn('Budget:', markdown)
    # deep_sea_stochastic's analysis takes its scaling and regret plots
    # from deep_sea's module; they are drawn too.
    for name in ('deep_sea_stochastic_scaling.png',
                 'deep_sea_stochastic_regret.png',
                 'deep_sea_stochastic_seeds.png', 'deep_sea_scaling.png'):
      self.assertIn(name, markdown)
      self.assertTrue(os.path.isfile(os.path.join(out_dir, name)), name)
    self.assertNotIn('not drawn', markdown)
    # The gin file outside the checkout, relative to here; no path starts
    # at the machine's root.
    self.assertIn(f'`{os.path.relpath(self.gin_file)}`', markdown)
    self.assertNotRegex(markdown, r'[\s`=(]/\w')

  def test_a_smaller_budget_is_noted(self):
    markdown, _ = self.score(300)
    self.assertIn("Budget: --num_episodes=300 episodes per id, below "
                  "bsuite's for deep_sea (10,000), deep_sea_stochastic "
                  "(10,000): a trial, not a bsuite result.", markdown)

  def test_a_plot_that_fails_is_named_with_its_reason(self):
    experiment_plots = bsuite_scores.experiment_plots

    def with_a_broken_one(experiment):
      module, plots = experiment_plots(experiment)

      def broken(df, sweep_vars):
        raise RuntimeError('no data for this\nsecond line')
      return module, plots + [('broken', broken, False)]
    with mock.patch.object(bsuite_scores, 'experiment_plots',
                           with_a_broken_one):
      markdown, _ = self.score(10_000)
    self.assertIn('Plots not drawn: deep_sea_broken.png (RuntimeError: no '
                  'data for this); deep_sea_stochastic_broken.png '
                  '(RuntimeError: no data for this)', markdown)

  def test_score_only_prints_its_own_lines(self):
    out_dir = os.path.join(self.root, 'out')
    result = run_sweep('--score_only', f'--agent=ours={self.gin_file}',
                       f'--bsuite_ids={",".join(self.ids)}',
                       f'--work_dir={self.work_dir}', f'--out_dir={out_dir}')
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    # No TensorFlow or gym start-up lines, on either stream.
    self.assertEqual(result.stderr, '')
    with open(os.path.join(out_dir, 'scores.md')) as f:
      markdown = f.read()
    self.assertEqual(result.stdout, f'\n{markdown}\nWritten to {out_dir}: '
                     'scores.md, scores.csv and the plots.\n')


class RecordedCommandTest(TestCase):

  def test_paths_relative_to_where_it_ran(self):
    command = bsuite_scores.recorded_command(
        ['/home/me/tfa_explore/benchmarks/bsuite_sweep.py',
         '--agent=mine=/home/me/exp/mine.gin', '--reference=dqn',
         '--work_dir', '/home/me/exp/runs', '--out_dir=/home/me/exp/out',
         "--gin_bindings=SEED=1", '--bsuite_ids=deep_sea/0-3'],
        cwd='/home/me/exp')
    self.assertEqual(
        command, 'python ../tfa_explore/benchmarks/bsuite_sweep.py '
        '--agent=mine=mine.gin --reference=dqn --work_dir runs '
        '--out_dir=out --gin_bindings=SEED=1 --bsuite_ids=deep_sea/0-3')
    self.assertEqual(
        bsuite_scores.recorded_command(['benchmarks/bsuite_sweep.py',
                                        '--agent=a=gin/ppo/x.gin'],
                                       cwd=REPO_ROOT),
        'python benchmarks/bsuite_sweep.py --agent=a=gin/ppo/x.gin')


# A fake run that logs 3 episodes, then ends 2 s later.
SLOW_RUN = """
import json, os, sys, time
path = os.path.join(sys.argv[1], 'bsuite', 'episodes', 'deep_sea-0.1.0.0.jsonl')
os.makedirs(os.path.dirname(path), exist_ok=True)
with open(path, 'w') as f:
  for number in range(3):
    f.write(json.dumps({'time': float(number), 'length': 10, 'return': 0.0,
                        'info': {}}) + '\\n')
time.sleep(2)
"""


class ProgressTest(TestCase):

  def test_a_line_per_interval_between_start_and_done(self):
    run_dir = self.make_dir()
    ours, = sweep.parse_agents(['ours=x.gin'], [], check_files=False)
    job = bsuite_runs.make_job(ours, 'deep_sea/0', '/w', 500, [])
    job.run_dir = run_dir
    job.command = [sys.executable, '-c', SLOW_RUN, run_dir]
    interval = bsuite_runs.PROGRESS_SECONDS
    bsuite_runs.PROGRESS_SECONDS = 0.5
    self.addCleanup(setattr, bsuite_runs, 'PROGRESS_SECONDS', interval)
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
      bsuite_runs.Runner([job], 1, num_episodes=500).run()
    lines = output.getvalue().splitlines()
    self.assertTrue(lines[0].startswith('start ours deep_sea/0'), lines)
    self.assertRegex(lines[-1], r'^\[1/1\] done ours deep_sea/0')
    progress = lines[1:-1]
    self.assertGreaterEqual(len(progress), 2, lines)
    for line in progress:
      self.assertRegex(line, r'^progress ours deep_sea/0: episodes [0-3]/500 '
                       r'\(\d%\) after 0:00:0\d$')
    self.assertIn('episodes 3/500 (1%)', progress[-1])

  def test_episodes_logged_of_a_reference_agent_is_its_last_row(self):
    run_dir = self.make_dir()
    random, = sweep.parse_agents([], ['random'], check_files=False)
    job = bsuite_runs.make_job(random, 'deep_sea/0', '/w', None, [])
    job.run_dir = run_dir
    self.assertEqual(bsuite_runs.episodes_logged(job), 0)
    with open(os.path.join(run_dir, 'bsuite_id_-_deep_sea-0.csv'), 'w') as f:
      f.write('steps,episode,total_return\n10,1,0.0\n120,12,0.0\n')
    self.assertEqual(bsuite_runs.episodes_logged(job), 12)


class CommandLineTest(TestCase):

  def test_bad_id_exits_2_with_one_line_and_runs_nothing(self):
    work_dir = os.path.join(self.make_dir(), 'work')
    result = run_sweep('--reference=random',
                       '--bsuite_ids=deep_sea/0,deep_sea/99',
                       f'--work_dir={work_dir}')
    self.assertEqual(result.returncode, 2, result.stderr)
    self.assertEqual(result.stderr.strip().splitlines(), [
        "ERROR: --bsuite_ids: unknown bsuite id 'deep_sea/99': deep_sea "
        'has settings 0 to 20.'])
    self.assertFalse(os.path.exists(work_dir))


@pytest.mark.integration
class SweepTest(TestCase):

  def test_sweep_scores_and_skips_finished_runs(self):
    root = self.make_dir()
    gin_file = os.path.join(root, 'tiny_ppo.gin')
    with open(gin_file, 'w') as f:
      f.write(TINY_PPO_GIN)
    work_dir = os.path.join(root, 'work')
    out_dir = os.path.join(root, 'out')
    flags = (f'--agent=tiny_ppo={gin_file}', '--reference=random',
             '--bsuite_ids=deep_sea/0', '--num_episodes=3',
             f'--work_dir={work_dir}', f'--out_dir={out_dir}')
    first = run_sweep(*flags)
    self.assertEqual(first.returncode, 0, first.stdout + first.stderr[-3000:])
    self.assertIn('start tiny_ppo deep_sea/0', first.stdout)
    self.assertIn('start random deep_sea/0', first.stdout)
    # Only the sweep's own lines: the runs' output is in their logs, and
    # scoring's TensorFlow import prints nothing.
    self.assertEqual(first.stderr, '')
    own_line = re.compile(
        r'(\d+ bsuite ids x \d+ agents; runs in |start |progress |\[\d+/\d+\] '
        r'done |Written to |\||Scores: |ids run: |`\*`|One seed |Command: |'
        r'Commit: |Plots |plot |Budget: |$)')
    self.assertEqual([line for line in first.stdout.splitlines()
                      if not own_line.match(line)], [])

    for agent in ('tiny_ppo', 'random'):
      with open(os.path.join(work_dir, agent, 'deep_sea-0',
                             'SWEEP_DONE.json')) as f:
        done = json.load(f)
      self.assertEqual(done['exit_code'], 0)
      self.assertGreater(done['cpu_seconds'], 0)
      self.assertGreater(done['wall_seconds'], 0)
      self.assertTrue(os.path.isfile(os.path.join(
          work_dir, agent, 'csv', 'bsuite_id_-_deep_sea-0.csv')))

    with open(os.path.join(out_dir, 'scores.csv')) as f:
      rows = {row['agent']: row for row in csv.DictReader(f)}
    self.assertEqual(set(rows), {'tiny_ppo', 'random'})
    for row in rows.values():
      self.assertBetween(float(row['deep_sea']), 0.0, 1.0)
      self.assertEqual(row['ids_done'], '1')
      # Ours stops after the iteration that reached 3 episodes.
      self.assertGreaterEqual(int(row['episodes_min']), 3)
    self.assertEqual(rows['random']['episodes_max'], '3')
    with open(os.path.join(out_dir, 'scores.md')) as f:
      markdown = f.read()
    self.assertIn('| agent | deep_sea | ids run |', markdown)
    self.assertRegex(markdown, r'\| tiny_ppo \| [01]\.\d\d\*? \| 1/1 \|')
    self.assertRegex(markdown, r'\| random \(bsuite\) \| [01]\.\d\d\*? \|')
    self.assertIn('One seed per bsuite id', markdown)
    self.assertIn('--num_episodes=3', markdown)
    self.assertRegex(markdown, r'Commit: [0-9a-f]{7}')
    # bsuite's faceted plots draw (plotnine 0.12 with our matplotlib).
    self.assertTrue(os.path.isfile(
        os.path.join(out_dir, 'bsuite_bar_plot_compare.png')))
    self.assertTrue(os.path.isfile(
        os.path.join(out_dir, 'deep_sea_scaling.png')))
    # deep_sea's seeds plot needs more than 3 episodes: named, with why.
    self.assertIn('Plots not drawn: deep_sea_seeds.png (ValueError: ',
                  markdown)

    second = run_sweep(*flags)
    self.assertEqual(second.returncode, 0,
                     second.stdout + second.stderr[-3000:])
    self.assertIn('skip tiny_ppo deep_sea/0: finished', second.stdout)
    self.assertIn('skip random deep_sea/0: finished', second.stdout)
    self.assertNotIn('start ', second.stdout)
    with open(os.path.join(work_dir, 'tiny_ppo', 'deep_sea-0',
                           'SWEEP_ATTEMPTS.jsonl')) as f:
      self.assertLen(f.readlines(), 1)

  def test_failed_run_is_reported_and_exits_1(self):
    root = self.make_dir()
    gin_file = os.path.join(root, 'broken.gin')
    with open(gin_file, 'w') as f:
      f.write(TINY_PPO_GIN.replace('num_epochs', 'num_epochz'))
    work_dir = os.path.join(root, 'work')
    result = run_sweep(f'--agent=broken={gin_file}', '--bsuite_ids=deep_sea/0',
                       '--num_episodes=3', f'--work_dir={work_dir}')
    self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
    self.assertIn('FAILED broken deep_sea/0: exit code 2', result.stdout)
    # The end of the run's log: train_eval's one ERROR line.
    self.assertIn("doesn't have a parameter named 'num_epochz'",
                  result.stdout)
    self.assertFalse(os.path.exists(os.path.join(
        work_dir, 'broken', 'deep_sea-0', 'SWEEP_DONE.json')))


if __name__ == '__main__':
  absltest.main()
