"""Batches of environments, in-process or one subprocess each.

`make_batched_env(loader, num_envs, seed)` gives env i the seed `seed + i`,
so a run is reproducible from one seed and no two envs share a stream.

Subprocess environments (`parallel=True`) use TF-Agents'
`ParallelPyEnvironment`, which refuses to start unless
`tf_agents.system.system_multiprocessing` was initialised, because it
re-creates global state (the gin config, the old gym registry) in each
worker. A binary must therefore start through `handle_main`, which also
runs absl's `app.run`:

    from tf_agents.system import system_multiprocessing as multiprocessing

    if __name__ == '__main__':
      multiprocessing.handle_main(main)  # instead of app.run(main)

Tests, notebooks and other code that does not own `__main__` call
`enable_multiprocessing()` below once (tests/test_batched.py does).
"""

import abc
import functools
from typing import Callable, Optional, Sequence

import numpy as np
import tensorflow as tf
from tf_agents.environments import batched_py_environment
from tf_agents.environments import parallel_py_environment
from tf_agents.environments import py_environment
from tf_agents.system import system_multiprocessing as multiprocessing
from tf_agents.trajectories import time_step as ts

from tfa_explore.environments import suite_gymnasium

EnvLoader = Callable[..., py_environment.PyEnvironment]


class NativeBatching(abc.ABC):
  """An env that knows a faster way to step many copies of itself.

  `make_batched_env` builds one env with the loader and, when it is a
  `NativeBatching`, asks it for the batch instead of building the others
  (`atari.AtariWrapper`: ALE's C++ vector env). The batch must give the
  same time steps as a `GymnasiumBatch` of the loader's envs.
  """

  @abc.abstractmethod
  def make_batch(self, seeds: Sequence[Optional[int]]) -> 'NativeBatch':
    """A `NativeBatch` of `len(seeds)` envs like this one.

    Env i is seeded with `seeds[i]` (None: random). The batch auto-resets
    as `GymnasiumBatch` does: the step after LAST is a FIRST, its action
    ignored.
    """


class NativeBatch(py_environment.PyEnvironment, abc.ABC):
  """A batched PyEnvironment made by a `NativeBatching` env."""

  @abc.abstractmethod
  def last_infos(self):
    """The info dict of each env's last step, in batch order."""


def enable_multiprocessing() -> None:
  """Initialises TF-Agents multiprocessing outside `handle_main`; idempotent.

  TF-Agents' own `enable_interactive_mode` raises if called twice, which
  breaks when several tests (or a notebook cell run twice) need it.
  """
  if not multiprocessing.multiprocessing_core.initialized():
    multiprocessing.enable_interactive_mode()


def env_seeds(seed: Optional[int], num_envs: int):
  """Seeds of the envs in a batch: `seed + i`, or all None for random."""
  if seed is None:
    return [None] * num_envs
  return [seed + i for i in range(num_envs)]


def make_batched_env(env_loader: EnvLoader,
                     num_envs: int,
                     seed: Optional[int],
                     parallel: bool = False
                    ) -> py_environment.PyEnvironment:
  """Makes `num_envs` copies of an environment stepped as one batch.

  Args:
    env_loader: Callable taking `seed=` and returning a PyEnvironment, e.g.
      `functools.partial(atari.load, 'ALE/Pong-v5')` or a gin-configured
      `atari.load`. With `parallel=True` it is pickled with cloudpickle, so
      lambdas and partials work.
    num_envs: Batch size.
    seed: Env i is loaded with `seed=seed + i`; None gives every env a
      random seed.
    parallel: Step each env in its own subprocess (`ParallelPyEnvironment`)
      instead of in-process. Needs multiprocessing initialised, see the
      module docstring. In-process batches of `GymnasiumWrapper`s are a
      `GymnasiumBatch` (the same time steps as TF-Agents'
      `BatchedPyEnvironment`, about 5x less CPU per step), unless the
      loader's env is a `NativeBatching` (Atari: ALE's vector env); other
      envs are a `BatchedPyEnvironment`.

  Returns:
    A batched PyEnvironment whose time steps and actions have a leading
    dimension of `num_envs`.

  Raises:
    ValueError: `num_envs` < 1.
    RuntimeError: `parallel=True` and multiprocessing was not initialised.
  """
  if num_envs < 1:
    raise ValueError(f'num_envs must be >= 1, got {num_envs}.')
  seeds = env_seeds(seed, num_envs)
  if parallel:
    if not multiprocessing.multiprocessing_core.initialized():
      raise RuntimeError(
          'make_batched_env(parallel=True) needs TF-Agents multiprocessing: '
          'start the binary with tf_agents.system.system_multiprocessing.'
          'handle_main(main), or call '
          'tfa_explore.environments.batched.enable_multiprocessing() first.')
    constructors = [functools.partial(env_loader, seed=env_seed)
                    for env_seed in seeds]
    return parallel_py_environment.ParallelPyEnvironment(
        constructors, start_serially=True)
  first = env_loader(seed=seeds[0])
  if isinstance(first, NativeBatching):
    try:
      return first.make_batch(seeds)
    finally:
      first.close()
  envs = [first] + [env_loader(seed=env_seed) for env_seed in seeds[1:]]
  if all(isinstance(env, suite_gymnasium.GymnasiumWrapper) for env in envs):
    return GymnasiumBatch(envs)
  # Gymnasium envs hold the GIL while stepping, so a thread pool only adds
  # overhead on our 2-core machines.
  return batched_py_environment.BatchedPyEnvironment(envs,
                                                     multithreading=False)


class GymnasiumBatch(py_environment.PyEnvironment):
  """`GymnasiumWrapper`s stepped as one batch, building one `TimeStep`.

  The time steps are those of `BatchedPyEnvironment` over the same
  wrappers (tests/test_batched.py compares them): each env auto-resets on
  the step after its LAST (that step's action is ignored and it returns
  FIRST, reward 0, discount 1), terminations have discount 0, truncations
  the wrapper's discount. What it saves is TF-Agents' per-env `TimeStep`
  construction and nest stacking, which cost about 110 us per env step
  against about 20 us for a gymnasium CartPole step itself
  (docs/performance.md).
  """

  def __init__(self, envs: Sequence[suite_gymnasium.GymnasiumWrapper]):
    super().__init__(handle_auto_reset=False)
    if not envs:
      raise ValueError('GymnasiumBatch needs at least one env.')
    self._envs = list(envs)
    self._observation_spec = envs[0].observation_spec()
    self._action_spec = envs[0].action_spec()
    for index, env in enumerate(self._envs):
      if (env.observation_spec() != self._observation_spec or
          env.action_spec() != self._action_spec):
        raise ValueError(
            f'Env {index} of the batch has specs {env.observation_spec()}, '
            f'{env.action_spec()}; env 0 has {self._observation_spec}, '
            f'{self._action_spec}.')
    self._needs_reset = np.ones(len(envs), bool)
    self._discounts = np.array([env.discount for env in envs], np.float32)

  @property
  def envs(self):
    return self._envs

  @property
  def batched(self) -> bool:
    return True

  @property
  def batch_size(self) -> int:
    return len(self._envs)

  def observation_spec(self):
    return self._observation_spec

  def action_spec(self):
    return self._action_spec

  def _stack(self, observations):
    if tf.nest.is_nested(self._observation_spec):
      return tf.nest.map_structure(lambda *parts: np.stack(parts),
                                   *observations)
    return np.stack(observations)

  def _reset(self):
    observations = [env.reset_observation() for env in self._envs]
    self._needs_reset[:] = False
    return restart_batch(len(self._envs), self._stack(observations))

  def _step(self, action):
    size = len(self._envs)
    step_types = np.empty(size, np.int32)
    rewards = np.zeros(size, np.float32)
    discounts = self._discounts.copy()
    observations = []
    actions = tf.nest.map_structure(np.asarray, action)
    for index, env in enumerate(self._envs):
      if self._needs_reset[index]:
        observations.append(env.reset_observation())
        step_types[index] = ts.StepType.FIRST
        discounts[index] = 1.0
        self._needs_reset[index] = False
        continue
      env_action = tf.nest.map_structure(lambda a, i=index: a[i], actions)
      observation, reward, terminated, truncated = env.step_arrays(
          env_action)
      observations.append(observation)
      rewards[index] = reward
      if terminated or truncated:
        step_types[index] = ts.StepType.LAST
        self._needs_reset[index] = True
        if terminated:
          discounts[index] = 0.0
      else:
        step_types[index] = ts.StepType.MID
    return ts.TimeStep(step_type=step_types, reward=rewards,
                       discount=discounts,
                       observation=self._stack(observations))

  def render(self, mode: str = 'rgb_array'):
    return np.stack([env.render(mode) for env in self._envs])

  def close(self):
    for env in self._envs:
      env.close()


def restart_batch(size: int, observation) -> ts.TimeStep:
  """The time steps of `size` envs just reset: FIRST, reward 0, discount 1.

  `observation`: the batch's observations (a nest), leading dim `size`.
  """
  return ts.TimeStep(
      step_type=np.full(size, ts.StepType.FIRST, np.int32),
      reward=np.zeros(size, np.float32),
      discount=np.ones(size, np.float32),
      observation=observation)


def current_time_step(environment: py_environment.PyEnvironment):
  """Where `environment` stands: its current time step, or a reset.

  A PyEnvironment that was never stepped raises from `current_time_step`;
  this resets it instead, so a loop can continue where a warm-up (or an
  earlier loop) left the env, or start it.
  """
  try:
    return environment.current_time_step()
  except ValueError:  # Never stepped: the PyEnvironment has no time step.
    return environment.reset()


def last_infos(batched_env: py_environment.PyEnvironment):
  """Gymnasium info dicts of the last step of each env in a batch.

  Works for every batch kind (a subprocess env answers through its pipe;
  a `NativeBatch` gives its own), so
  metrics such as MiniGrid's distinct `agent_pos` count can read them.

  Args:
    batched_env: A `make_batched_env` result whose envs are
      `GymnasiumWrapper`s.

  Returns:
    A list of `num_envs` info dicts, in batch order.
  """
  if isinstance(batched_env, NativeBatch):
    return batched_env.last_infos()
  return [env.last_info for env in batched_env.envs]
