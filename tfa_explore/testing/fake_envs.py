"""Tiny deterministic gymnasium environments for fast tests.

Importing this module registers them with gymnasium, so they load through
`suite_gymnasium.load` like any other id:

* `Counting-v0`: observation = number of steps taken; the t-th step (t = 1,
  2, ...) pays reward t; the episode TERMINATES after `episode_length`
  steps (default 5). A time limit (`max_episode_steps`) TRUNCATES it.
  Return of a full episode of length n: n (n + 1) / 2.
* `CorrectAction-v0`: a contextual bandit. The observation one-hot encodes
  a target drawn from the seeded RNG; reward 1 if the action equals the
  target, else 0; terminates after `episode_length` steps (default 10). The
  optimal policy is argmax(observation): return 10 vs 10 / num_actions for
  a random policy. For learning smoke tests.
* `Recall-v0`: a memory task. The first observation shows a cue (-1 or
  +1, from the seeded RNG) as `[cue, 0]`; the next `delay - 1` show
  `[0, 0]`; the last shows the query `[0, 1]`. The action taken at the
  query pays 1 if it names the cue (action 1 for +1, 0 for -1) and ends
  the episode (`delay + 1` steps, default delay 4). Before the query,
  action 0 pays 0 and action 1 costs 1: a network shown its previous
  action (R2D2's is) could otherwise carry the cue in its own actions, so
  without the cost a feed-forward network could solve the task. Remembering
  the cue returns 1; a policy without memory returns at most 0.5 on
  average. For recurrent learning tests.
* `Image-v0`: uint8 (8, 8, 3) noise images from the seeded RNG; reward 1
  for action 0; terminates after 8 steps.
* `DictObs-v0`: a Dict observation ('position' float64 (2,), 'flag'
  Discrete(3), 'image' uint8 (4, 4, 1)); terminates after 6 steps.
* `Spaces-v0`: takes any `observation_space` / `action_space` as make
  kwargs and samples observations from the seeded RNG; for spec tests.

All ids live in the `tfa_explore_testing` namespace
(e.g. 'tfa_explore_testing/Counting-v0'); `load_*` helpers return wrapped
PyEnvironments and take `seed=`, so they also serve as `make_batched_env`
loaders.
"""

from typing import Optional

import gymnasium as gym
import numpy as np

from tfa_explore.environments import suite_gymnasium

NAMESPACE = 'tfa_explore_testing'
COUNTING_ID = f'{NAMESPACE}/Counting-v0'
CORRECT_ACTION_ID = f'{NAMESPACE}/CorrectAction-v0'
IMAGE_ID = f'{NAMESPACE}/Image-v0'
DICT_OBS_ID = f'{NAMESPACE}/DictObs-v0'
SPACES_ID = f'{NAMESPACE}/Spaces-v0'
RECALL_ID = f'{NAMESPACE}/Recall-v0'


class CountingEnv(gym.Env):
  """Observation counts steps; reward of step t is t; terminates at length."""

  def __init__(self, episode_length: int = 5, num_actions: int = 2):
    self._episode_length = episode_length
    self.observation_space = gym.spaces.Box(
        low=0, high=episode_length, shape=(1,), dtype=np.float32)
    self.action_space = gym.spaces.Discrete(num_actions)
    self._count = 0

  def _observation(self):
    return np.array([self._count], dtype=np.float32)

  def reset(self, *, seed=None, options=None):
    super().reset(seed=seed)
    self._count = 0
    return self._observation(), {'count': self._count}

  def step(self, action):
    self._count += 1
    terminated = self._count >= self._episode_length
    return (self._observation(), float(self._count), terminated, False,
            {'count': self._count})


class CorrectActionEnv(gym.Env):
  """Reward 1 for choosing the action one-hot encoded in the observation."""

  def __init__(self, num_actions: int = 2, episode_length: int = 10):
    self._num_actions = num_actions
    self._episode_length = episode_length
    self.observation_space = gym.spaces.Box(
        low=0, high=1, shape=(num_actions,), dtype=np.float32)
    self.action_space = gym.spaces.Discrete(num_actions)
    self._target = 0
    self._steps = 0

  def _observation(self):
    self._target = int(self.np_random.integers(self._num_actions))
    return np.eye(self._num_actions, dtype=np.float32)[self._target]

  def reset(self, *, seed=None, options=None):
    super().reset(seed=seed)
    self._steps = 0
    return self._observation(), {}

  def step(self, action):
    reward = 1.0 if int(action) == self._target else 0.0
    self._steps += 1
    terminated = self._steps >= self._episode_length
    return self._observation(), reward, terminated, False, {}


class RecallEnv(gym.Env):
  """Remember a cue shown at the first step; name it at the last."""

  def __init__(self, delay: int = 4):
    if delay < 1:
      raise ValueError(f'Recall-v0: delay must be >= 1, got {delay}.')
    self._delay = delay
    self.observation_space = gym.spaces.Box(
        low=-1, high=1, shape=(2,), dtype=np.float32)
    self.action_space = gym.spaces.Discrete(2)
    self._cue = 1
    self._steps = 0

  def _observation(self):
    if self._steps == 0:
      return np.array([self._cue, 0], dtype=np.float32)
    if self._steps == self._delay:
      return np.array([0, 1], dtype=np.float32)
    return np.zeros(2, dtype=np.float32)

  def reset(self, *, seed=None, options=None):
    super().reset(seed=seed)
    self._cue = 1 if self.np_random.integers(2) else -1
    self._steps = 0
    return self._observation(), {'cue': self._cue}

  def step(self, action):
    if self._steps == self._delay:
      reward = 1.0 if int(action) == (self._cue + 1) // 2 else 0.0
      return self._observation(), reward, True, False, {'cue': self._cue}
    self._steps += 1
    # Carrying the cue in the actions would cost 1 at each step in half the
    # episodes, more than the 0.5 that remembering it adds.
    reward = -1.0 if int(action) != 0 else 0.0
    return self._observation(), reward, False, False, {'cue': self._cue}


class ImageEnv(gym.Env):
  """Seeded uint8 noise images; reward 1 for action 0."""

  def __init__(self, shape=(8, 8, 3), episode_length: int = 8,
               num_actions: int = 3):
    self._episode_length = episode_length
    self.observation_space = gym.spaces.Box(
        low=0, high=255, shape=tuple(shape), dtype=np.uint8)
    self.action_space = gym.spaces.Discrete(num_actions)
    self._steps = 0

  def _observation(self):
    return self.np_random.integers(
        0, 256, size=self.observation_space.shape, dtype=np.uint8)

  def reset(self, *, seed=None, options=None):
    super().reset(seed=seed)
    self._steps = 0
    return self._observation(), {}

  def step(self, action):
    self._steps += 1
    reward = 1.0 if int(action) == 0 else 0.0
    terminated = self._steps >= self._episode_length
    return self._observation(), reward, terminated, False, {}


class DictObsEnv(gym.Env):
  """Dict observations mixing float64, Discrete and uint8 parts."""

  def __init__(self, episode_length: int = 6):
    self._episode_length = episode_length
    self.observation_space = gym.spaces.Dict({
        'position': gym.spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float64),
        'flag': gym.spaces.Discrete(3),
        'image': gym.spaces.Box(0, 255, shape=(4, 4, 1), dtype=np.uint8),
    })
    self.action_space = gym.spaces.Discrete(2)
    self._steps = 0

  def _observation(self):
    return {
        'position': self.np_random.uniform(-1.0, 1.0, size=2),
        'flag': int(self.np_random.integers(3)),
        'image': self.np_random.integers(0, 256, size=(4, 4, 1),
                                         dtype=np.uint8),
    }

  def reset(self, *, seed=None, options=None):
    super().reset(seed=seed)
    self._steps = 0
    return self._observation(), {}

  def step(self, action):
    self._steps += 1
    terminated = self._steps >= self._episode_length
    return self._observation(), 0.0, terminated, False, {}


class SpacesEnv(gym.Env):
  """Samples observations from any given space with the seeded RNG."""

  def __init__(self, observation_space: gym.Space,
               action_space: Optional[gym.Space] = None,
               episode_length: int = 4):
    self.observation_space = observation_space
    self.action_space = action_space or gym.spaces.Discrete(2)
    self._episode_length = episode_length
    self._steps = 0

  def _observation(self):
    # The space's own RNG is separate from the env's; reseed it from the
    # env's so a seeded reset fixes the observations too.
    self.observation_space.seed(int(self.np_random.integers(2**31)))
    return self.observation_space.sample()

  def reset(self, *, seed=None, options=None):
    super().reset(seed=seed)
    self._steps = 0
    return self._observation(), {}

  def step(self, action):
    self._steps += 1
    terminated = self._steps >= self._episode_length
    return self._observation(), 0.0, terminated, False, {}


def register() -> None:
  """Registers the fake envs with gymnasium (idempotent)."""
  for env_id, entry_point in ((COUNTING_ID, CountingEnv),
                              (CORRECT_ACTION_ID, CorrectActionEnv),
                              (IMAGE_ID, ImageEnv),
                              (DICT_OBS_ID, DictObsEnv),
                              (SPACES_ID, SpacesEnv),
                              (RECALL_ID, RecallEnv)):
    if env_id not in gym.registry:
      # disable_env_checker: the checker warns about unbounded fake spaces
      # and would clutter test output.
      gym.register(id=env_id, entry_point=entry_point,
                   disable_env_checker=True)


register()


def load_counting(seed: Optional[int] = None, episode_length: int = 5,
                  max_episode_steps: Optional[int] = None,
                  num_actions: int = 2) -> suite_gymnasium.GymnasiumWrapper:
  """Counting-v0 as a PyEnvironment; `max_episode_steps` truncates."""
  return suite_gymnasium.load(
      COUNTING_ID, seed=seed, max_episode_steps=max_episode_steps,
      gym_kwargs=dict(episode_length=episode_length,
                      num_actions=num_actions))


def load_correct_action(seed: Optional[int] = None, num_actions: int = 2,
                        episode_length: int = 10
                       ) -> suite_gymnasium.GymnasiumWrapper:
  """CorrectAction-v0 as a PyEnvironment."""
  return suite_gymnasium.load(
      CORRECT_ACTION_ID, seed=seed,
      gym_kwargs=dict(num_actions=num_actions,
                      episode_length=episode_length))


def load_image(seed: Optional[int] = None, shape=(8, 8, 3),
               episode_length: int = 8) -> suite_gymnasium.GymnasiumWrapper:
  """Image-v0 as a PyEnvironment."""
  return suite_gymnasium.load(
      IMAGE_ID, seed=seed,
      gym_kwargs=dict(shape=tuple(shape), episode_length=episode_length))


def load_dict_obs(seed: Optional[int] = None
                 ) -> suite_gymnasium.GymnasiumWrapper:
  """DictObs-v0 as a PyEnvironment."""
  return suite_gymnasium.load(DICT_OBS_ID, seed=seed)


def load_recall(seed: Optional[int] = None, delay: int = 4
               ) -> suite_gymnasium.GymnasiumWrapper:
  """Recall-v0 as a PyEnvironment."""
  return suite_gymnasium.load(RECALL_ID, seed=seed,
                              gym_kwargs=dict(delay=delay))
