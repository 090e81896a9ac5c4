"""Scripted experts: BFS planning and the DoorKey expert."""

import numpy as np
import tensorflow as tf

from tfa_explore.testing import r2d3 as support  # pylint: disable=g-bad-import-order

from tfa_explore.environments import experts
from tfa_explore.environments import minigrid


class BfsTest(support.TestCase):

  def test_first_action_on_an_empty_grid(self):
    from minigrid.core import grid as grid_lib  # pylint: disable=g-import-not-at-top
    grid = grid_lib.Grid(5, 5)
    facing_right = lambda x, y, d: (x, y) == (3, 1)
    # Goal straight ahead (agent at (1, 1) facing right): forward.
    self.assertEqual(
        experts.first_action_towards(grid, (1, 1), 0, facing_right),
        experts.FORWARD)
    # Goal behind while facing left: two turns then forward; either turn.
    self.assertIn(
        experts.first_action_towards(grid, (1, 1), 2, facing_right),
        (experts.TURN_LEFT, experts.TURN_RIGHT))
    # Goal below while facing right: one right turn (direction 1 = down).
    self.assertEqual(
        experts.first_action_towards(grid, (1, 1), 0,
                                     lambda x, y, d: (x, y) == (1, 3)),
        experts.TURN_RIGHT)
    self.assertIsNone(
        experts.first_action_towards(grid, (3, 1), 0, facing_right))
    with self.assertRaises(experts.NoPathError):
      experts.first_action_towards(grid, (1, 1), 0,
                                   lambda x, y, d: (x, y) == (9, 9))


class DoorKeyExpertTest(support.TestCase):

  def test_solves_seeded_doorkey_8x8(self):
    solved, lengths = 0, []
    for seed in range(20):
      env = minigrid.load('MiniGrid-DoorKey-8x8-v0', seed=seed)
      time_step = env.reset()
      episode_return, steps = 0.0, 0
      picked_key = opened_door = False
      while not time_step.is_last():
        action = experts.doorkey_expert(env)
        picked_key |= action == experts.PICKUP
        opened_door |= action == experts.TOGGLE
        time_step = env.step(np.asarray(action, np.int64))
        episode_return += float(time_step.reward)
        steps += 1
      env.close()
      # Terminated (discount 0) at the goal, with MiniGrid's success reward
      # 1 - 0.9 * steps / max_steps (max_steps 640): > 0.9 under 71 steps.
      if (float(time_step.discount) == 0.0 and episode_return > 0.9 and
          picked_key and opened_door):
        solved += 1
      lengths.append(steps)
    self.assertEqual(solved, 20, lengths)
    self.assertLess(max(lengths), 40)


if __name__ == '__main__':
  tf.test.main()
