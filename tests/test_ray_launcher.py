"""The R2D2 roles as Ray actors on a local Ray cluster (loopback).

Slow: a local cluster, the replay server, the learner and 2 actors as Ray
actors on the tiny Counting-v0 config; one actor process is SIGKILLed and
Ray restarts it; the run reaches its budget.
"""

import os
import signal
import threading
import time

import pytest
import ray

from tfa_explore.experiments import runner
from tfa_explore.experiments.r2d2 import ray_launcher
from tfa_explore.testing import faults

import test_r2d2_experiment as r2d2_tests  # the tiny gin file


@pytest.mark.slow
@pytest.mark.timeout(600)
class RayLauncherTest(r2d2_tests._TestCase):  # pylint: disable=protected-access

  def test_run_with_a_killed_actor_restarted_by_ray(self):
    root_dir = os.path.join(self.get_temp_dir(), 'ray_run')
    runner.parse_gin([self.gin_file], [
        'NUM_ENV_STEPS = 900', 'r2d2.Settings.checkpoint_interval = 150',
        'r2d2.RayResources.replay_server_num_cpus = 0.5',
        'r2d2.RayResources.learner_num_cpus = 0.5',
        'r2d2.RayResources.actor_num_cpus = 0.5'])
    results, errors = {}, []

    def run():
      try:
        results.update(ray_launcher.train_eval(root_dir))
      except Exception as e:  # pylint: disable=broad-except
        errors.append(e)
    thread = threading.Thread(target=run)
    thread.start()
    self.addCleanup(lambda: ray.is_initialized() and ray.shutdown())
    deadline = time.time() + 300
    while faults.checkpoint_step(root_dir) < 150:
      self.assertLess(time.time(), deadline, 'no learner checkpoint')
      self.assertTrue(thread.is_alive(), errors)
      time.sleep(0.5)
    actor = ray.get_actor('r2d2_actor_1')
    old_pid = ray.get(actor.pid.remote())
    os.kill(old_pid, signal.SIGKILL)
    new_pid = None
    while new_pid in (None, old_pid) and time.time() < deadline:
      try:
        new_pid = ray.get(actor.pid.remote(), timeout=10)
      except (ray.exceptions.RayActorError,
              ray.exceptions.GetTimeoutError):
        time.sleep(0.5)
    self.assertNotIn(new_pid, (None, old_pid), 'Ray did not restart it')
    thread.join(timeout=300)
    self.assertFalse(thread.is_alive(), 'the run did not finish')
    self.assertEqual(errors, [])
    self.assertGreaterEqual(results['EnvironmentSteps'], 900)
    self.assertEqual(results['AverageReturn'], 21.0)  # Counting-v0, 6 steps
    self.assertTrue(os.path.isdir(
        os.path.join(root_dir, 'replay_checkpoints')))
