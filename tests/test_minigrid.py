"""Tests for the MiniGrid preset."""

from absl.testing import absltest
from absl.testing import parameterized
import gin
import numpy as np
from tf_agents.trajectories import time_step as ts

from tfa_explore.environments import minigrid
from tfa_explore.environments import suite_gymnasium

EMPTY_5X5 = 'MiniGrid-Empty-5x5-v0'
DOOR_KEY = 'MiniGrid-DoorKey-5x5-v0'
# MiniGrid actions.
LEFT, RIGHT, FORWARD = 0, 1, 2
# minigrid.core.constants.OBJECT_TO_IDX['agent'].
AGENT_OBJECT = 10


class MiniGridTest(parameterized.TestCase):

  def test_default_observation_is_7x7x4_uint8(self):
    env = minigrid.load(EMPTY_5X5, seed=0)
    spec = env.observation_spec()
    self.assertEqual(spec.shape, (7, 7, 4))
    self.assertEqual(spec.dtype, np.uint8)
    step = env.reset()
    self.assertEqual(step.observation.shape, (7, 7, 4))
    self.assertEqual(step.observation.dtype, np.uint8)
    self.assertEqual(env.action_spec().dtype, np.int64)

  def test_direction_plane_follows_the_agent(self):
    env = minigrid.load(EMPTY_5X5, seed=0)
    step = env.reset()
    directions = [int(step.observation[0, 0, 3])]
    np.testing.assert_array_equal(step.observation[..., 3], directions[0])
    for _ in range(4):
      step = env.step(np.int64(RIGHT))
      # The plane is constant and equal to the env's direction.
      self.assertEqual(len(np.unique(step.observation[..., 3])), 1)
      self.assertEqual(int(step.observation[0, 0, 3]),
                       env.last_info['agent_dir'])
      directions.append(int(step.observation[0, 0, 3]))
    # Turning right cycles through 0..3 (right, down, left, up).
    self.assertEqual(directions[1:], [(directions[0] + k) % 4
                                      for k in range(1, 5)])

  def test_without_direction(self):
    env = minigrid.load(EMPTY_5X5, seed=0, include_direction=False)
    self.assertEqual(env.observation_spec().shape, (7, 7, 3))

  def test_one_hot_encodes_indices(self):
    indices = minigrid.load(DOOR_KEY, seed=1).reset().observation
    env = minigrid.load(DOOR_KEY, seed=1, one_hot=True)
    self.assertEqual(env.observation_spec().shape, (7, 7, 25))
    self.assertEqual(env.observation_spec().dtype, np.uint8)
    one_hot = env.reset().observation
    self.assertEqual(one_hot.dtype, np.uint8)
    self.assertTrue(np.isin(one_hot, [0, 1]).all())
    # One plane per group (object, colour, state, direction) in every cell.
    np.testing.assert_array_equal(one_hot.sum(axis=-1), 4)
    # Planes: objects 0-10, colours 11-16, states 17-20, directions 21-24.
    np.testing.assert_array_equal(one_hot[..., 0:11].argmax(-1),
                                  indices[..., 0])
    np.testing.assert_array_equal(one_hot[..., 11:17].argmax(-1),
                                  indices[..., 1])
    np.testing.assert_array_equal(one_hot[..., 17:21].argmax(-1),
                                  indices[..., 2])
    np.testing.assert_array_equal(one_hot[..., 21:25].argmax(-1),
                                  indices[..., 3])

  @parameterized.product(one_hot=(False, True),
                          include_direction=(False, True))
  def test_cell_indices_invert_the_encoding(self, one_hot, include_direction):
    indices = minigrid.load(DOOR_KEY, seed=1).reset().observation[..., :3]
    observation = minigrid.load(
        DOOR_KEY, seed=1, one_hot=one_hot,
        include_direction=include_direction).reset().observation
    np.testing.assert_array_equal(minigrid.cell_indices(observation), indices)
    # Any leading dimensions (a batch of views).
    np.testing.assert_array_equal(
        minigrid.cell_indices(np.stack([observation] * 2)),
        np.stack([indices] * 2))

  def test_cell_indices_name_an_unknown_channel_count(self):
    with self.assertRaisesRegex(ValueError, r'got shape \(7, 7, 5\)'):
      minigrid.cell_indices(np.zeros((7, 7, 5), np.uint8))

  def test_one_hot_without_direction(self):
    env = minigrid.load(EMPTY_5X5, seed=0, one_hot=True,
                        include_direction=False)
    self.assertEqual(env.observation_spec().shape, (7, 7, 21))
    np.testing.assert_array_equal(env.reset().observation.sum(-1), 3)

  @parameterized.parameters(False, True)
  def test_fully_observable_shows_the_whole_grid(self, one_hot):
    env = minigrid.load('MiniGrid-Empty-8x8-v0', seed=0,
                        fully_observable=True, one_hot=one_hot)
    channels = 25 if one_hot else 4
    self.assertEqual(env.observation_spec().shape, (8, 8, channels))
    observation = env.step(np.int64(FORWARD)).observation
    x, y = env.last_info['agent_pos']
    objects = (observation[..., :11].argmax(-1) if one_hot
               else observation[..., 0])
    # The agent cell is the only cell holding the agent.
    self.assertEqual(objects[x, y], AGENT_OBJECT)
    self.assertEqual(int((objects == AGENT_OBJECT).sum()), 1)

  def test_agent_position_in_info(self):
    env = minigrid.load(EMPTY_5X5, seed=0)
    env.reset()
    # Empty-5x5 starts the agent at (1, 1) facing right (direction 0).
    self.assertEqual(env.last_info['agent_pos'], (1, 1))
    self.assertEqual(env.last_info['agent_dir'], 0)
    env.step(np.int64(FORWARD))
    self.assertEqual(env.last_info['agent_pos'], (2, 1))
    env.step(np.int64(LEFT))
    self.assertEqual(env.last_info['agent_pos'], (2, 1))
    self.assertEqual(env.last_info['agent_dir'], 3)

  def test_reaching_the_goal_terminates(self):
    env = minigrid.load(EMPTY_5X5, seed=0)
    env.reset()
    # Goal at (3, 3): right twice, turn down, down twice.
    steps = [env.step(np.int64(a))
             for a in (FORWARD, FORWARD, RIGHT, FORWARD, FORWARD)]
    self.assertEqual([s.step_type for s in steps],
                     [ts.StepType.MID] * 4 + [ts.StepType.LAST])
    self.assertEqual(float(steps[-1].discount), 0.0)
    # MiniGrid's reward: 1 - 0.9 * steps / max_steps, max_steps = 100.
    self.assertAlmostEqual(float(steps[-1].reward), 1 - 0.9 * 5 / 100,
                           places=5)

  def test_max_episode_steps_truncates(self):
    env = minigrid.load(EMPTY_5X5, seed=0, max_episode_steps=3)
    env.reset()
    steps = [env.step(np.int64(LEFT)) for _ in range(4)]
    self.assertEqual([s.step_type for s in steps],
                     [ts.StepType.MID, ts.StepType.MID, ts.StepType.LAST,
                      ts.StepType.FIRST])
    self.assertEqual(float(steps[2].discount), 1.0)

  def test_seeding(self):
    def first_observation(seed):
      return minigrid.load(DOOR_KEY, seed=seed,
                           fully_observable=True).reset().observation
    np.testing.assert_array_equal(first_observation(0), first_observation(0))
    # DoorKey layouts are random; some of a few seeds must differ.
    self.assertTrue(any(not np.array_equal(first_observation(0),
                                           first_observation(seed))
                        for seed in range(1, 5)))

  def test_rejects_non_minigrid_id(self):
    with self.assertRaisesRegex(ValueError,
                                r"MiniGrid env id.*'CartPole-v1'"):
      minigrid.load('CartPole-v1')

  def test_unknown_id_suggests_close_matches(self):
    with self.assertRaisesRegex(suite_gymnasium.UnknownEnvironmentError,
                                EMPTY_5X5):
      minigrid.load('MiniGrid-Empty-5x5-v1')

  def test_gin_configurable(self):
    with gin.unlock_config():
      gin.parse_config(f"minigrid.load.env_id = '{EMPTY_5X5}'\n"
                       'minigrid.load.one_hot = True')
    try:
      self.assertEqual(minigrid.load().observation_spec().shape, (7, 7, 25))
    finally:
      gin.clear_config()


if __name__ == '__main__':
  absltest.main()
