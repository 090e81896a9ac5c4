"""bsuite's own logs of a run: episode journals and bsuite's CSV files.

One run is one bsuite experiment, whatever its number of envs and actors:
each training env (`bsuite.load`) appends its ended episodes (length,
return, what `bsuite_info()` added) to a journal file of its own under
`<run dir>/bsuite/episodes/`, and `write_csv` merges the journals in the
order the episodes ended into the CSV file bsuite's CSV logger would write
(`<run dir>/bsuite/bsuite_id_-_<id>.csv`, rows at bsuite's logarithmic
episode counts and at the last episode), which bsuite's analysis reads
unchanged. Episodes past bsuite's budget (`bsuite_num_episodes`, or the
run's own smaller one) are left out. Journals are append-only, one line
per episode, so a killed or resumed run keeps what it logged.

`bsuite.load` registers `end_of_run` with `run_context`, so every loop
writes the CSV files when a run ends; the sweep script and bsuite's
analysis read them.
"""

import glob
import itertools
import json
import os
import time
from typing import Any, Dict, List, Optional

from absl import logging

from tfa_explore.utils import files

ID_PREFIX = 'bsuite/'
LOG_DIR = 'bsuite'  # under the run directory
JOURNAL_DIR = 'episodes'  # under LOG_DIR
# `bsuite_info()` values that are not running totals (cartpole's best
# episode); all others are summed over envs.
_MAX_KEYS = frozenset(['best_episode'])
_JOURNALS = itertools.count()


class EpisodeJournal:
  """One JSON line per ended episode, appended and flushed at once.

  Each line holds what the episode added to the env's running
  `bsuite_info()` totals, so lines of many envs sum to bsuite's totals. A
  kill tears at most the line being written; `write_csv` skips it.
  """

  def __init__(self, path: str):
    self.path = path
    self._file = None
    self._totals = {}

  def record(self, length: int, episode_return: float,
             info_totals: Dict[str, float]) -> None:
    """Appends one ended episode; `info_totals` is the env's `bsuite_info()`
    after it."""
    if self._file is None:
      os.makedirs(os.path.dirname(self.path), exist_ok=True)
      self._file = open(self.path, 'a')  # pylint: disable=consider-using-with
    self._file.write(json.dumps({
        'time': time.time(), 'length': length, 'return': episode_return,
        'info': self._added(info_totals)}) + '\n')
    self._file.flush()

  def _added(self, info_totals: Dict[str, float]) -> Dict[str, float]:
    info = {key: float(value) for key, value in info_totals.items()}
    added = {key: value if key in _MAX_KEYS
             else value - self._totals.get(key, 0.0)
             for key, value in info.items()}
    self._totals = info
    return added

  def close(self) -> None:
    if self._file is not None:
      self._file.close()
      self._file = None


def _safe(name: str) -> str:
  from bsuite.logging import csv_logging  # pylint: disable=g-import-not-at-top
  return name.replace('/', csv_logging.SAFE_SEPARATOR)


def short_id(bsuite_id: str) -> str:
  """'bsuite/deep_sea/3' or 'deep_sea/3' -> 'deep_sea/3' (unchecked)."""
  return bsuite_id[len(ID_PREFIX):] if bsuite_id.startswith(
      ID_PREFIX) else bsuite_id


def journal(root_dir: str, bsuite_id: str,
            seed: Optional[int]) -> EpisodeJournal:
  """A new journal of one env of `bsuite_id` in the run at `root_dir`.

  Its file name is unique to the env (process, seed, count), so envs in
  other processes, a resumed run's envs included, never share a file.
  """
  return EpisodeJournal(os.path.join(
      root_dir, LOG_DIR, JOURNAL_DIR,
      f'{_safe(short_id(bsuite_id))}.{os.getpid()}.{seed}.{next(_JOURNALS)}'
      '.jsonl'))


def csv_path(root_dir: str, bsuite_id: str) -> str:
  """Where `write_csv` puts the CSV log of `bsuite_id` (bsuite's name)."""
  from bsuite.logging import csv_logging  # pylint: disable=g-import-not-at-top
  return os.path.join(
      root_dir, LOG_DIR,
      f'{csv_logging.BSUITE_PREFIX}{_safe(short_id(bsuite_id))}.csv')


def read_journals(root_dir: str) -> Dict[str, List[Dict[str, Any]]]:
  """{bsuite id: its episodes in the order they ended} of a run."""
  from bsuite import sweep  # pylint: disable=g-import-not-at-top
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

  Idempotent (rewritten from the journals, atomically); run at the end
  of every run (`end_of_run`) and by benchmarks/bsuite_sweep.py.

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
  from bsuite import sweep  # pylint: disable=g-import-not-at-top
  written = []
  for name, episodes in sorted(read_journals(root_dir).items()):
    budget = sweep.EPISODES[name]
    if max_episodes is not None:
      budget = min(budget, max_episodes)
    rows = csv_rows(episodes, budget)
    path = csv_path(root_dir, name)
    files.atomic_write_text(path, pd.DataFrame(rows).to_csv(index=False))
    written.append(path)
  return written


def end_of_run(root_dir: str, num_episodes: Optional[int]) -> None:
  """The end-of-run hook `bsuite.load` registers: bsuite's CSV logs, cut
  at the run's episode budget."""
  for path in write_csv(root_dir, num_episodes):
    logging.info('bsuite log: %s', path)
