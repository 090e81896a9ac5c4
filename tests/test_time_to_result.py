"""benchmarks/time_to_result.py's report, and the stock peer's evaluations.

The unit tests read eval event files written here with tf.summary, as the
runs write theirs; the integration tests run stock_recurrent_dqn.py with
evaluations on a budget of a few hundred env steps.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from absl.testing import absltest
import pytest

import benchmark_scripts  # pylint: disable=g-bad-import-order
import tensorflow as tf

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


time_to_result = benchmark_scripts.load('time_to_result')
import common  # pylint: disable=g-import-not-at-top,wrong-import-position


def _make_dir(test):
  path = tempfile.mkdtemp(prefix='tfa_explore_test_')
  test.addCleanup(shutil.rmtree, path, ignore_errors=True)
  return path


class FirstCrossingTest(absltest.TestCase):

  def test_the_first_eval_at_or_above_the_threshold(self):
    evals = [(10_000, 1_000.0, 120.0), (20_000, 1_030.5, 450.0),
             (30_000, 1_061.0, 500.0)]
    # 450 counts (>=); 1030.5 - 1000 = 30.5 s after launch.
    self.assertEqual(time_to_result.first_crossing(evals, 450.0, 1_000.0),
                     (20_000, 30.5))

  def test_not_reached(self):
    evals = [(10_000, 1_000.0, 120.0), (20_000, 1_030.0, 449.9)]
    self.assertIsNone(time_to_result.first_crossing(evals, 450.0, 990.0))
    self.assertIsNone(time_to_result.first_crossing([], 450.0, 990.0))


class RunResultTest(absltest.TestCase):

  def _run_dir(self, returns, seconds_before_launch=100.0):
    """A run dir: its record and eval events {env step: average return}.

    The record's launch time is `seconds_before_launch` before the events
    are written. Returns (run dir, seconds the writing took).
    """
    run_dir = _make_dir(self)
    start = time.time()
    record = {'command': ['x'], 'launched': start - seconds_before_launch,
              'wall_seconds': 250.0, 'cpu_seconds': 400.0, 'exit_code': 0}
    with open(os.path.join(run_dir, time_to_result.RECORD), 'w') as f:
      json.dump(record, f)
    writer = tf.summary.create_file_writer(os.path.join(run_dir, 'eval'))
    with writer.as_default():
      for step, value in returns.items():
        tf.summary.scalar(time_to_result.AVERAGE_RETURN, value, step=step)
        tf.summary.scalar('Metrics/AverageEpisodeLength', 500.0, step=step)
    writer.close()
    return run_dir, time.time() - start

  def test_reached(self):
    run_dir, writing = self._run_dir({10_000: 30.0, 20_000: 470.0,
                                      30_000: 500.0})
    result = time_to_result.run_result(run_dir, 450.0)
    step, seconds = result['reached']
    self.assertEqual(step, 20_000)
    # The event's wall time is when it was written: 100 s after launch,
    # plus at most the time writing took.
    self.assertBetween(seconds, 100.0 - 1e-3, 100.0 + writing + 1e-3)
    self.assertEqual(result['last_eval_step'], 30_000)
    self.assertStartsWith(time_to_result.describe(result, 450.0),
                          '>= 450 at env step 20,000, 10')
    self.assertIn('run 250 s wall, 400 CPU-s',
                  time_to_result.describe(result, 450.0))

  def test_not_reached_names_the_last_eval(self):
    run_dir, _ = self._run_dir({10_000: 30.0, 30_000: 449.0})
    result = time_to_result.run_result(run_dir, 450.0)
    self.assertIsNone(result['reached'])
    self.assertStartsWith(time_to_result.describe(result, 450.0),
                          'not reached by 30,000 env steps; run 250 s wall')

  def test_a_lower_threshold_rereads_the_same_run(self):
    run_dir, _ = self._run_dir({10_000: 30.0, 30_000: 449.0})
    self.assertEqual(
        time_to_result.run_result(run_dir, 25.0)['reached'][0], 10_000)

  def test_no_evals_and_no_record(self):
    run_dir, _ = self._run_dir({})
    result = time_to_result.run_result(run_dir, 450.0)
    self.assertStartsWith(time_to_result.describe(result, 450.0), 'no evals')
    empty = _make_dir(self)
    self.assertIsNone(time_to_result.run_result(empty, 450.0))
    self.assertStartsWith(time_to_result.describe(None, 450.0), 'no record')

  def test_summary_counts_runs_that_reached_it(self):
    reached, _ = self._run_dir({10_000: 500.0})
    missed, _ = self._run_dir({10_000: 10.0})
    results = {'r2d2': [time_to_result.run_result(path, 450.0)
                        for path in (reached, missed)] + [None]}
    (row,) = time_to_result.summary_rows(results)
    self.assertStartsWith(row, '| r2d2 | 1 of 3 | 10')
    self.assertIn('| 10,000 (10,000-10,000) | 250 (250-250) | '
                  '400 (400-400) |', row)
    self.assertEqual(time_to_result.summary_rows({'stock': [None]}),
                     ['| stock | 0 of 1 | - | - | - | - |'])


class CommandsTest(absltest.TestCase):

  def test_both_agents_get_the_seed_cap_and_bindings(self):
    r2d2 = time_to_result.commands('r2d2', '/runs/r2d2_seed1', 'a.gin', 1,
                                   5_000, ['X=2'])
    self.assertEqual(r2d2[-3:], ['--gin_bindings=X=2', '--gin_bindings=SEED=1',
                                 '--gin_bindings=NUM_ENV_STEPS=5000'])
    self.assertIn('--root_dir=/runs/r2d2_seed1', r2d2)
    stock = time_to_result.commands('stock', '/runs/stock_seed1', 'a.gin', 1,
                                    5_000, ['X=2'])
    self.assertEqual(stock[1], time_to_result.STOCK)
    self.assertContainsSubset(
        ['--gin_file=a.gin', '--root_dir=/runs/stock_seed1',
         '--num_env_steps=5000', '--gin_bindings=X=2',
         '--gin_bindings=SEED=1'], stock)


@pytest.mark.integration
class StockEvaluationTest(absltest.TestCase):
  """stock_recurrent_dqn.py evaluates with --root_dir, R2D2's way."""

  # Evals every iteration of 16 envs x 8 steps; learning in the third,
  # when each env holds a sequence (24 steps) and 48 x 8 env steps are in.
  BINDINGS = ('r2d2.Settings.eval_interval=128',
              'r2d2.Settings.num_eval_episodes=2',
              'r2d2.Settings.min_size_to_sample=48')

  def _run(self, root_dir, *extra):
    command = [sys.executable, time_to_result.STOCK, f'--root_dir={root_dir}',
               '--num_env_steps=384', '--log_interval=128', '--tf_threads=1',
               *extra] + [f'--gin_bindings={b}' for b in self.BINDINGS]
    process = subprocess.run(command, cwd=REPO_ROOT, capture_output=True,
                             text=True, timeout=300, check=False)
    self.assertEqual(process.returncode, 0, process.stderr[-3000:])
    returns = common.read_scalars(os.path.join(root_dir, 'eval'))[
        time_to_result.AVERAGE_RETURN]
    return process.stdout, [step for step, _, _ in returns]

  def test_evals_at_each_interval_and_progress_lines_unchanged(self):
    stdout, steps = self._run(_make_dir(self))
    self.assertEqual(steps, [128, 256, 384])
    # benchmarks/r2d2_throughput.py reads these lines.
    self.assertEqual(re.findall(r'env steps ([\d,]+)/384 \| [\d,]+ env '
                                r'steps/s \| learner steps (\d+)', stdout),
                     [('128', '0'), ('256', '0'), ('384', '16')])

  def test_stop_return_ends_the_run_at_the_first_eval_reaching_it(self):
    _, steps = self._run(_make_dir(self), '--stop_return=0')
    self.assertEqual(steps, [128])


if __name__ == '__main__':
  absltest.main()
