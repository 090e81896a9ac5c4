"""Gymnasium wrappers that report how far an agent has explored.

Each wrapper puts a dict of numbers under `info['exploration']` on every
reset and step. The on-policy loop reads the last info of every collect
env after each iteration (`batched.last_infos`) and writes each number as
`Exploration/<name>_mean` and `Exploration/<name>_max` over the envs. Names
starting with `episode_` describe the last FINISHED episode of that env (the
current one until the first finishes); the others cover the env's whole
life since it was created.

Add them with gin, e.g. `minigrid.load.gym_env_wrappers =
[@exploration.VisitedCells]` or `suite_gymnasium.load.gym_env_wrappers =
[@exploration.MaxObservationValue]`.
"""

from typing import Any, Dict

import gin
import gymnasium as gym
import numpy as np

INFO_KEY = 'exploration'


def _merge(info: Dict[str, Any], values: Dict[str, float]) -> Dict[str, Any]:
  info = dict(info)
  merged = dict(info.get(INFO_KEY, {}))
  merged.update(values)
  info[INFO_KEY] = merged
  return info


@gin.configurable(module='exploration', denylist=['env'])
class VisitedCells(gym.Wrapper):
  """Counts the distinct cells an agent has visited ("episode visits").

  Reads the cell from `info[position_key]` (MiniGrid's `agent_pos`, which
  `minigrid.load` adds), so it must wrap an env that reports it.

  Reports `visited_cells` (distinct cells over the env's life) and
  `episode_visited_cells` (distinct cells of the last finished episode).
  """

  def __init__(self, env: gym.Env, position_key: str = 'agent_pos'):
    super().__init__(env)
    self._position_key = position_key
    self._life_cells = set()
    self._episode_cells = set()
    self._finished_episode_cells = None

  def _record(self, info, episode_over=False):
    if self._position_key not in info:
      raise KeyError(
          f'VisitedCells needs info[{self._position_key!r}]; this env '
          f'reports {sorted(info)}.')
    cell = tuple(int(v) for v in np.ravel(info[self._position_key]))
    self._life_cells.add(cell)
    self._episode_cells.add(cell)
    if episode_over:
      self._finished_episode_cells = len(self._episode_cells)
    episode = (self._finished_episode_cells
               if self._finished_episode_cells is not None
               else len(self._episode_cells))
    return _merge(info, {'visited_cells': float(len(self._life_cells)),
                         'episode_visited_cells': float(episode)})

  def reset(self, **kwargs):
    observation, info = self.env.reset(**kwargs)
    self._episode_cells = set()
    return observation, self._record(info)

  def step(self, action):
    observation, reward, terminated, truncated, info = self.env.step(action)
    info = self._record(info, episode_over=terminated or truncated)
    return observation, reward, terminated, truncated, info


@gin.configurable(module='exploration', denylist=['env'])
class MaxObservationValue(gym.Wrapper):
  """The largest value one observation entry has reached.

  For MountainCar, `index=0` is the car's position (the flag is at 0.5).
  Reports `max_<name>` over the env's life and `episode_max_<name>` of the
  last finished episode.
  """

  def __init__(self, env: gym.Env, index: int = 0, name: str = 'position'):
    super().__init__(env)
    self._index = index
    self._name = name
    self._life_max = -np.inf
    self._episode_max = -np.inf
    self._finished_episode_max = None

  def _record(self, observation, info, episode_over=False):
    value = float(np.ravel(observation)[self._index])
    self._life_max = max(self._life_max, value)
    self._episode_max = max(self._episode_max, value)
    if episode_over:
      self._finished_episode_max = self._episode_max
    episode = (self._finished_episode_max
               if self._finished_episode_max is not None
               else self._episode_max)
    return _merge(info, {f'max_{self._name}': self._life_max,
                         f'episode_max_{self._name}': episode})

  def reset(self, **kwargs):
    observation, info = self.env.reset(**kwargs)
    self._episode_max = -np.inf
    return observation, self._record(observation, info)

  def step(self, action):
    observation, reward, terminated, truncated, info = self.env.step(action)
    info = self._record(observation, info,
                        episode_over=terminated or truncated)
    return observation, reward, terminated, truncated, info


def summarize(infos) -> Dict[str, float]:
  """`{name_mean, name_max}` over the envs' `info['exploration']` dicts.

  Args:
    infos: The last info dict of each env (`batched.last_infos`).

  Returns:
    An empty dict if no env reports exploration numbers.
  """
  values = {}
  for info in infos:
    for name, value in (info or {}).get(INFO_KEY, {}).items():
      values.setdefault(name, []).append(float(value))
  result = {}
  for name, numbers in sorted(values.items()):
    result[f'{name}_mean'] = float(np.mean(numbers))
    result[f'{name}_max'] = float(np.max(numbers))
  return result
