"""Gymnasium environments as TF-Agents PyEnvironments.

TF-Agents 0.19 ships `suite_gym` for the old `gym` API only. This module
wraps gymnasium (1.x) environments with the episode semantics value-based and
actor-critic agents need:

* termination (`terminated=True`) -> `StepType.LAST` with discount 0, so value
  targets do not bootstrap past a real end;
* truncation (`truncated=True`, e.g. a time limit) -> `StepType.LAST` with
  discount 1, so value targets bootstrap from the last observation;
* the step after a LAST resets the environment (PyEnvironment auto-reset);
* `seed` seeds the first reset and the action space, so the same seed and
  the same actions give the same trajectory.
"""

import difflib
from typing import Any, Callable, Dict, Optional, Sequence

import gin
import gymnasium as gym
import numpy as np
from tf_agents.environments import py_environment
from tf_agents.specs import array_spec
from tf_agents.trajectories import time_step as ts

from tfa_explore import errors


# Both are configuration errors (the gin file names the env), so the
# binaries report them in one line with exit code 2; still ValueErrors for
# code that catches those.
class UnknownEnvironmentError(errors.ConfigError, ValueError):
  """An env id that gymnasium does not know."""


class UnsupportedSpaceError(errors.ConfigError, ValueError):
  """A gymnasium space with no TF-Agents spec equivalent."""


_PLUGINS_REGISTERED = False


def register_plugins() -> None:
  """Registers the env families tfa_explore knows: ALE, MiniGrid, ours."""
  global _PLUGINS_REGISTERED
  if _PLUGINS_REGISTERED:
    return
  try:
    import ale_py  # pylint: disable=g-import-not-at-top
    gym.register_envs(ale_py)
  except ImportError:
    pass
  try:
    import minigrid  # pylint: disable=g-import-not-at-top,unused-import
    gym.register_envs(minigrid)
  except ImportError:
    pass
  from tfa_explore.environments import stateless_cartpole  # pylint: disable=g-import-not-at-top
  stateless_cartpole.register()
  _PLUGINS_REGISTERED = True


def check_env_id(env_id: str) -> None:
  """Raises UnknownEnvironmentError naming `env_id` and close matches."""
  register_plugins()
  if env_id in gym.registry:
    return
  matches = difflib.get_close_matches(env_id, list(gym.registry), n=5,
                                      cutoff=0.6)
  hint = f' Did you mean: {", ".join(matches)}?' if matches else ''
  raise UnknownEnvironmentError(
      f'Unknown gymnasium env id {env_id!r}.{hint}')


def _float_dtype(dtype: np.dtype) -> np.dtype:
  # TF ops and Keras layers default to float32; float64 observations would
  # force casts in every network.
  return np.float32 if np.issubdtype(dtype, np.floating) else dtype


def spec_from_space(space: gym.Space, name: str = 'observation'):
  """Converts a gymnasium space to a (nest of) BoundedArraySpec."""
  if isinstance(space, gym.spaces.Discrete):
    return array_spec.BoundedArraySpec(
        shape=(), dtype=np.int64, minimum=int(space.start),
        maximum=int(space.start + space.n - 1), name=name)
  if isinstance(space, gym.spaces.MultiDiscrete):
    nvec = np.asarray(space.nvec)
    start = np.asarray(getattr(space, 'start', np.zeros_like(nvec)))
    return array_spec.BoundedArraySpec(
        shape=nvec.shape, dtype=np.int64, minimum=start,
        maximum=start + nvec - 1, name=name)
  if isinstance(space, gym.spaces.MultiBinary):
    return array_spec.BoundedArraySpec(
        shape=tuple(np.atleast_1d(space.n)), dtype=np.int8, minimum=0,
        maximum=1, name=name)
  if isinstance(space, gym.spaces.Box):
    dtype = _float_dtype(space.dtype)
    low = np.asarray(space.low, dtype=np.float64)
    high = np.asarray(space.high, dtype=np.float64)
    if np.issubdtype(dtype, np.floating):
      # Infinite bounds do not survive a cast to float32 bounded specs
      # cleanly; clamp to the dtype's range.
      info = np.finfo(dtype)
      low = np.clip(low, info.min, info.max)
      high = np.clip(high, info.min, info.max)
    return array_spec.BoundedArraySpec(
        shape=space.shape, dtype=dtype, minimum=low.astype(dtype),
        maximum=high.astype(dtype), name=name)
  if isinstance(space, gym.spaces.Dict):
    return {key: spec_from_space(sub, name=key)
            for key, sub in space.spaces.items()}
  if isinstance(space, gym.spaces.Tuple):
    return tuple(spec_from_space(sub, name=f'{name}_{i}')
                 for i, sub in enumerate(space.spaces))
  raise UnsupportedSpaceError(
      f'Space {name!r} of type {type(space).__name__} ({space}) has no '
      'TF-Agents spec; drop it with a gymnasium wrapper (e.g. '
      'gymnasium.wrappers.FilterObservation) before wrapping.')


def _convert(value, spec):
  """Casts an observation (nest) to the dtypes of `spec`."""
  if isinstance(spec, dict):
    return {key: _convert(value[key], sub) for key, sub in spec.items()}
  if isinstance(spec, tuple):
    return tuple(_convert(v, s) for v, s in zip(value, spec))
  return np.asarray(value, dtype=spec.dtype).reshape(spec.shape)


class GymnasiumWrapper(py_environment.PyEnvironment):
  """Wraps a `gymnasium.Env` as a TF-Agents `PyEnvironment`."""

  def __init__(self, env: gym.Env, seed: Optional[int] = None,
               discount: float = 1.0, env_id: Optional[str] = None,
               episode_budget: Optional[int] = None):
    super().__init__(handle_auto_reset=True)
    self._env = env
    self._env_id = env_id or getattr(env.spec, 'id', type(env).__name__)
    self._episode_budget = episode_budget
    self._seed = seed
    self._first_reset = True
    self._discount = np.float32(discount)
    self._observation_spec = spec_from_space(env.observation_space)
    self._action_spec = spec_from_space(env.action_space, name='action')
    if seed is not None:
      env.action_space.seed(seed)
    self._last_info: Dict[str, Any] = {}

  @property
  def gym(self) -> gym.Env:
    return self._env

  @property
  def env_id(self) -> str:
    return self._env_id

  @property
  def episode_budget(self) -> Optional[int]:
    """Episodes the env's task is scored over (bsuite's), or None.

    The loops end a run there unless it binds its own `num_episodes`
    (`run_kit.episode_budget`); None leaves the length to the run.
    """
    return self._episode_budget

  @property
  def max_episode_steps(self) -> Optional[int]:
    """The episode limit gymnasium's TimeLimit enforces, or None.

    What gymnasium's spec declares (`gymnasium.make(max_episode_steps=)`
    or the registration); runs check settings that need whole episodes
    of some length against it.
    """
    spec = getattr(self._env, 'spec', None)
    limit = getattr(spec, 'max_episode_steps', None)
    return int(limit) if limit is not None else None

  @property
  def last_info(self) -> Dict[str, Any]:
    """The gymnasium `info` dict of the most recent reset or step."""
    return self._last_info

  def observation_spec(self):
    return self._observation_spec

  def action_spec(self):
    return self._action_spec

  @property
  def discount(self) -> np.float32:
    """The discount of non-terminal steps (truncations included)."""
    return self._discount

  def reset_observation(self):
    """Resets the gymnasium env; its observation, cast to the spec.

    The first reset uses the seed; later resets continue the env's own
    RNG, so the whole stream is still deterministic given the first seed.
    `_reset` and the batched fast path (`batched.GymnasiumBatch`) both come
    here, so both see the same episodes.
    """
    if self._first_reset:
      observation, info = self._env.reset(seed=self._seed)
      self._first_reset = False
    else:
      observation, info = self._env.reset()
    self._last_info = info
    return _convert(observation, self._observation_spec)

  def step_arrays(self, action):
    """Steps the gymnasium env: (observation, reward, terminated, truncated).

    The observation is cast to the spec and the reward is float32; no
    `TimeStep` is built (`_step` builds one; a batch builds one for all its
    envs).
    """
    action = np.asarray(action)
    if isinstance(self._env.action_space, gym.spaces.Discrete):
      action = int(action)
    observation, reward, terminated, truncated, info = self._env.step(action)
    self._last_info = info
    return (_convert(observation, self._observation_spec),
            np.float32(reward), bool(terminated), bool(truncated))

  def _reset(self):
    return ts.restart(self.reset_observation())

  def _step(self, action):
    observation, reward, terminated, truncated = self.step_arrays(action)
    reward = np.asarray(reward, dtype=np.float32)
    if terminated:
      return ts.termination(observation, reward)
    if truncated:
      return ts.truncation(observation, reward, self._discount)
    return ts.transition(observation, reward, self._discount)

  def render(self, mode: str = 'rgb_array'):
    if mode != 'rgb_array':
      raise ValueError(f'Only rgb_array rendering is supported, got {mode!r}.')
    return self._env.render()

  def seed(self, seed):
    self._seed = seed
    self._first_reset = True
    self._env.action_space.seed(seed)

  def close(self):
    self._env.close()


@gin.configurable(module='suite_gymnasium', denylist=['seed'])
def load(env_id: str = gin.REQUIRED,
         seed: Optional[int] = None,
         max_episode_steps: Optional[int] = None,
         discount: float = 1.0,
         gym_kwargs: Optional[Dict[str, Any]] = None,
         gym_env_wrappers: Sequence[Callable[[gym.Env], gym.Env]] = (),
         render_mode: Optional[str] = None) -> GymnasiumWrapper:
  """Makes gymnasium env `env_id` and wraps it for TF-Agents.

  Args:
    env_id: A registered gymnasium id, e.g. 'CartPole-v1' or
      'ALE/MontezumaRevenge-v5'.
    seed: Seeds the first reset and the action space; None for a random one.
    max_episode_steps: Overrides the registered time limit (env steps).
    discount: Discount returned on non-terminal steps (1.0: agents apply
      their own gamma).
    gym_kwargs: Extra keyword arguments for `gymnasium.make`.
    gym_env_wrappers: Gymnasium wrappers applied in order after make.
    render_mode: e.g. 'rgb_array' to allow `render()`.

  Returns:
    A `GymnasiumWrapper` (a TF-Agents PyEnvironment).

  Raises:
    UnknownEnvironmentError: `env_id` is not registered.
  """
  check_env_id(env_id)
  kwargs = dict(gym_kwargs or {})
  if max_episode_steps is not None:
    kwargs['max_episode_steps'] = max_episode_steps
  if render_mode is not None:
    kwargs['render_mode'] = render_mode
  env = gym.make(env_id, **kwargs)
  for wrapper in gym_env_wrappers:
    env = wrapper(env)
  return GymnasiumWrapper(env, seed=seed, discount=discount, env_id=env_id)
