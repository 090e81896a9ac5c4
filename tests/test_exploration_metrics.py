"""Exploration wrappers and the TerminatedEpisodes metric."""

from absl.testing import absltest
import numpy as np
import tensorflow as tf
from tf_agents.environments import tf_py_environment
from tf_agents.trajectories import policy_step
from tf_agents.trajectories import time_step as ts
from tf_agents.trajectories import trajectory

from tfa_explore.environments import batched
from tfa_explore.environments import exploration
from tfa_explore.environments import minigrid
from tfa_explore.environments import suite_gymnasium
from tfa_explore.experiments import metrics
from tfa_explore.testing import fake_envs

FORWARD, LEFT = 2, 0  # MiniGrid actions.


class MaxObservationValueTest(absltest.TestCase):

  def test_tracks_life_and_last_episode_maxima(self):
    # Counting-v0 observes the step index; episodes terminate after 3 steps.
    env = suite_gymnasium.load(
        fake_envs.COUNTING_ID, seed=0,
        gym_kwargs=dict(episode_length=3),
        gym_env_wrappers=[exploration.MaxObservationValue])
    env.reset()
    info = env.last_info[exploration.INFO_KEY]
    # Before any episode finished, the episode value is the current one.
    self.assertEqual(info, {'max_position': 0.0,
                            'episode_max_position': 0.0})
    env.step(np.int64(0))
    env.step(np.int64(0))
    self.assertEqual(env.last_info[exploration.INFO_KEY],
                     {'max_position': 2.0, 'episode_max_position': 2.0})
    env.step(np.int64(0))  # Step 3 terminates: that episode's max is 3.
    env.step(np.int64(0))  # Auto-reset: observation 0.
    env.step(np.int64(0))  # Observation 1 in the new episode.
    self.assertEqual(env.last_info[exploration.INFO_KEY],
                     {'max_position': 3.0, 'episode_max_position': 3.0})


class VisitedCellsTest(absltest.TestCase):

  def test_counts_distinct_minigrid_cells(self):
    env = minigrid.load('MiniGrid-Empty-5x5-v0', seed=0,
                        gym_env_wrappers=[exploration.VisitedCells])
    env.reset()
    self.assertEqual(env.last_info[exploration.INFO_KEY]['visited_cells'], 1)
    # Forward (new cell), turn left (same cell), turn left, forward (back to
    # the start): 2 distinct cells.
    for action in (FORWARD, LEFT, LEFT, FORWARD):
      env.step(np.int64(action))
    info = env.last_info[exploration.INFO_KEY]
    self.assertEqual(info['visited_cells'], 2.0)
    self.assertEqual(info['episode_visited_cells'], 2.0)

  def test_needs_a_position(self):
    env = suite_gymnasium.load(fake_envs.COUNTING_ID, seed=0,
                               gym_env_wrappers=[exploration.VisitedCells])
    with self.assertRaisesRegex(KeyError, 'agent_pos'):
      env.reset()

  def test_summarize_over_envs(self):
    infos = [{exploration.INFO_KEY: {'visited_cells': 4.0}},
             {exploration.INFO_KEY: {'visited_cells': 10.0}}, {}]
    self.assertEqual(exploration.summarize(infos),
                     {'visited_cells_mean': 7.0, 'visited_cells_max': 10.0})
    self.assertEqual(exploration.summarize([{}, {'other': 1}]), {})

  def test_last_infos_of_a_batch(self):
    env = batched.make_batched_env(
        lambda seed: minigrid.load('MiniGrid-Empty-5x5-v0', seed=seed,
                                   gym_env_wrappers=[exploration.VisitedCells]),
        num_envs=2, seed=0)
    env.reset()
    env.step(np.array([FORWARD, LEFT]))
    summary = exploration.summarize(batched.last_infos(env))
    self.assertEqual(summary['visited_cells_max'], 2.0)
    self.assertEqual(summary['visited_cells_mean'], 1.5)


class TerminatedEpisodesTest(tf.test.TestCase):
  # tf.test.TestCase.test_session is a deprecated helper, not a test.
  test_session = None

  def test_counts_termination_not_truncation(self):
    metric = metrics.TerminatedEpisodes()
    # Four envs: terminated (LAST, discount 0), truncated (LAST, discount
    # 1), mid-episode (MID, discount 1), terminated again.
    step = lambda kind: tf.constant(kind, tf.int32)
    traj = trajectory.Trajectory(
        step_type=tf.fill([4], step(ts.StepType.MID)),
        observation=tf.zeros([4, 1]),
        action=tf.zeros([4], tf.int64),
        policy_info=(),
        next_step_type=tf.constant(
            [ts.StepType.LAST, ts.StepType.LAST, ts.StepType.MID,
             ts.StepType.LAST], tf.int32),
        reward=tf.zeros([4]),
        discount=tf.constant([0.0, 1.0, 1.0, 0.0]))
    metric(traj)
    self.assertEqual(int(metric.result()), 2)
    metric(traj)
    self.assertEqual(int(metric.result()), 4)
    metric.reset()
    self.assertEqual(int(metric.result()), 0)

  def test_counts_a_real_env(self):
    # Counting-v0 terminates after 2 steps: 3 terminated episodes in the
    # 6 non-reset steps of 8 driver steps (FIRST, MID, LAST, FIRST, ...).
    env = tf_py_environment.TFPyEnvironment(
        fake_envs.load_counting(seed=0, episode_length=2))
    metric = metrics.TerminatedEpisodes()
    time_step = env.reset()
    for _ in range(8):
      next_time_step = env.step(tf.constant([0], tf.int64))
      action_step = policy_step.PolicyStep(
          action=tf.constant([0], tf.int64), state=(), info=())
      metric(trajectory.from_transition(time_step, action_step,
                                        next_time_step))
      time_step = next_time_step
    self.assertEqual(int(metric.result()), 3)


if __name__ == '__main__':
  absltest.main()
