"""Scripted experts that produce demonstrations (for R2D3).

An expert is a callable `expert(env) -> action` that reads whatever it needs
from the environment itself (it may cheat: the MiniGrid expert reads the
full grid of the unwrapped env, which the agent never sees). `env` is the
TF-Agents `GymnasiumWrapper` the demonstrations are recorded from; experts
are stateless and replan at every step, so they need no reset and recover
from any state (e.g. after a random action).

`replay.demonstrations.ScriptedExpertSource` turns an expert into a source
for `train/collect_demonstrations.py`; gin names them `experts.<name>`.
"""

import collections

import gin

# MiniGrid's action indices (minigrid.core.actions.Actions).
TURN_LEFT, TURN_RIGHT, FORWARD, PICKUP, DROP, TOGGLE, DONE = range(7)
# MiniGrid's direction -> (dx, dy): 0 right, 1 down, 2 left, 3 up.
DIRECTION_VECTORS = ((1, 0), (0, 1), (-1, 0), (0, -1))


class NoPathError(RuntimeError):
  """The expert's target cannot be reached from the agent's state."""


def _front(x, y, direction):
  dx, dy = DIRECTION_VECTORS[direction]
  return x + dx, y + dy


def _passable(grid, x, y):
  if not (0 <= x < grid.width and 0 <= y < grid.height):
    return False
  cell = grid.get(x, y)
  return cell is None or cell.can_overlap()


def first_action_towards(grid, start_position, start_direction, is_goal):
  """First action of a shortest left/right/forward path to a goal state.

  Breadth-first search over agent states (x, y, direction); turns and
  forward moves cost one step each, as in MiniGrid.

  Args:
    grid: a `minigrid.core.grid.Grid`.
    start_position: (x, y) of the agent.
    start_direction: 0..3.
    is_goal: callable (x, y, direction) -> bool.

  Returns:
    The first action, or None if the start state is already a goal.

  Raises:
    NoPathError: no goal state is reachable.
  """
  start = (int(start_position[0]), int(start_position[1]),
           int(start_direction))
  if is_goal(*start):
    return None
  first_actions = {start: None}
  queue = collections.deque([start])
  while queue:
    state = queue.popleft()
    x, y, direction = state
    successors = [(TURN_LEFT, (x, y, (direction - 1) % 4)),
                  (TURN_RIGHT, (x, y, (direction + 1) % 4))]
    front_x, front_y = _front(x, y, direction)
    if _passable(grid, front_x, front_y):
      successors.append((FORWARD, (front_x, front_y, direction)))
    for action, successor in successors:
      if successor in first_actions:
        continue
      first_actions[successor] = (first_actions[state]
                                  if first_actions[state] is not None
                                  else action)
      if is_goal(*successor):
        return first_actions[successor]
      queue.append(successor)
  raise NoPathError(
      f'No path from {start} to the target on the {grid.width}x'
      f'{grid.height} grid.')


def _find(grid, object_type):
  for x in range(grid.width):
    for y in range(grid.height):
      cell = grid.get(x, y)
      if cell is not None and cell.type == object_type:
        return cell, (x, y)
  return None, None


@gin.configurable(module='experts', denylist=['env'])
def doorkey_expert(env):
  """Optimal-ish scripted policy for MiniGrid-DoorKey-*: key, door, goal.

  Reads the full grid from the unwrapped env: until the door is open it
  walks to the key and picks it up (PICKUP facing the key), then to the
  door and opens it (TOGGLE facing the door); then it walks to the goal.
  Every step replans with a BFS over (x, y, direction).

  Args:
    env: the `GymnasiumWrapper` (or any object with `.gym`) of a DoorKey
      env, or the gymnasium env itself.

  Returns:
    int MiniGrid action.
  """
  gym_env = env.gym if hasattr(env, 'gym') else env
  unwrapped = gym_env.unwrapped
  grid = unwrapped.grid
  position, direction = unwrapped.agent_pos, unwrapped.agent_dir
  door, door_position = _find(grid, 'door')
  if door is not None and not door.is_open:
    carrying_key = (unwrapped.carrying is not None and
                    unwrapped.carrying.type == 'key')
    if carrying_key:
      target, use_action = door_position, TOGGLE
    else:
      _, target = _find(grid, 'key')
      if target is None:
        raise NoPathError('DoorKey expert: no key on the grid and none held.')
      use_action = PICKUP
    action = first_action_towards(
        grid, position, direction,
        lambda x, y, d: _front(x, y, d) == tuple(target))
    return use_action if action is None else action
  _, goal_position = _find(grid, 'goal')
  if goal_position is None:
    raise NoPathError('DoorKey expert: no goal on the grid.')
  action = first_action_towards(
      grid, position, direction,
      lambda x, y, d: (x, y) == tuple(goal_position))
  # At the goal the episode has already ended; DONE is a harmless no-op.
  return DONE if action is None else action
