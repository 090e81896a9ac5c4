"""benchmarks/distributed_learning.py: its runs, records, readers and table.

Unit tests on fake event files and records (seconds); one whole
comparison on a tiny budget, marked integration.
"""

import json
import os
import re
import subprocess
import sys

from absl.testing import absltest
import gin
import pytest
import tensorflow as tf

import benchmark_scripts  # pylint: disable=g-bad-import-order

from tfa_explore import config

learning = benchmark_scripts.load('distributed_learning')
import bsuite_runs  # pylint: disable=g-import-not-at-top,wrong-import-position

REPO_ROOT = benchmark_scripts.REPO_ROOT
SCRIPT = os.path.join(REPO_ROOT, 'benchmarks', 'distributed_learning.py')


class TestCase(tf.test.TestCase):

  def make_dir(self):
    return self.get_temp_dir()


def write_scalars(directory, tag, points):
  writer = tf.summary.create_file_writer(directory)
  with writer.as_default():
    for step, value in points:
      tf.summary.scalar(tag, value, step=step)
  writer.close()


def write_run(directory, terminated, evals, wall, cpu, finished=True):
  """A run's TensorBoard logs and its attempt record, as train() writes."""
  write_scalars(os.path.join(directory, 'train'),
                'Metrics/TerminatedEpisodes', terminated)
  write_scalars(os.path.join(directory, 'eval'), 'Metrics/AverageReturn',
                evals)
  attempt = {'exit_code': 0 if finished else 130, 'wall_seconds': wall,
             'cpu_seconds': cpu}
  with open(os.path.join(directory, bsuite_runs.ATTEMPTS_FILE), 'a') as f:
    f.write(json.dumps(attempt) + '\n')
  if finished:
    with open(os.path.join(directory, bsuite_runs.DONE_FILE), 'w') as f:
      json.dump(attempt, f)


def write_machine_log(output_dir, label, start_load, end_load):
  with open(os.path.join(output_dir, learning.MACHINE_LOG), 'a') as f:
    for event, load in (('start', start_load), ('end', end_load)):
      f.write(json.dumps({'event': event, 'label': label, 'cpu': 'Some CPU',
                          'load': [load, 1.0, 1.0]}) + '\n')


class RunsTest(TestCase):

  def test_commands_of_both_variants(self):
    single = learning.make_run('/out', 'cartpole', 'single', 3,
                               ['NUM_ENV_STEPS=4096'])
    distributed = learning.make_run('/out', 'cartpole', '2actors', 3,
                                    ['NUM_ENV_STEPS=4096'])
    self.assertEqual(single.run_dir, '/out/cartpole/single/seed3')
    self.assertEqual(single.settings, {
        'gin_file': 'gin/ppo/cartpole.gin',
        'bindings': ['SEED=3', 'NUM_ENV_STEPS=4096']})
    # The same file with the 2-actor lines, the seed and the extras after.
    self.assertEqual(distributed.settings['gin_file'], 'gin/ppo/cartpole.gin')
    self.assertEqual(distributed.settings['bindings'],
                     list(learning.DISTRIBUTED_BINDINGS) +
                     ['SEED=3', 'NUM_ENV_STEPS=4096'])
    self.assertIn('--gin_bindings=on_policy.Distributed.num_actors = 2',
                  distributed.command)
    mountaincar = learning.make_run('/out', 'mountaincar', '2actors', 0, [])
    self.assertEqual(mountaincar.settings, {
        'gin_file': 'gin/rnd_ppo/mountaincar_distributed.gin',
        'bindings': ['SEED=0']})

  def test_sweep_runs_are_those_bsuite_sweep_makes(self):
    command = learning.sweep_command('/out', 2, ['deep_sea/0', 'deep_sea/1'],
                                     1000, 1, ['X=1'])
    self.assertIn('--work_dir=/out/deep_sea/seed2', command)
    self.assertIn('--gin_bindings=SEED=2', command)
    jobs = learning.sweep_jobs('/out', 2, ['deep_sea/0', 'deep_sea/1'], 1000,
                               ['X=1'])
    # Id by id, one agent then the other: interleaved as the pairs are.
    self.assertEqual([job.label for job in jobs],
                     ['rnd_ppo deep_sea/0', 'rnd_ppo_2actors deep_sea/0',
                      'rnd_ppo deep_sea/1', 'rnd_ppo_2actors deep_sea/1'])
    self.assertEqual(jobs[1].run_dir,
                     '/out/deep_sea/seed2/rnd_ppo_2actors/deep_sea-0')
    self.assertEqual(jobs[1].settings['bindings'],
                     ['SEED=2', 'X=1', "BSUITE_ID='bsuite/deep_sea/0'",
                      'NUM_EPISODES=1000'])

  def test_a_finished_run_with_other_settings_is_named(self):
    output_dir = self.make_dir()
    run = learning.make_run(output_dir, 'cartpole', 'single', 0, [])
    os.makedirs(run.run_dir)
    with open(os.path.join(run.run_dir, bsuite_runs.DONE_FILE), 'w') as f:
      json.dump({'settings': run.settings}, f)
    self.assertEqual(learning.changed_settings([run]), [])
    other = learning.make_run(output_dir, 'cartpole', 'single', 0,
                              ['NUM_ENV_STEPS=4096'])
    changed = learning.changed_settings([other])
    self.assertLen(changed, 1)
    self.assertStartsWith(changed[0], 'cartpole/single/seed0 (was ')

  def test_train_records_the_cpu_of_children_it_waited_for(self):
    # The run (a python) waits for a child that burns ~0.3 CPU-s: the
    # run's rusage has it, as train_eval's has its actor processes'.
    output_dir = self.make_dir()
    burn = ('import time\nend = time.process_time() + 0.3\n'
            'while time.process_time() < end: pass')
    run = learning.Run('fake/single/seed0', os.path.join(output_dir, 'run'),
                       [sys.executable, '-c',
                        'import subprocess, sys; subprocess.run('
                        f'[sys.executable, "-c", {burn!r}], check=True); '
                        'print("ran")'],
                       {'bindings': []})
    label, code, wall, cpu = learning.train(run, output_dir)
    self.assertEqual((label, code), ('fake/single/seed0', 0))
    self.assertGreaterEqual(cpu, 0.3)
    self.assertGreaterEqual(wall, 0.3)
    attempts = bsuite_runs.read_attempts(run.run_dir)
    self.assertLen(attempts, 1)
    self.assertEqual(attempts[0]['cpu_seconds'], round(cpu, 3))
    self.assertEqual(bsuite_runs.read_done(run.run_dir)['attempts'], 1)
    with open(os.path.join(run.run_dir, learning.RUN_LOG)) as f:
      self.assertIn('ran\n', f.read())
    events = [(line['event'], line['label'])
              for line in learning.read_machine_log(output_dir)]
    self.assertEqual(events, [('start', 'fake/single/seed0'),
                              ('end', 'fake/single/seed0')])
    # Finished: not run again.
    self.assertEqual(learning.train(run, output_dir)[1:], (0, None, None))
    self.assertLen(bsuite_runs.read_attempts(run.run_dir), 1)

  def test_a_failed_run_is_not_done(self):
    output_dir = self.make_dir()
    run = learning.Run('fake/single/seed0', os.path.join(output_dir, 'run'),
                       [sys.executable, '-c', 'raise SystemExit(3)'], {})
    self.assertEqual(learning.train(run, output_dir)[1], 3)
    self.assertIsNone(bsuite_runs.read_done(run.run_dir))
    self.assertEqual(bsuite_runs.read_attempts(run.run_dir)[0]['exit_code'],
                     3)


class TableTest(TestCase):

  def test_spread_counts_the_seeds_inside_the_single_range(self):
    self.assertEqual(
        learning.spread('return', [-120.0, -100.0, -140.0],
                        [-130.0, -90.0, -100.0]),
        '* return: single -140.0 to -100.0 (median -120.0), 2 actors '
        '-130.0 to -90.0 (median -100.0); 2-actor seeds inside the '
        'single-process range: 2/3.')
    self.assertIn('not enough runs', learning.spread('x', [], [1.0]))

  def test_loads_of_a_label(self):
    log = [{'event': 'start', 'label': 'a', 'load': [6.04, 0, 0]},
           {'event': 'start', 'label': 'b', 'load': [7.0, 0, 0]},
           {'event': 'end', 'label': 'a', 'load': [8.0, 0, 0]}]
    self.assertEqual(learning.loads(log, 'a'), '6.0 -> 8.0')
    self.assertEqual(learning.loads(log, 'b'), '7.0 -> ?')
    self.assertEqual(learning.loads(log, 'c'), '-')

  def test_report_of_fake_runs(self):
    output_dir = self.make_dir()
    seeds = (0, 1)
    # mountaincar: the flag at 24,576 (seed 0 single), 30,720 (seed 0 with
    # 2 actors), never at seed 1 single; the last eval is the final return.
    flags = {('single', 0): 24_576, ('2actors', 0): 30_720,
             ('single', 1): None, ('2actors', 1): 40_960}
    for (variant, seed), flag in flags.items():
      directory = learning.run_dir(output_dir, 'mountaincar', variant, seed)
      terminated = [(step, 0.0 if flag is None or step < flag else 1.0)
                    for step in (20_480, 24_576, 30_720, 40_960, 100_000)]
      write_run(directory, terminated,
                [(51_200, -200.0), (100_000, -110.0 - 10 * seed -
                                    (5 if variant == '2actors' else 0))],
                wall=100.0 + seed, cpu=80.0 + seed,
                finished=(variant, seed) != ('2actors', 1))
      write_machine_log(output_dir, f'mountaincar/{variant}/seed{seed}', 6.0,
                        7.5)
    # cartpole: greedy eval >= 475 first at 40,960 / 61,440 (seed 0), never
    # at seed 1 with 2 actors.
    for variant, seed, evals in (
        ('single', 0, [(20_480, 300.0), (40_960, 500.0), (200_000, 500.0)]),
        ('2actors', 0, [(20_480, 200.0), (61_440, 475.0), (200_000, 490.0)]),
        ('single', 1, [(20_480, 300.0), (40_960, 480.0), (200_000, 499.0)]),
        ('2actors', 1, [(20_480, 100.0), (200_000, 300.0)])):
      write_run(learning.run_dir(output_dir, 'cartpole', variant, seed),
                [(200_000, 0.0)], evals, wall=50.0, cpu=40.0)

    text = learning.report(output_dir, ['mountaincar', 'cartpole'], seeds, [],
                           1000, ['NUM_ENV_STEPS=100000'], 'python x.py')
    self.assertIn('CPU: Some CPU.', text)
    self.assertIn('Load average (1 min) over the runs: 6.0 to 7.5.', text)
    self.assertIn('Extra bindings: NUM_ENV_STEPS=100000.', text)
    self.assertIn('| 0 | single | 100,000 | 24,576 | -110.0 | 100 | 80 | 0.80 '
                  '| 6.0 -> 7.5 |', text)
    self.assertIn('| 1 | single | 100,000 | never | -120.0 | 101 | 81 | 0.80 '
                  '|', text)
    self.assertIn('| 1 | 2actors | 100,000 (unfinished) | 40,960 | -125.0 |',
                  text)
    self.assertIn('* single: flag first reached in training on 1/2 seeds '
                  '(env steps 24,576 to 24,576).', text)
    self.assertIn('* 2actors: flag first reached in training on 2/2 seeds '
                  '(env steps 30,720 to 40,960).', text)
    # Final returns: single -120 to -110; 2 actors -115 (inside), -125.
    self.assertIn('2 actors -125.0 to -115.0 (median -120.0); 2-actor seeds '
                  'inside the single-process range: 1/2.', text)
    self.assertIn('* totals: single 201 s wall, 161 CPU-s; 2actors 201 s '
                  'wall, 161 CPU-s.', text)
    self.assertIn('| 0 | 2actors | 200,000 | 61,440 | 490.0 | 50 | 40 | 0.80 '
                  '| - |', text)
    self.assertIn('| 1 | 2actors | 200,000 | never | 300.0 |', text)
    self.assertIn('* 2actors: first greedy eval >= 475 on 1/2 seeds (env '
                  'steps 61,440 to 61,440).', text)
    self.assertIn('Command: `python x.py`', text)
    self.assertIn('budget set by the extra bindings', text)

  def test_deep_sea_table(self):
    def summary(solved, wall, cpu, finished=True):
      return dict(solved=solved, wall=wall, cpu=cpu, finished=finished)

    ids = ['deep_sea/0', 'deep_sea/1']  # sizes 10 and 12
    summaries = {
        0: {'rnd_ppo': summary({'deep_sea/0': 368, 'deep_sea/1': None},
                               60.0, 50.0),
            'rnd_ppo_2actors': summary({'deep_sea/0': 400, 'deep_sea/1': 579},
                                       120.0, 90.0)},
        1: {'rnd_ppo': summary({'deep_sea/0': 127, 'deep_sea/1': 504},
                               60.0, 50.0),
            'rnd_ppo_2actors': summary({'deep_sea/0': None,
                                        'deep_sea/1': None}, 120.0, 90.0,
                                       finished=False)}}
    log = [{'event': 'start', 'label': 'deep_sea/seed0', 'load': [5, 0, 0]},
           {'event': 'end', 'label': 'deep_sea/seed0', 'load': [6, 0, 0]}]
    text = '\n'.join(learning.deep_sea_table(summaries, [0, 1], ids, 1000,
                                             log))
    self.assertIn('deep_sea sizes 10-12 (deep_sea/0,deep_sea/1), 1,000 '
                  'episodes an id, seeds 0,1', text)
    self.assertIn('| 0 | single | 0.50 | 10: 368, 12: never | 60 | 50 | 0.83 '
                  '| 5.0 -> 6.0 |', text)
    self.assertIn('| 0 | 2actors | 1.00 | 10: 400, 12: 579 | 120 | 90 | 0.75 '
                  '| 5.0 -> 6.0 |', text)
    self.assertIn('| 1 | 2actors | 0.00 (unfinished) | 10: never, 12: never |',
                  text)
    # Scores: single 0.5 and 1.0; 2 actors 1.0 (inside) and 0.0.
    self.assertIn('2-actor seeds inside the single-process range: 1/2.', text)


class BudgetsTest(TestCase):
  """TASKS' budgets are the gin files'; the actors can share the envs."""

  def tearDown(self):
    gin.clear_config()
    super().tearDown()

  def test_budgets_and_env_shares(self):
    for name, task in learning.TASKS.items():
      with self.subTest(task=name):
        config.parse_gin([os.path.join(REPO_ROOT, task.gin_file)], [])
        self.assertEqual(gin.query_parameter('%NUM_ENV_STEPS'), task.budget)
        gin.clear_config()
        config.parse_gin(
            [os.path.join(REPO_ROOT, task.distributed_gin_file)],
            list(task.distributed_bindings))
        self.assertEqual(
            gin.query_parameter('on_policy.Distributed.num_actors'), 2)
        self.assertEqual(
            gin.query_parameter('on_policy.Distributed.actor_mode'),
            'process')
        self.assertEqual(
            gin.query_parameter('on_policy.Settings.num_envs') % 2, 0)
        gin.clear_config()

  def test_distributed_bindings_are_those_of_the_distributed_file(self):
    with open(os.path.join(
        REPO_ROOT, 'gin', 'rnd_ppo', 'mountaincar_distributed.gin')) as f:
      lines = [line.split('#')[0].strip() for line in f]
    for binding in learning.DISTRIBUTED_BINDINGS:
      self.assertIn(binding, [' '.join(line.split()) for line in lines])


@pytest.mark.integration
class ComparisonTest(TestCase):
  """The whole comparison on a tiny budget: runs, records, the table."""

  def test_tiny_comparison(self):
    output_dir = self.make_dir()
    out = os.path.join(output_dir, 'table.md')
    command = [sys.executable, SCRIPT, f'--output_dir={output_dir}',
               f'--out={out}', '--tasks=cartpole,deep_sea', '--seeds=0',
               '--bsuite_ids=deep_sea/0', '--num_episodes=8',
               '--gin_bindings=NUM_ENV_STEPS=1024']
    result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=600, check=False)
    self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
    with open(out) as f:
      text = f.read()
    # A row per variant in each of the two tables.
    self.assertLen(re.findall(r'^\| 0 \| single \|', text, re.MULTILINE), 2)
    self.assertLen(re.findall(r'^\| 0 \| 2actors \|', text, re.MULTILINE), 2)
    self.assertIn('bsuite deep_sea size 10 (deep_sea/0)', text)
    for variant in learning.VARIANTS:
      done = bsuite_runs.read_done(
          learning.run_dir(output_dir, 'cartpole', variant, 0))
      self.assertGreater(done['cpu_seconds'], 0)
    # Finished runs are skipped; the table is read again.
    again = subprocess.run(command, cwd=REPO_ROOT, capture_output=True,
                           text=True, timeout=300, check=False)
    self.assertEqual(again.returncode, 0, again.stdout + again.stderr)
    self.assertIn('cartpole/2actors/seed0: finished earlier, skipped',
                  again.stdout)
    with open(os.path.join(output_dir, 'deep_sea', 'seed0',
                           'sweeps.log')) as f:
      self.assertIn('skip rnd_ppo_2actors deep_sea/0: finished', f.read())


if __name__ == '__main__':
  absltest.main()
