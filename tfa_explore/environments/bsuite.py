"""bsuite (Osband et al. 2020, "Behaviour Suite for RL") as TF-Agents envs.

`load('bsuite/deep_sea/3')` (gin: `bsuite.load.bsuite_id`) gives the same
kind of env as `suite_gymnasium.load`: a `GymnasiumWrapper`, so batches,
auto-reset, seeding and the termination/truncation discounts are those of
every other loader, for all three agent families. The bsuite env (a
dm_env) is adapted to gymnasium by `BsuiteGymEnv`; dm_env's LAST with
discount 0 is a termination, with a discount above 0 a truncation.

bsuite's own logs. One run is one bsuite experiment, whatever its number
of envs and actors: each training env appends its ended episodes (length,
return, what `bsuite_info()` added) to a journal file under
`<run dir>/bsuite/episodes/`, and `write_csv` merges the journals in the
order the episodes ended into the CSV file bsuite's CSV logger would write
(`<run dir>/bsuite/bsuite_id_-_<id>.csv`, rows at bsuite's logarithmic
episode counts and at the last episode), which bsuite's analysis reads
unchanged. Episodes past bsuite's budget (`bsuite_num_episodes`) are left
out. Journals are append-only, one line per episode, so a killed or
resumed run keeps what it logged. Evaluation envs (built inside
`run_context.evaluation()`) keep no journal: bsuite scores the episodes
the agent learns from. The run directory comes from
`run_context.run_dir()`; without one (an env built outside a run) nothing
is logged.

Needs the `[bsuite]` extra (`pip install 'tfa_explore[bsuite]'`).
"""

import difflib
import glob
import inspect
import itertools
import json
import os
import time
from typing import Any, Dict, List, Optional

import gin
import gymnasium as gym
import numpy as np

from tfa_explore import errors
from tfa_explore.environments import run_context
from tfa_explore.environments import suite_gymnasium
from tfa_explore.utils import files

ID_PREFIX = 'bsuite/'
LOG_DIR = 'bsuite'  # under the run directory
JOURNAL_DIR = 'episodes'  # under LOG_DIR
# `bsuite_info()` values that are not running totals (cartpole's best
# episode); all others are summed over envs.
_MAX_KEYS = frozenset(['best_episode'])
_JOURNALS = itertools.count()


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
  name = bsuite_id[len(ID_PREFIX):] if bsuite_id.startswith(
      ID_PREFIX) else bsuite_id
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


class EpisodeJournal:
  """One JSON line per ended episode, appended and flushed at once.

  A kill tears at most the line being written; `write_csv` skips it.
  """

  def __init__(self, path: str):
    self.path = path
    self._file = None

  def record(self, length: int, episode_return: float,
             info: Dict[str, float]) -> None:
    if self._file is None:
      os.makedirs(os.path.dirname(self.path), exist_ok=True)
      self._file = open(self.path, 'a')  # pylint: disable=consider-using-with
    self._file.write(json.dumps({
        'time': time.time(), 'length': length, 'return': episode_return,
        'info': info}) + '\n')
    self._file.flush()

  def close(self) -> None:
    if self._file is not None:
      self._file.close()
      self._file = None


class BsuiteGymEnv(gym.Env):
  """A bsuite env as a gymnasium env; journals its episodes if given one.

  Observations are flattened to a vector, as bsuite's reference agents do
  (`snt.Flatten`): deep_sea's N x N grid, memory_len's context row.
  """

  metadata = {'render_modes': []}

  def __init__(self, env, journal: Optional[EpisodeJournal] = None):
    self._env = env
    self._journal = journal
    self.observation_space = _space(env.observation_spec(), flatten=True)
    self.action_space = _space(env.action_spec())
    self._length = 0
    self._return = 0.0
    self._info = {}

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
        self._journal.record(self._length, self._return, self._info_added())
    return np.ravel(step.observation), reward, terminated, truncated, {}

  def _info_added(self) -> Dict[str, float]:
    """What this episode added to the env's running `bsuite_info()`."""
    info = {key: float(value)
            for key, value in self._env.bsuite_info().items()}
    added = {key: value if key in _MAX_KEYS
             else value - self._info.get(key, 0.0)
             for key, value in info.items()}
    self._info = info
    return added

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
    journal = EpisodeJournal(os.path.join(
        root_dir, LOG_DIR, JOURNAL_DIR,
        f'{_safe(name)}.{os.getpid()}.{seed}.{next(_JOURNALS)}.jsonl'))
  env = BsuiteGymEnv(raw_env(name, seed), journal)
  # The episode budget tells the loops where bsuite's log ends, so a run
  # without its own `num_episodes` stops there.
  return suite_gymnasium.GymnasiumWrapper(
      env, seed=seed, discount=discount, env_id=ID_PREFIX + name,
      episode_budget=int(env.bsuite_env.bsuite_num_episodes))


def _safe(name: str) -> str:
  from bsuite.logging import csv_logging  # pylint: disable=g-import-not-at-top
  return name.replace('/', csv_logging.SAFE_SEPARATOR)


def csv_path(root_dir: str, bsuite_id: str) -> str:
  """Where `write_csv` puts the CSV log of `bsuite_id` (bsuite's name)."""
  from bsuite.logging import csv_logging  # pylint: disable=g-import-not-at-top
  return os.path.join(
      root_dir, LOG_DIR,
      f'{csv_logging.BSUITE_PREFIX}{_safe(canonical_id(bsuite_id))}.csv')


def read_journals(root_dir: str) -> Dict[str, List[Dict[str, Any]]]:
  """{bsuite id: its episodes in the order they ended} of a run."""
  _, sweep = _import_bsuite()
  safe_ids = {_safe(name): name for name in sweep.SWEEP}
  episodes = {}
  for path in glob.glob(os.path.join(root_dir, LOG_DIR, JOURNAL_DIR,
                                     '*.jsonl')):
    name = safe_ids.get(os.path.basename(path).split('.')[0])
    if name is None:
      continue
    with open(path) as f:
      for line in f:
        try:
          episodes.setdefault(name, []).append(json.loads(line))
        except json.JSONDecodeError:
          pass  # the line a kill tore
  for records in episodes.values():
    records.sort(key=lambda record: record['time'])
  return episodes


def csv_rows(episodes: List[Dict[str, Any]],
             budget: int) -> List[Dict[str, float]]:
  """bsuite's logging rows for the first `budget` episodes.

  The columns of bsuite's `Logging` wrapper (steps, episode, total_return,
  episode_len, episode_return, then `bsuite_info()`'s), at its
  logarithmic episode counts and at the last episode.
  """
  from bsuite.utils import wrappers  # pylint: disable=g-import-not-at-top
  episodes = episodes[:budget]
  rows = []
  steps, total_return, info = 0, 0.0, {}
  for number, episode in enumerate(episodes, start=1):
    steps += int(episode['length'])
    total_return += float(episode['return'])
    for key, value in episode['info'].items():
      info[key] = (max(info.get(key, value), value) if key in _MAX_KEYS
                   else info.get(key, 0.0) + value)
    # pylint: disable-next=protected-access
    if wrappers._logarithmic_logging(number) or number == len(episodes):
      rows.append(dict(steps=steps, episode=number, total_return=total_return,
                       episode_len=int(episode['length']),
                       episode_return=float(episode['return']), **info))
  return rows


def write_csv(root_dir: str,
              max_episodes: Optional[int] = None) -> List[str]:
  """Writes bsuite's CSV log of each bsuite id journaled under root_dir.

  Idempotent (rewritten from the journals, atomically); called at the end
  of every run and by benchmarks/bsuite_sweep.py.

  Args:
    root_dir: the run directory.
    max_episodes: a smaller budget than bsuite's (the run's own
      `num_episodes`): the episodes its envs ended after it are left out,
      as bsuite's reference agents stop at theirs.

  Returns:
    The CSV paths written (none for a run on other envs).
  """
  if not os.path.isdir(os.path.join(root_dir, LOG_DIR, JOURNAL_DIR)):
    return []
  import pandas as pd  # pylint: disable=g-import-not-at-top
  written = []
  for name, episodes in sorted(read_journals(root_dir).items()):
    budget = episode_budget(name)
    if max_episodes is not None:
      budget = min(budget, max_episodes)
    rows = csv_rows(episodes, budget)
    path = csv_path(root_dir, name)
    files.atomic_write_text(path, pd.DataFrame(rows).to_csv(index=False))
    written.append(path)
  return written
