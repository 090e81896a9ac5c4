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

import functools
from typing import Callable, Optional

from tf_agents.environments import batched_py_environment
from tf_agents.environments import parallel_py_environment
from tf_agents.environments import py_environment
from tf_agents.system import system_multiprocessing as multiprocessing

EnvLoader = Callable[..., py_environment.PyEnvironment]


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
      instead of in-process (`BatchedPyEnvironment`). Needs multiprocessing
      initialised, see the module docstring.

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
  envs = [env_loader(seed=env_seed) for env_seed in seeds]
  # Gymnasium envs hold the GIL while stepping, so a thread pool only adds
  # overhead on our 2-core machines.
  return batched_py_environment.BatchedPyEnvironment(envs,
                                                     multithreading=False)


def last_infos(batched_env: py_environment.PyEnvironment):
  """Gymnasium info dicts of the last step of each env in a batch.

  Works for both batch kinds (a subprocess env answers through its pipe), so
  metrics such as MiniGrid's distinct `agent_pos` count can read them.

  Args:
    batched_env: A `make_batched_env` result whose envs are
      `GymnasiumWrapper`s.

  Returns:
    A list of `num_envs` info dicts, in batch order.
  """
  return [env.last_info for env in batched_env.envs]
