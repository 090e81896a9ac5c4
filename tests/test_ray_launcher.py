"""The R2D2 roles as Ray actors on a local Ray cluster (loopback).

The shared Ray launcher's resource check (without Ray), port pick and
role prefixes. Slow: a local cluster, the replay
server, the learner and 2 actors as Ray actors on the tiny Counting-v0
config; one actor process is SIGKILLed and Ray restarts it (counted in
`Actors/restarts`); the run reaches its budget and the roles' logs hold
our progress lines.
"""

import glob
import io
import os
import tempfile
import time
from unittest import mock

import portpicker
import pytest
import ray
from ray._private import worker as ray_worker  # how the driver prints

from absl.testing import absltest

from tfa_explore import config
from tfa_explore import errors
from tfa_explore.experiments.distributed import ray_launch
from tfa_explore.experiments.distributed import ray_resources
from tfa_explore.experiments.r2d2 import ray_launcher
from tfa_explore.testing import faults

import run_helpers
import test_r2d2_experiment as r2d2_tests  # the tiny gin file


class CheckResourcesTest(absltest.TestCase):

  class _Settings:
    num_actors = 16

    def setting(self, name):
      return f'r2d2.Settings.{name}'

  def _check(self, cluster, head, **requests):
    resources = ray_launcher.RayResources(**requests)
    ray_resources.check_resources(self._Settings(), resources, cluster,
                                  head)

  def test_a_cluster_that_holds_every_role_passes(self):
    self._check({'CPU': 18.0}, {'CPU': 2.0})
    self._check({'CPU': 2.0}, {'CPU': 2.0}, actor_num_cpus=0.1,
                replay_server_num_cpus=0.2, learner_num_cpus=0.2)

  def test_too_few_cpus_for_the_actors(self):
    with self.assertRaisesRegex(
        errors.ConfigError, r'The Ray cluster has 2 CPUs; this run needs 18 '
        r'\(replay server 1 \+ learner 1 \+ 16 actors x 1\).*'
        r'r2d2.Settings.num_actors'):
      self._check({'CPU': 2.0}, {'CPU': 2.0})

  def test_too_few_cpus_on_the_head_node(self):
    with self.assertRaisesRegex(errors.ConfigError,
                                'The Ray head node has 1 CPUs; the replay '
                                'server and the learner need 2 there'):
      self._check({'CPU': 40.0}, {'CPU': 1.0})

  def test_docs_advice_for_one_two_core_machine_passes(self):
    # docs/distributed.md: `ray start --head` on 2 cores counts 2 CPUs,
    # and the server and learner run there beside the 16 actors.
    self._check({'CPU': 2.0}, {'CPU': 2.0}, replay_server_num_cpus=0.5,
                learner_num_cpus=0.5, actor_num_cpus=0.0625)
    # Fractional actors alone leave the server and learner both CPUs.
    with self.assertRaisesRegex(errors.ConfigError, 'this run needs 3.6'):
      self._check({'CPU': 2.0}, {'CPU': 2.0}, actor_num_cpus=0.1)

  def test_a_gpu_the_head_node_lacks(self):
    with self.assertRaisesRegex(errors.ConfigError, 'learner_num_gpus = 1'):
      self._check({'CPU': 40.0}, {'CPU': 4.0}, learner_num_gpus=1.0)


class RolePrefixTest(absltest.TestCase):

  def test_no_colour_codes_when_the_output_is_not_a_terminal(self):
    self.enter_context(mock.patch.dict(os.environ))
    os.environ.pop('RAY_COLOR_PREFIX', None)
    output = io.StringIO()  # a file, as `ray_launch.py ... 2> log` gives
    ray_launch.plain_role_prefixes([output])
    # How Ray's driver prints a role's line.
    ray_worker.print_worker_logs(
        {'pid': 123, 'ip': '10.0.0.1', 'localhost': '10.0.0.1',
         'actor_name': 'LearnerRole', 'lines': ['12:00:00 env steps 1/2']},
        output)
    self.assertEqual(output.getvalue(),
                     '(LearnerRole pid=123) 12:00:00 env steps 1/2\n')


class PickServerPortTest(absltest.TestCase):

  def test_a_free_port_between_ray_workers_and_the_ephemeral_range(self):
    for _ in range(20):
      port = ray_launch.pick_server_port(ephemeral_start=32768)
      self.assertBetween(port, 20000, 32767)
      self.assertTrue(portpicker.is_port_free(port))

  def test_a_taken_port_is_passed_over(self):
    taken = iter([False, False, True])
    with mock.patch.object(portpicker, 'is_port_free',
                           side_effect=lambda port: next(taken)) as free:
      port = ray_launch.pick_server_port(ephemeral_start=32768)
    self.assertEqual(free.call_count, 3)
    self.assertBetween(port, 20000, 32767)

  def test_no_gap_falls_back_to_portpicker(self):
    with mock.patch.object(portpicker, 'pick_unused_port',
                           return_value=40123):
      self.assertEqual(
          ray_launch.pick_server_port(ephemeral_start=20000), 40123)

  def test_the_kernel_range_is_read_from_proc(self):
    handle, path = tempfile.mkstemp()
    with os.fdopen(handle, 'w') as f:
      f.write('40000\t60999\n')
    self.addCleanup(os.remove, path)
    self.assertEqual(ray_launch._ephemeral_ports_start(path), 40000)  # pylint: disable=protected-access
    self.assertEqual(
        ray_launch._ephemeral_ports_start(path + '.missing'), 32768)  # pylint: disable=protected-access


# Hang guards, not speed checks: on a machine loaded 10 deep the cluster
# started its workers (each importing TensorFlow) two at a time, and the
# replay server's alone took 9 minutes
# (benchmarks/results/performance/history_2026-11-23_test_suite.md).
_HANG_SECONDS = 1800


@pytest.mark.slow
@pytest.mark.timeout(2 * _HANG_SECONDS)
class RayLauncherTest(r2d2_tests._TestCase):  # pylint: disable=protected-access

  def test_run_with_a_killed_actor_restarted_by_ray(self):
    root_dir = os.path.join(self.get_temp_dir(), 'ray_run')
    config.parse_gin([self.gin_file], [
        'NUM_ENV_STEPS = 900', 'r2d2.Settings.checkpoint_interval = 150',
        'r2d2.RayResources.replay_server_num_cpus = 0.5',
        'r2d2.RayResources.learner_num_cpus = 0.5',
        'r2d2.RayResources.actor_num_cpus = 0.5'])
    run = faults.RunThread(lambda: ray_launcher.train_eval(root_dir))
    self.addCleanup(faults.end_ray_run, run, [
        'r2d2_learner', 'r2d2_actor_0', 'r2d2_actor_1',
        'r2d2_replay_server'], _HANG_SECONDS)
    deadline = time.time() + _HANG_SECONDS
    run.wait_for_checkpoint(root_dir, 150, deadline)
    # Where Ray keeps the workers' output (it outlives the cluster).
    logs_dir = ray._private.worker._global_node.get_logs_dir_path()  # pylint: disable=protected-access
    faults.kill_ray_actor('r2d2_actor_1', deadline)
    results = run.finish(timeout_seconds=_HANG_SECONDS)
    self.assertGreaterEqual(results['EnvironmentSteps'], 900)
    self.assertEqual(results['AverageReturn'], 21.0)  # Counting-v0, 6 steps
    self.assertTrue(os.path.isdir(
        os.path.join(root_dir, 'replay_checkpoints')))
    train = run_helpers.read_events(os.path.join(root_dir, 'train'))
    self.assertGreaterEqual(train['Actors/restarts'][-1][1], 1)
    output = ''
    for path in glob.glob(os.path.join(logs_dir, 'worker-*')):
      with open(path, errors='replace') as f:
        output += f.read()
    self.assertRegex(output, r'\d\d:\d\d:\d\d env steps [\d,]+/900')
    self.assertIn('restart 1', output)  # the actor's seeds line
    self.assertNotIn('I tensorflow/', output)
