"""benchmarks/distributed_throughput.py: the projection's arithmetic, the
figures of a run's window, the table (seconds); one tiny measurement of
MountainCar, marked integration."""

import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from unittest import mock

from absl.testing import absltest
import pytest

import benchmark_scripts  # pylint: disable=g-bad-import-order

throughput = benchmark_scripts.load('distributed_throughput')
import common  # pylint: disable=g-import-not-at-top,wrong-import-position

REPO_ROOT = benchmark_scripts.REPO_ROOT
SCRIPT = os.path.join(REPO_ROOT, 'benchmarks', 'distributed_throughput.py')

# c = 2 CPU-ms per agent step of an actor's own; the learner busy 4.096 s
# on a batch of 1,024 agent steps: l = 4 ms per agent step; 4 envs per
# actor, 128 steps each.
INPUTS = throughput.ProjectionInputs(
    actor_cpu_seconds_per_step=0.002, learner_seconds_per_batch=4.096,
    batch_agent_steps=1024, envs_per_actor=4, rollout_length=128)


class ProjectionTest(absltest.TestCase):

  def test_cpu_learner_binds(self):
    p = throughput.project(INPUTS, 8)
    # c / N = 0.002 / 8 = 0.00025 s; + l = 0.004 -> 0.00425 s an agent step.
    self.assertAlmostEqual(p.agent_steps_per_second, 1 / 0.00425)  # 235.3
    self.assertEqual(p.batch_agent_steps, 8 * 4 * 128)  # 4,096
    self.assertAlmostEqual(p.iteration_seconds, 4096 * 0.00425)  # 17.408
    self.assertAlmostEqual(p.actors_ceiling, 8 / 0.002)  # 4,000
    self.assertAlmostEqual(p.learner_ceiling, 1 / 0.004)  # 250
    self.assertAlmostEqual(p.actors_share, 0.00025 / 0.00425)  # 6%
    self.assertEqual(p.binds, 'learner')
    # 400M agent steps at 235.3/s: 4e8 * 0.00425 / 3600 = 472.2 h.
    self.assertAlmostEqual(p.hours_to_budget, 4e8 * 0.00425 / 3600)

  def test_accelerator_learner_leaves_the_actors_binding(self):
    p = throughput.project(INPUTS, 8, speedup=64)
    # l' = 0.004 / 64 = 0.0000625 s; c / N = 0.00025 s: 0.0003125 an agent
    # step, 3,200 agent steps/s; the actors take 0.00025 / 0.0003125 = 80%.
    self.assertAlmostEqual(p.agent_steps_per_second, 3200)
    self.assertAlmostEqual(p.learner_ceiling, 16000)
    self.assertAlmostEqual(p.actors_share, 0.8)
    self.assertEqual(p.binds, 'actors')
    self.assertAlmostEqual(p.hours_to_budget, 4e8 / 3200 / 3600)  # 34.7
    # More actor cores: c / N = 0.002 / 128 = 0.000015625 < l'.
    self.assertEqual(throughput.project(INPUTS, 128, speedup=64).binds,
                     'learner')

  def test_projection_table(self):
    lines = throughput.projection_table(INPUTS, [8, 32], 64, 400_000_000,
                                        'test runs')
    text = '\n'.join(lines)
    self.assertIn('c = 2;', text)
    self.assertIn('l = 4 ms per agent step', text)
    self.assertIn('| CPU learner as measured | 8 | 4,096 | 17.4 | 235 | '
                  '4,000 | 250 | 6% | learner | 472 h (19.7 days) |', text)
    self.assertIn('| accelerator learner, 64x the CPU learner | 8 | 4,096 | '
                  '1.3 | 3,200 | 4,000 | 16,000 | 80% | actors | 35 h (1.4 '
                  'days) |', text)
    # Without a speed-up: the CPU learner's rows only.
    self.assertNotIn('accelerator', '\n'.join(throughput.projection_table(
        INPUTS, [8], None, 400_000_000, 'test runs')))


def temp_dir(test):
  path = tempfile.mkdtemp(prefix='distributed_throughput_')
  test.addCleanup(shutil.rmtree, path, ignore_errors=True)
  return path


def mark(steps, line, learner, actors, other, wall):
  """A `common.progress_marks` mark with a `role_cpu_seconds` sample."""
  return (steps, line, {'learner': learner, 'actors': actors, 'other': other},
          wall)


def fake_run(config, repeat, steps_per_second, actor_ms, busy, wait):
  figures = throughput.window_figures(
      mark(1000, 2, 10.0, {'11': 1.0, '12': 1.0}, 0.5, 100.0),
      mark(1000 + 2048, 4, 18.0,
           {'11': 1.0 + actor_ms, '12': 1.0 + actor_ms}, 0.5,
           100.0 + 2048 / steps_per_second), 2, [wait, wait], 2)
  figures.update(task='montezuma', config=config, repeat=repeat,
                 num_actors=2, startup_seconds=60.0, load_before=1.0,
                 load_after=2.0)
  figures['learner_busy_seconds_per_iteration'] = busy
  return figures


class WindowFiguresTest(absltest.TestCase):

  def test_figures_by_role(self):
    # 2 iterations of 1,024 agent steps in 8 s; 2 actors of 1.024 CPU-s
    # each, the learner 8 CPU-s, other processes 0.2.
    figures = throughput.window_figures(
        mark(3072, 3, 20.0, {'7': 2.0, '9': 3.0}, 1.0, 50.0),
        mark(5120, 5, 28.0, {'7': 3.024, '9': 4.024}, 1.2, 58.0),
        2, [1.5, 2.5], 2)
    self.assertEqual(figures['agent_steps'], 2048)
    self.assertEqual(figures['batch_agent_steps'], 1024)
    self.assertAlmostEqual(figures['agent_steps_per_second'], 256)
    cpu_ms = figures['cpu_ms_per_agent_step']
    # (8 + 2 x 1.024 + 0.2) CPU-s / 2,048 agent steps = 5.0 ms.
    self.assertAlmostEqual(cpu_ms['total'], 1000 * 10.248 / 2048)
    self.assertAlmostEqual(cpu_ms['learner'], 1000 * 8 / 2048)  # 3.9
    # Each actor collected 1,024 of the steps: 1.024 CPU-s / 1,024 = 1 ms.
    self.assertEqual(len(cpu_ms['actors']), 2)
    for value in cpu_ms['actors']:
      self.assertAlmostEqual(value, 1.0)
    self.assertAlmostEqual(figures['iteration_seconds'], 4.0)
    self.assertAlmostEqual(figures['learner_wait_seconds_per_iteration'], 2.0)
    # 4 s an iteration, 2 of them waiting for rollouts.
    self.assertAlmostEqual(figures['learner_busy_seconds_per_iteration'], 2.0)
    self.assertAlmostEqual(figures['learner_cpu_seconds_per_iteration'], 4.0)
    self.assertFalse(figures['actors_restarted'])

  def test_one_process_loop_has_no_wait(self):
    figures = throughput.window_figures(
        mark(0, 1, 0.0, {}, 0.0, 0.0), mark(1024, 2, 4.0, {}, 0.0, 4.0),
        1, [], 0)
    self.assertNotIn('learner_busy_seconds_per_iteration', figures)
    self.assertEqual(figures['cpu_ms_per_agent_step']['actors'], [])

  def test_an_actor_restarted_in_the_window_is_left_out(self):
    figures = throughput.window_figures(
        mark(0, 1, 0.0, {'7': 1.0, '9': 1.0}, 0.0, 0.0),
        mark(1024, 2, 4.0, {'7': 2.0, '10': 0.5}, 0.0, 4.0), 1, [1.0], 2)
    self.assertLen(figures['cpu_ms_per_agent_step']['actors'], 1)
    self.assertTrue(figures['actors_restarted'])

  def test_roles_from_command_lines(self):
    processes = [
        (100, 'python train/train_eval.py --root_dir=x', 10.0),
        (101, 'python -I -S -c <filter>', 0.1),
        (102, 'python -c from multiprocessing.spawn import spawn_main; '
              'spawn_main(tracker_fd=5) --multiprocessing-fork', 3.0),
        (103, 'python -c from multiprocessing.resource_tracker import main',
         0.2),
        (104, 'python -c from multiprocessing.spawn import spawn_main; '
              'spawn_main(tracker_fd=5) --multiprocessing-fork', 4.0)]
    with mock.patch.object(common, 'process_cpu_seconds',
                           return_value=processes):
      roles = throughput.role_cpu_seconds(100)
    self.assertEqual(roles['learner'], 10.0)
    self.assertEqual(roles['actors'], {'102': 3.0, '104': 4.0})
    self.assertAlmostEqual(roles['other'], 0.3)

  def test_bindings_of_each_configuration(self):
    single = throughput.bindings('single')
    self.assertIn('warm_up_observation_normalizer.num_steps = 64', single)
    self.assertIn('on_policy.Settings.log_interval = 1', single)
    self.assertFalse([b for b in single if 'Distributed' in b])
    two = throughput.bindings('2actors', ['SEED=1'])
    self.assertIn('on_policy.Distributed.num_actors = 2', two)
    self.assertIn("on_policy.Distributed.actor_mode = 'process'", two)
    self.assertEqual(two[-1], 'SEED=1')
    self.assertIn('on_policy.Distributed.num_actors = 1',
                  throughput.bindings('1actor'))

  def test_budget_is_the_montezuma_files(self):
    with open(os.path.join(REPO_ROOT, 'gin/ppo/montezuma.gin')) as f:
      self.assertIn(f'NUM_ENV_STEPS = {throughput.BUDGET}', f.read())


class TableTest(absltest.TestCase):

  def test_medians_and_the_model_check(self):
    # Steps/s 200, 100, 300 over the repeats: the median 200.
    runs = [fake_run('2actors', 0, 200.0, 1.024, 4.0, 1.0),
            fake_run('2actors', 1, 100.0, 2.048, 6.0, 1.0),
            fake_run('2actors', 2, 300.0, 1.024, 5.0, 1.0)]
    text = '\n'.join(throughput.table('montezuma', runs))
    self.assertIn('| 2actors | 3 | 200 |', text)
    # Actors: 1, 2 and 1 ms per agent step of their own: the median 1.
    self.assertIn('| 3.91 | 1 / 1 | 0 | 5.00 |', text)
    # The slowest actor's 1 ms x 512 steps + the learner's 5 s.
    self.assertIn('0.51 + learner busy 5.00 = 5.51 s per iteration; '
                  'measured 5.12 s', text)
    self.assertIn('| 1.0 -> 2.0 |', text)
    inputs = throughput.projection_inputs(runs, 'montezuma', '2actors', 128)
    self.assertAlmostEqual(inputs.actor_cpu_seconds_per_step, 0.001)
    self.assertAlmostEqual(inputs.learner_seconds_per_batch, 5.0)
    self.assertEqual(inputs.batch_agent_steps, 1024)
    self.assertEqual(inputs.envs_per_actor, 4)  # 1,024 / 128 / 2 actors

  def test_project_mode_reads_a_file_of_runs(self):
    path = os.path.join(temp_dir(self), 'runs.jsonl')
    with open(path, 'w') as f:
      for repeat in range(2):
        f.write(json.dumps(fake_run('2actors', repeat, 200.0, 1.024, 4.0,
                                    1.0)) + '\n')
    with mock.patch('sys.stdout', new_callable=io.StringIO) as out:
      throughput.main([f'--project={path}', '--accelerator_speedup=10',
                       '--actor_cores=8'])
    text = out.getvalue()
    self.assertIn('| 2actors | 2 | 200 |', text)
    self.assertIn('| CPU learner as measured | 8 | 4,096 |', text)
    self.assertIn('| accelerator learner, 10x the CPU learner | 8 |', text)


class ProgressMarksTest(absltest.TestCase):

  def test_marks_at_lines_then_stopped(self):
    # A loop printing a progress line every 0.1 s, forever.
    program = ('import time\nfor i in range(1, 10**6):\n'
               '  print(f"env steps {i * 1000:,}/1,000,000 | x", flush=True)\n'
               '  time.sleep(0.1)\n')
    log = os.path.join(temp_dir(self), 'log')
    marks = common.progress_marks([sys.executable, '-c', program], log,
                                  (2, 4), 60, lambda pid: pid,
                                  count_lines=True)
    self.assertEqual([(steps, line) for steps, line, _, _ in marks],
                     [(2000, 2), (4000, 4)])
    self.assertGreater(marks[1][3], marks[0][3])
    # Env-step thresholds: the first line at or past each.
    marks = common.progress_marks([sys.executable, '-c', program], log,
                                  (1500,), 60, lambda pid: None)
    self.assertEqual(marks[0][:2], (2000, 2))


@pytest.mark.integration
class MeasurementTest(absltest.TestCase):
  """A tiny measurement of MountainCar: one process and 2 actors."""

  def test_tiny_measurement(self):
    output_dir = temp_dir(self)
    out = os.path.join(output_dir, 'table.md')
    result = subprocess.run(
        [sys.executable, SCRIPT, f'--output_dir={output_dir}', f'--out={out}',
         '--tasks=mountaincar', '--configs=single,2actors', '--repeats=1',
         '--warmup=1', '--iterations=1'],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
        check=False)
    self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
    with open(out) as f:
      text = f.read()
    self.assertIn('| single | 1 |', text)
    self.assertIn('| 2actors | 1 |', text)
    self.assertIn('model check, 2actors', text)
    self.assertIn('| CPU learner as measured | 128 |', text)
    runs = common.read_json_lines(os.path.join(output_dir, 'table.jsonl'))
    self.assertEqual([run['config'] for run in runs], ['single', '2actors'])
    self.assertLen(runs[1]['cpu_ms_per_agent_step']['actors'], 2)
    self.assertGreater(runs[1]['learner_wait_seconds_per_iteration'], 0)
    self.assertGreater(runs[1]['cpu_seconds']['learner'], 0)


if __name__ == '__main__':
  absltest.main()
