"""bsuite (Osband et al. 2020, "Behaviour Suite for RL") as TF-Agents envs.

`load('bsuite/deep_sea/3')` (gin: `bsuite.load.bsuite_id`) gives the same
kind of env as `suite_gymnasium.load`: a `GymnasiumWrapper`, so batches,
auto-reset, seeding and the termination/truncation discounts are those of
every other loader, for all three agent families. The bsuite env (a
dm_env) is adapted to gymnasium by `BsuiteGymEnv`; dm_env's LAST with
discount 0 is a termination, with a discount above 0 a truncation.

bsuite's own logs: each training env of a run (not an evaluation env,
built inside `run_context.evaluation()`: bsuite scores the episodes the
agent learns from) journals its ended episodes under the run directory
(`run_context.run_dir()`; without one nothing is logged), and importing
this module registers the journals' end-of-run hook, which writes bsuite's
CSV files (`bsuite_journal`).

Needs the `[bsuite]` extra (`pip install 'tfa_explore[bsuite]'`).
"""

import difflib
import inspect
from typing import Optional

import gin
import gymnasium as gym
import numpy as np

from tfa_explore import errors
from tfa_explore.environments import bsuite_journal
from tfa_explore.environments import run_context
from tfa_explore.environments import suite_gymnasium

ID_PREFIX = bsuite_journal.ID_PREFIX

# Every loop writes bsuite's CSV files at a run's end.
run_context.register_end_of_run(bsuite_journal.end_of_run)


class UnknownBsuiteIdError(suite_gymnasium.UnknownEnvironmentError):
  """A bsuite id that bsuite's sweep does not list."""


def _import_bsuite():
  try:
    from bsuite import bsuite  # pylint: disable=g-import-not-at-top
    from bsuite import sweep  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise errors.ConfigError(
        f'bsuite envs need the bsuite package ({e}): pip install '
        '"tfa_explore[bsuite]".') from e
  return bsuite, sweep


def canonical_id(bsuite_id: str) -> str:
  """'bsuite/deep_sea/3' or 'deep_sea/3' -> 'deep_sea/3', checked.

  Raises:
    UnknownBsuiteIdError: not in bsuite's sweep (with close matches).
  """
  _, sweep = _import_bsuite()
  name = bsuite_journal.short_id(bsuite_id)
  if name in sweep.SWEEP:
    return name
  matches = difflib.get_close_matches(name, list(sweep.SWEEP), n=3,
                                      cutoff=0.6)
  experiment = name.partition('/')[0]
  count = sum(1 for known in sweep.SWEEP
              if known.partition('/')[0] == experiment)
  if count:
    hint = f' {experiment} has settings 0 to {count - 1}.'
  elif matches:
    hint = f' Did you mean: {", ".join(ID_PREFIX + m for m in matches)}?'
  else:
    experiments = sorted({known.partition('/')[0] for known in sweep.SWEEP})
    hint = f' Experiments: {", ".join(experiments)}.'
  raise UnknownBsuiteIdError(
      f'Unknown bsuite id {bsuite_id!r}: ids are bsuite/<experiment>/'
      f'<setting>.{hint}')


def _deep_sea_stochastic(size: int, mapping_seed: int = 0,
                         seed: Optional[int] = None):
  """bsuite's `deep_sea_stochastic.load` with a seed for its noise.

  bsuite's loader takes no seed, so its wind and reward noise would come
  from an unseeded RandomState; this builds the same env (same class,
  settings and budget) with `seed` for that noise.
  """
  from bsuite.environments import deep_sea  # pylint: disable=g-import-not-at-top
  from bsuite.experiments.deep_sea_stochastic import sweep  # pylint: disable=g-import-not-at-top
  env = deep_sea.DeepSea(size=size, deterministic=False,
                         mapping_seed=mapping_seed, seed=seed)
  env.bsuite_num_episodes = sweep.NUM_EPISODES
  return env


# Experiments whose bsuite loader takes no seed although the env draws
# random numbers after it is built: built here with ours instead.
# (tests/test_bsuite_env.py loads every experiment twice with one seed, so
# a new one of these in bsuite fails there.)
_SEEDED_LOADERS = {'deep_sea_stochastic': _deep_sea_stochastic}


def raw_env(bsuite_id: str, seed: Optional[int] = None):
  """bsuite's own env (a dm_env) for `bsuite_id`, seeded from `seed`.

  The experiment's settings are bsuite's (`sweep.SETTINGS`), so every copy
  is the same task (deep_sea's action mapping is its `mapping_seed`). Its
  randomness after that (memory_len's contexts, cartpole's starts, reward
  noise, deep_sea_stochastic's wind) follows `seed`: bsuite's settings
  leave the seed out or set it to None (a fresh random stream per env).
  """
  bsuite, sweep = _import_bsuite()
  name = canonical_id(bsuite_id)
  kwargs = dict(sweep.SETTINGS[name])
  experiment = name.partition('/')[0]
  make = _SEEDED_LOADERS.get(experiment,
                             bsuite.EXPERIMENT_NAME_TO_ENVIRONMENT[experiment])
  if (seed is not None and kwargs.get('seed') is None and
      'seed' in inspect.signature(make).parameters):
    kwargs['seed'] = seed
  return make(**kwargs)


def episode_budget(bsuite_id: str) -> int:
  """bsuite's episode count for `bsuite_id` (10,000 for most)."""
  return int(raw_env(bsuite_id).bsuite_num_episodes)


def _space(spec, flatten: bool = False) -> gym.Space:
  from dm_env import specs  # pylint: disable=g-import-not-at-top
  if isinstance(spec, specs.DiscreteArray):
    return gym.spaces.Discrete(spec.num_values)
  shape = (int(np.prod(spec.shape)),) if flatten else spec.shape
  if isinstance(spec, specs.BoundedArray):
    return gym.spaces.Box(
        np.broadcast_to(spec.minimum, spec.shape).reshape(shape),
        np.broadcast_to(spec.maximum, spec.shape).reshape(shape),
        shape=shape, dtype=spec.dtype)
  return gym.spaces.Box(-np.inf, np.inf, shape=shape, dtype=spec.dtype)


class BsuiteGymEnv(gym.Env):
  """A bsuite env as a gymnasium env; journals its episodes if given one.

  Observations are flattened to a vector, as bsuite's reference agents do
  (`snt.Flatten`): deep_sea's N x N grid, memory_len's context row.
  """

  metadata = {'render_modes': []}

  def __init__(self, env,
               journal: Optional[bsuite_journal.EpisodeJournal] = None):
    self._env = env
    self._journal = journal
    self.observation_space = _space(env.observation_spec(), flatten=True)
    self.action_space = _space(env.action_spec())
    self._length = 0
    self._return = 0.0

  @property
  def bsuite_env(self):
    return self._env

  def reset(self, *, seed=None, options=None):
    # bsuite envs are seeded when built (`raw_env`); a reset seed has no
    # bsuite equivalent.
    del seed, options
    step = self._env.reset()
    self._length, self._return = 0, 0.0
    return np.ravel(step.observation), {}

  def step(self, action):
    step = self._env.step(int(action))
    reward = float(step.reward or 0.0)
    self._length += 1
    self._return += reward
    terminated = truncated = False
    if step.last():
      terminated = not step.discount
      truncated = not terminated
      if self._journal is not None:
        self._journal.record(self._length, self._return,
                             self._env.bsuite_info())
    return np.ravel(step.observation), reward, terminated, truncated, {}

  def close(self):
    if self._journal is not None:
      self._journal.close()


@gin.configurable(module='bsuite', denylist=['seed'])
def load(bsuite_id: str = gin.REQUIRED,
         seed: Optional[int] = None,
         discount: float = 1.0,
         record: bool = True) -> suite_gymnasium.GymnasiumWrapper:
  """A bsuite experiment as a TF-Agents PyEnvironment.

  Args:
    bsuite_id: 'bsuite/<experiment>/<setting>' (or without the prefix),
      e.g. 'bsuite/deep_sea/3' or 'bsuite/memory_len/10'.
    seed: Seeds the env's randomness after its settings (`raw_env`).
    discount: Discount returned on non-terminal steps (1.0: agents apply
      their own gamma).
    record: Journal this env's episodes for bsuite's CSV log (training
      envs of a run only; see the module docstring).

  Returns:
    A `GymnasiumWrapper` whose `env_id` is 'bsuite/<experiment>/<setting>'
    and whose `episode_budget` is bsuite's for that id.

  Raises:
    UnknownBsuiteIdError: an id bsuite does not know.
    errors.ConfigError: bsuite is not installed.
  """
  name = canonical_id(bsuite_id)
  journal = None
  root_dir = run_context.run_dir()
  if record and root_dir and not run_context.in_evaluation():
    journal = bsuite_journal.journal(root_dir, name, seed)
  env = BsuiteGymEnv(raw_env(name, seed), journal)
  # The episode budget tells the loops where bsuite's log ends, so a run
  # without its own `num_episodes` stops there.
  return suite_gymnasium.GymnasiumWrapper(
      env, seed=seed, discount=discount, env_id=ID_PREFIX + name,
      episode_budget=int(env.bsuite_env.bsuite_num_episodes))
