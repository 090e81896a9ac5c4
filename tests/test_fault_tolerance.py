"""Nothing lost when a process dies: replay checkpoints, restarts, reconnects.

* Unit: `retry.ServerWait` (which errors it waits out, back-off, give-up);
  a replay server restarted on its checkpoint directory restores the
  tables (items, priorities, rate-limiter counts) and empties the
  progress queue.
* Slow: the three binaries on loopback with each role SIGKILLed in turn
  (`tfa_explore.testing.faults`); one machine with an actor process
  SIGKILLed and restarted by the launcher (`Actors/restarts`).
"""

import os
import time

from absl.testing import absltest
import numpy as np
import portpicker
import psutil
import pytest
import reverb
import tensorflow as tf

from tfa_explore import config
from tfa_explore.experiments import r2d2
from tfa_explore.experiments.r2d2 import builder as builder_lib
from tfa_explore.process import retry
from tfa_explore.testing import faults

import test_r2d2_experiment as r2d2_tests  # the tiny gin file

REPO_ROOT = faults.REPO_ROOT


class ServerWaitTest(absltest.TestCase):

  def test_other_errors_are_raised_again(self):
    server = reverb.Server([reverb.Table.queue('q', 1)], port=None)
    self.addCleanup(server.stop)
    wait = retry.ServerWait(f'localhost:{server.port}', 'learner', 10,
                            sleep=lambda s: None)
    with self.assertRaisesRegex(ValueError, 'a bug'):
      wait.wait(ValueError('a bug'))  # the server answers: not a fault

  def test_waits_with_back_off_until_the_server_answers(self):
    port = portpicker.pick_unused_port()
    address = f'localhost:{port}'
    delays = []
    servers = []

    def sleep(seconds):
      delays.append(seconds)
      if len(delays) == 4:  # the server comes back during the 4th wait
        servers.append(reverb.Server([reverb.Table.queue('q', 1)],
                                     port=port))
    wait = retry.ServerWait(address, 'actor 0', 600, sleep=sleep)
    try:
      with self.assertLogs(level='WARNING') as logs:
        self.assertTrue(wait.wait(RuntimeError('socket closed')))
    finally:
      for server in servers:
        server.stop()
    self.assertEqual(delays, [1.0, 2.0, 4.0, 8.0])
    self.assertTrue(any('unreachable' in line and 'actor 0' in line
                        for line in logs.output))
    self.assertTrue(any('answers again' in line for line in logs.output))

  def test_gives_up_after_the_retry_time_naming_the_setting(self):
    wait = retry.ServerWait(f'localhost:{portpicker.pick_unused_port()}',
                            'learner', 0.0, sleep=lambda s: None)
    with self.assertRaisesRegex(retry.ReplayServerLost,
                                'replay_retry_seconds'):
      wait.wait(tf.errors.UnavailableError(None, None, 'socket closed'))

  def test_stop_request_ends_the_wait(self):
    wait = retry.ServerWait(f'localhost:{portpicker.pick_unused_port()}',
                            'actor 1', 600, should_stop=lambda: True,
                            sleep=lambda s: None)
    self.assertFalse(wait.wait(ConnectionError('gone')))


@pytest.mark.timeout(120)
class ReplayCheckpointTest(r2d2_tests._TestCase):  # pylint: disable=protected-access

  def test_restarted_server_restores_tables_and_empties_the_queue(self):
    settings = self.settings()
    checkpoint_dir = os.path.join(self.get_temp_dir(), 'replay')
    port = portpicker.pick_unused_port()
    server = r2d2.make_replay_server(settings, port, checkpoint_dir)
    client = reverb.Client(f'localhost:{port}')
    _, agent = builder_lib.Builder(settings).make_agent()
    spec = agent.collect_data_spec
    length = agent.sequence_config.sequence_length
    with client.trajectory_writer(num_keep_alive_refs=length) as writer:
      for i in range(length + 4):  # 5 items: min_size_to_sample is 4
        writer.append(tf.nest.map_structure(
            lambda s: np.zeros(s.shape, s.dtype.as_numpy_dtype), spec))
        if i + 1 >= length:
          writer.create_item(
              'r2d2_sequences', priority=float(i),
              trajectory=tf.nest.map_structure(lambda c: c[-length:],
                                               writer.history))
    client.insert(builder_lib.progress_report(0, 10), {'actor_progress': 1.0})
    before = client.server_info()
    self.assertEqual(before['r2d2_sequences'].current_size, 5)
    client.checkpoint()
    server.stop()

    server = r2d2.make_replay_server(settings, port, checkpoint_dir)
    self.addCleanup(server.stop)
    after = client.server_info()
    self.assertEqual(after['r2d2_sequences'].current_size, 5)
    # Rate-limiter counts as at the checkpoint.
    self.assertEqual(
        after['r2d2_sequences'].rate_limiter_info.insert_stats.completed,
        before['r2d2_sequences'].rate_limiter_info.insert_stats.completed)
    # The queue's reports may have been counted already: dropped.
    self.assertEqual(after['actor_progress'].current_size, 0)
    # Items come back with their priorities (i of the step that closed
    # them: 6 to 10); the rate limiter allows a few samples.
    priorities = {sample[0].info.priority for sample in client.sample(
        'r2d2_sequences', num_samples=4)}
    self.assertTrue(priorities <= {6.0, 7.0, 8.0, 9.0, 10.0}, priorities)


@pytest.mark.slow
class ThreeRolesKilledTest(r2d2_tests._TestCase):  # pylint: disable=protected-access

  def test_every_role_killed_and_restarted(self):
    gin_file = os.path.join(self.get_temp_dir(), 'faults.gin')
    with open(gin_file, 'w') as f:
      f.write(r2d2_tests.TINY_GIN + FAULT_BINDINGS)
    report = faults.run_three_role_scenario(
        gin_file, self.get_temp_dir(), portpicker.pick_unused_port(),
        kill_steps=(300, 900, 1500), learner_lead=100, timeout_seconds=900)
    print(report)
    self.assertEqual([kill.role for kill in report.kills],
                     ['actor', 'replay_server', 'learner'])
    self.assertEqual(report.learner_exit_code, 0)
    self.assertEqual(report.actor_exit_codes, [0, 0])
    self.assertGreaterEqual(report.final_env_steps, 2400)
    # Counting-v0 episodes are 6 steps: the episode count adds up to the
    # env steps, less the episodes cut short by a kill.
    self.assertLessEqual(report.final_episodes * 6, report.final_env_steps)
    self.assertGreaterEqual(report.final_episodes * 6,
                            report.final_env_steps - 6 * 20)
    server_kill, learner_kill = report.kills[1], report.kills[2]
    # The restarted server holds the checkpointed table, not an empty one.
    self.assertGreater(server_kill.items_restored, 0)
    # A learner loses what it counted since its checkpoint: here the 100+
    # env steps it was let run past it, at most one interval (200).
    self.assertBetween(learner_kill.env_steps_lost, 100, 200 + 50)
    # ... and the restarted one trains on.
    self.assertGreater(report.final_learner_steps,
                       report.learner_steps_at_kill)


@pytest.mark.slow
class SingleMachineActorRestartTest(r2d2_tests._TestCase):  # pylint: disable=protected-access

  def test_killed_actor_process_is_restarted_and_counted(self):
    root_dir = os.path.join(self.get_temp_dir(), 'run')
    config.parse_gin([self.gin_file], [
        "r2d2.Settings.actor_mode = 'process'", 'NUM_ENV_STEPS = 1200',
        'r2d2.Settings.checkpoint_interval = 200'])
    run = faults.RunThread(lambda: r2d2.train_eval(root_dir=root_dir))
    run.wait_for_checkpoint(root_dir, 200, deadline=time.time() + 240)
    actors = [child for child in psutil.Process().children()
              if 'spawn_main' in ' '.join(child.cmdline())]
    self.assertLen(actors, 2)
    actors[0].kill()
    results = run.finish(timeout_seconds=300)
    self.assertGreaterEqual(results['EnvironmentSteps'], 1200)
    metrics = faults.final_metrics(os.path.join(root_dir, 'train'))
    self.assertEqual(metrics['Actors/restarts'], 1.0)


FAULT_BINDINGS = """
NUM_ENV_STEPS = 2400
r2d2.Settings.checkpoint_interval = 200
r2d2.Settings.log_interval = 50
r2d2.Settings.sample_timeout_seconds = 5.0
"""


if __name__ == '__main__':
  absltest.main()
