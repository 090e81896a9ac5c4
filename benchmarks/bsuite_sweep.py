r"""Runs agents over bsuite ids and scores them with bsuite's own analysis.

  python benchmarks/bsuite_sweep.py \
      --agent=r2d2_rnd=gin/r2d2_rnd/bsuite_deep_sea.gin \
      --agent=r2d2=gin/r2d2/bsuite_deep_sea.gin \
      --reference=boot_dqn --reference=dqn --reference=random \
      --bsuite_ids=deep_sea/0-10 --work_dir=runs/bsuite_deep_sea \
      --out_dir=benchmarks/results/bsuite/deep_sea \
      [--num_episodes=2000] [--jobs=2] [--gin_bindings=B ...] [--score_only]

Our agents (`--agent=NAME=GIN_FILE`, a gin file that defines the macros
`BSUITE_ID` and `NUM_EPISODES`, e.g. gin/<family>/bsuite_<experiment>.gin)
run through train/train_eval.py; bsuite's reference agents
(`--reference=NAME`: dqn, boot_dqn, actor_critic_rnn, actor_critic, random)
through their own `bsuite.baselines...run` scripts (these need bsuite's
[baselines] extra: tqdm, dm-sonnet, trfl). One process per
(agent, id), `--jobs` at a time, each in `<work_dir>/<agent>/<experiment>-
<setting>/` with its output in `sweep.log` there. Between a run's `start`
and `done` lines, a `progress` line every minute: its episodes so far
(`episodes_logged`) against its budget.

--bsuite_ids: a comma list of ids (`deep_sea/3` or `bsuite/deep_sea/3`),
inclusive ranges (`deep_sea/0-10`) or whole experiments (`deep_sea`: all its
settings). Every id is checked against bsuite's sweep before anything runs.

--num_episodes: a smaller episode budget than bsuite's (10,000 for most
experiments), for trials: our runs get it as `NUM_EPISODES`, reference
agents as --num_episodes. Without it our runs stop at bsuite's own budget
(the gin file's NUM_EPISODES, None in the shipped files). bsuite's scores
assume the full budget; the table says when it was not run (`*`), and
scores.md notes a --num_episodes below bsuite's budget.

--stop_when_solved: end a run once bsuite's analysis counts its id solved
(experiments whose analysis has `find_solution`: deep_sea and
deep_sea_stochastic). That analysis scores an id by the first logged
episode below its regret threshold and counts a solved id as finished, so
the score is the full budget's; the episodes after it, which only the
regret plots show, are not run. Checked every 30 s on the rows bsuite logs
(its logarithmic episode counts); the run is stopped with SIGTERM (ours
save a checkpoint) and marked finished with the episode it was solved at.

Resumable: a run that exited 0 gets `SWEEP_DONE.json` and is skipped next
time, unless its settings (gin file, bindings, budget) changed; anything
else is started again: our runs resume from their checkpoints, reference
agents start over (--overwrite). A failed run is reported with the end of
its log, the others carry on, and the sweep exits 1 at the end. Every ended
attempt appends its wall and CPU seconds to `SWEEP_ATTEMPTS.jsonl`; CPU
seconds are those of the process and the descendants it waited for
(`os.wait4`), so CPU time of a child left running or not waited for is
missing.

Scoring (also alone with --score_only): our runs' journals become bsuite's
CSV logs (`tfa_explore.environments.bsuite_journal.write_csv`, idempotent); each
agent's CSVs are copied to `<work_dir>/<agent>/csv/`, read with bsuite's
`csv_load.load_bsuite` and scored with `summary_analysis.bsuite_score`
(scores in [0, 1]). Written to --out_dir: `scores.md` (the table, the
command line with its paths relative to the folder it was run in, commit
and date), `scores.csv`, and bsuite's plots as PNG: the bar plot
(`bsuite_bar_plot_compare`, or `bsuite_bar_plot` for one agent) and, per
experiment, every `plot_*` of its analysis module, also those it takes from
another experiment's (deep_sea: scaling, scaling_log, regret, seeds;
deep_sea_stochastic: the same, three of them deep_sea's; memory_len:
learning, scale, seeds). A plot that fails is reported, named in scores.md
with the reason, and skipped; some need what a trial lacks (memory_len's
scale: bsuite's full budget; deep_sea's seeds: over 100 episodes;
deep_sea's regret: one of the sizes 10, 20, 30, 40, 50). Scoring imports
TensorFlow quietly (`bsuite_journal_module`): the sweep's output is its own.

Exit codes: 0; 1 a run failed (or nothing to score); 2 a bad flag value
(one `ERROR:` line); 130 interrupted (SIGINT or SIGTERM: the runs it started
are stopped, and the next sweep starts them again).
"""

import collections
import contextlib
import csv
import dataclasses
import datetime
import difflib
import glob
import importlib
import importlib.util
import inspect
import io
import json
import logging
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Sequence
import warnings

from absl import app
from absl import flags

import common  # benchmarks/common.py, next to this script.

REPO_ROOT = common.REPO_ROOT
ID_PREFIX = 'bsuite/'
# bsuite's CSV logger's file names (bsuite.logging.csv_logging).
CSV_PREFIX = 'bsuite_id_-_'
SAFE_SEPARATOR = '-'
LOG_FILE = 'sweep.log'
DONE_FILE = 'SWEEP_DONE.json'
ATTEMPTS_FILE = 'SWEEP_ATTEMPTS.jsonl'
CSV_DIR = 'csv'  # under <work_dir>/<agent>: what bsuite's csv_load reads
TAIL_LINES = 20
POLL_SECONDS = 0.2
SOLVED_POLL_SECONDS = 30  # --stop_when_solved: how often a run's log is read
PROGRESS_SECONDS = 60  # a progress line per running run this often
STOP_SECONDS = 30  # an interrupted sweep's runs get this long to end
REFERENCES = {
    'dqn': 'bsuite.baselines.tf.dqn.run',
    'boot_dqn': 'bsuite.baselines.tf.boot_dqn.run',
    'actor_critic_rnn': 'bsuite.baselines.tf.actor_critic_rnn.run',
    'actor_critic': 'bsuite.baselines.tf.actor_critic.run',
    'random': 'bsuite.baselines.random.run',
}
# Modules the reference scripts import beyond bsuite itself (bsuite's
# [baselines] extra): every run.py imports bsuite.baselines.utils.pool,
# which imports tqdm.
_REFERENCE_NEEDS = {name: ('tqdm',) if name == 'random'
                    else ('tqdm', 'sonnet', 'trfl') for name in REFERENCES}
_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]*')

_AGENTS = flags.DEFINE_multi_string(
    'agent', [], 'NAME=GIN_FILE: one of our agents, run with train_eval.py '
    '(repeatable); the gin file defines BSUITE_ID and NUM_EPISODES.')
_REFERENCES = flags.DEFINE_multi_string(
    'reference', [], 'A bsuite reference agent (repeatable): '
    f'{", ".join(REFERENCES)}.')
_BSUITE_IDS = flags.DEFINE_list(
    'bsuite_ids', [], 'Comma list: ids (deep_sea/3 or bsuite/deep_sea/3), '
    'inclusive ranges (deep_sea/0-10) or whole experiments (deep_sea).')
_NUM_EPISODES = flags.DEFINE_integer(
    'num_episodes', None, 'Episodes per id, fewer than bsuite\'s (a trial): '
    'NUM_EPISODES of our runs, --num_episodes of the reference agents.')
_WORK_DIR = flags.DEFINE_string(
    'work_dir', 'runs/bsuite_sweep',
    'Run directories: <work_dir>/<agent>/<experiment>-<setting>/.')
_OUT_DIR = flags.DEFINE_string(
    'out_dir', None, 'Where scores.md, scores.csv and the plots go '
    '(default <work_dir>/scores).')
_JOBS = flags.DEFINE_integer('jobs', 2, 'Runs at a time.')
_GIN_BINDINGS = flags.DEFINE_multi_string(
    'gin_bindings', [], 'Extra gin bindings for all our runs (repeatable).')
_STOP_WHEN_SOLVED = flags.DEFINE_bool(
    'stop_when_solved', False, 'End a run once bsuite\'s analysis counts its '
    'id solved (deep_sea, deep_sea_stochastic): the same score, fewer '
    'episodes.')
_SCORE_ONLY = flags.DEFINE_bool(
    'score_only', False, 'Run nothing: score the runs already there.')


class UsageError(Exception):
  """A flag value the user must fix: one `ERROR:` line, exit code 2."""


def bsuite_journal_module():
  """tfa_explore's bsuite logs module, imported without others' start-up
  lines (the package imports every env module).

  It imports TensorFlow, TF-Agents and gym, whose start-up lines (TF's C++
  notices, gym's "unmaintained" notice) would land among the sweep's own.
  TensorFlow reads TF_CPP_MIN_LOG_LEVEL once, when its library loads: it is
  set for the import only, so the runs this sweep starts keep the
  environment they were given. gym prints its notice to sys.stderr when
  imported.
  """
  name = 'tfa_explore.environments.bsuite_journal'
  if name in sys.modules:
    return sys.modules[name]
  variable = 'TF_CPP_MIN_LOG_LEVEL'
  previous = os.environ.get(variable)
  os.environ.setdefault(variable, '3')  # an explicit setting wins
  try:
    with contextlib.redirect_stderr(io.StringIO()):
      return importlib.import_module(name)
  finally:
    if previous is None:
      os.environ.pop(variable, None)


# ----------------------------------------------------------------- flags ---


def _sweep_ids() -> Dict[str, List[str]]:
  """{experiment: its ids in setting order}, from bsuite's sweep."""
  from bsuite import sweep  # pylint: disable=g-import-not-at-top
  experiments = {}
  for known in sweep.SWEEP:
    experiments.setdefault(known.partition('/')[0], []).append(known)
  return experiments


def _unknown(item: str, experiments: Dict[str, List[str]]) -> UsageError:
  name = item[len(ID_PREFIX):] if item.startswith(ID_PREFIX) else item
  experiment = name.partition('/')[0]
  if experiment in experiments:
    hint = (f'{experiment} has settings 0 to '
            f'{len(experiments[experiment]) - 1}.')
  else:
    matches = difflib.get_close_matches(experiment, list(experiments), n=3)
    hint = (f'did you mean {", ".join(matches)}?' if matches else
            f'experiments: {", ".join(sorted(experiments))}.')
  return UsageError(f'--bsuite_ids: unknown bsuite id {item!r}: {hint}')


def parse_ids(items: Sequence[str]) -> List[str]:
  """bsuite ids ('deep_sea/3') of --bsuite_ids items, in order, once each.

  Args:
    items: ids with or without 'bsuite/', inclusive ranges
      ('deep_sea/0-10') or experiment names ('deep_sea': all settings).

  Raises:
    UsageError: an id or range bsuite's sweep does not list, or none.
  """
  experiments = _sweep_ids()
  ids = []
  for item in items:
    item = item.strip()
    if not item:
      continue
    name = item[len(ID_PREFIX):] if item.startswith(ID_PREFIX) else item
    experiment, slash, setting = name.partition('/')
    if not slash and experiment in experiments:
      ids.extend(experiments[experiment])
      continue
    span = re.fullmatch(r'(\d+)-(\d+)', setting)
    if span:
      first, last = int(span.group(1)), int(span.group(2))
      if experiment in experiments and first > last:
        raise UsageError(f'--bsuite_ids: range {item!r} goes down: '
                         f'write {experiment}/{last}-{first}.')
      names = [f'{experiment}/{index}' for index in range(first, last + 1)]
    else:
      names = [name]
    for one in names:
      if one not in experiments.get(experiment, ()):
        raise _unknown(item, experiments)
    ids.extend(names)
  if not ids:
    raise UsageError('--bsuite_ids: give at least one bsuite id, e.g. '
                     'deep_sea/0-10.')
  return list(dict.fromkeys(ids))


@dataclasses.dataclass(frozen=True)
class Agent:
  """One of our agents (a gin file) or a bsuite reference agent (a module)."""
  name: str
  gin_file: Optional[str] = None  # absolute
  module: Optional[str] = None

  @property
  def is_reference(self) -> bool:
    return self.module is not None

  def _in_repo(self) -> Optional[str]:
    relative = os.path.relpath(self.gin_file, REPO_ROOT)
    return None if relative.startswith('..') else relative

  def identity(self) -> str:
    """What a finished run records (`Job.settings`): the module, or the gin
    file relative to the repo when inside it, else its absolute path (the
    same file from any folder the sweep is run in)."""
    if self.is_reference:
      return self.module
    return self._in_repo() or self.gin_file

  def describe(self) -> str:
    """What scores.md shows: the module, or the gin file relative to the
    repo when inside it, else to the current directory, as the recorded
    command names it (`recorded_command`): no machine's absolute path."""
    if self.is_reference:
      return self.module
    return self._in_repo() or os.path.relpath(self.gin_file)


def parse_agents(agent_flags: Sequence[str], reference_flags: Sequence[str],
                 check_files: bool = True) -> List[Agent]:
  """Agents of --agent (NAME=GIN_FILE) and --reference (NAME), in order.

  Raises:
    UsageError: a malformed or repeated name, a missing gin file, an
      unknown reference agent, or no agent at all.
  """
  agents = []
  for value in agent_flags:
    name, equals, gin_file = value.partition('=')
    if not equals or not gin_file or not _NAME.fullmatch(name):
      raise UsageError(f'--agent={value}: expected NAME=GIN_FILE, NAME made '
                       'of letters, digits, _ . -')
    gin_file = os.path.abspath(gin_file)
    if check_files and not os.path.isfile(gin_file):
      raise UsageError(f'--agent={value}: no gin file {gin_file}')
    agents.append(Agent(name, gin_file=gin_file))
  for name in reference_flags:
    if name not in REFERENCES:
      raise UsageError(f'--reference={name}: bsuite\'s reference agents are '
                       f'{", ".join(REFERENCES)}.')
    agents.append(Agent(name, module=REFERENCES[name]))
  names = [agent.name for agent in agents]
  for name in names:
    if names.count(name) > 1:
      raise UsageError(f'Agent name {name!r} given twice (--agent, '
                       '--reference): names must differ.')
  if not agents:
    raise UsageError('Give at least one --agent=NAME=GIN_FILE or '
                     '--reference=NAME.')
  return agents


def check_reference_modules(agents: Sequence[Agent]) -> None:
  """Raises UsageError if a reference agent's script lacks a module.

  Looked up, not imported: sonnet would bring TensorFlow into this process.
  """
  for agent in agents:
    if not agent.is_reference:
      continue
    for module in _REFERENCE_NEEDS[agent.name]:
      if importlib.util.find_spec(module) is None:
        raise UsageError(
            f'--reference={agent.name} needs the {module} package (bsuite\'s '
            '[baselines] extra): pip install tqdm dm-sonnet trfl')


def episode_budget(experiment: str) -> int:
  """bsuite's episode count for `experiment` (its sweep's NUM_EPISODES)."""
  return importlib.import_module(
      f'bsuite.experiments.{experiment}.sweep').NUM_EPISODES


def check_num_episodes(num_episodes: Optional[int],
                       bsuite_ids: Sequence[str]) -> None:
  """Raises UsageError unless None or 1 to bsuite's budget of every id.

  More than bsuite's budget is not a bsuite run: our CSV logs stop at the
  budget, the reference agents' would not.
  """
  if num_episodes is None:
    return
  if num_episodes < 1:
    raise UsageError(f'--num_episodes must be >= 1, got {num_episodes}.')
  for experiment in dict.fromkeys(i.partition('/')[0] for i in bsuite_ids):
    budget = episode_budget(experiment)
    if num_episodes > budget:
      raise UsageError(
          f'--num_episodes={num_episodes} is above bsuite\'s budget for '
          f'{experiment} ({budget}): leave it out to run bsuite\'s.')


def solution_finder(experiment: str):
  """bsuite's `find_solution` of `experiment`'s analysis, or None."""
  analysis = importlib.import_module(
      f'bsuite.experiments.{experiment}.analysis')
  return getattr(analysis, 'find_solution', None)


def check_stop_when_solved(bsuite_ids: Sequence[str]) -> None:
  """Raises UsageError if an id's experiment has no solved criterion."""
  for experiment in dict.fromkeys(i.partition('/')[0] for i in bsuite_ids):
    if solution_finder(experiment) is None:
      raise UsageError(
          f'--stop_when_solved: bsuite\'s analysis of {experiment} has no '
          'solved criterion (find_solution); only deep_sea and '
          'deep_sea_stochastic have one.')


# ------------------------------------------------------------------ runs ---


def run_dir(work_dir: str, agent: Agent, bsuite_id: str) -> str:
  return os.path.join(work_dir, agent.name,
                      bsuite_id.replace('/', SAFE_SEPARATOR))


def csv_name(bsuite_id: str) -> str:
  """bsuite's CSV logger's file name for `bsuite_id`."""
  return f'{CSV_PREFIX}{bsuite_id.replace("/", SAFE_SEPARATOR)}.csv'


@dataclasses.dataclass
class Job:
  """One (agent, bsuite id) run."""
  agent: Agent
  bsuite_id: str
  run_dir: str
  command: List[str]
  # What the results depend on (not where they are): a finished run whose
  # settings differ is run again.
  settings: Dict[str, Any]
  stop_when_solved: bool = False

  @property
  def label(self) -> str:
    return f'{self.agent.name} {self.bsuite_id}'


def make_job(agent: Agent, bsuite_id: str, work_dir: str,
             num_episodes: Optional[int], bindings: Sequence[str],
             stop_when_solved: bool = False) -> Job:
  directory = run_dir(work_dir, agent, bsuite_id)
  if agent.is_reference:
    options = [f'--bsuite_id={bsuite_id}', '--logging_mode=csv',
               '--verbose=False'] + (
                   [f'--num_episodes={num_episodes}'] if num_episodes else [])
    command = [sys.executable, '-m', agent.module, f'--save_path={directory}',
               '--overwrite=True'] + options
    settings = {'agent': agent.identity(), 'flags': options}
  else:
    # The sweep's own bindings last: they win over --gin_bindings.
    ours = list(bindings) + [f"BSUITE_ID='{ID_PREFIX}{bsuite_id}'"] + (
        [f'NUM_EPISODES={num_episodes}'] if num_episodes else [])
    command = common.train_eval_command(directory, agent.gin_file, ours)
    settings = {'agent': agent.identity(), 'bindings': ours}
  if stop_when_solved:  # only then: earlier finished runs stay finished
    settings['stop_when_solved'] = True
  return Job(agent, bsuite_id, directory, command, settings,
             stop_when_solved)


def logged_rows(job: Job, num_episodes: Optional[int]):
  """The rows bsuite has logged so far for the job's run, a DataFrame.

  Only rows at bsuite's own (logarithmic) episode counts: the row our CSV
  adds at a run's last episode is not one a full run would have.
  """
  import pandas as pd  # pylint: disable=g-import-not-at-top
  from bsuite.utils import wrappers  # pylint: disable=g-import-not-at-top
  if job.agent.is_reference:
    path = os.path.join(job.run_dir, csv_name(job.bsuite_id))
    try:
      df = pd.read_csv(path)
    except (OSError, ValueError):  # not written yet, or being written
      return pd.DataFrame()
  else:
    bsuite_journal = bsuite_journal_module()
    episodes = bsuite_journal.read_journals(job.run_dir).get(job.bsuite_id, [])
    budget = episode_budget(job.bsuite_id.partition('/')[0])
    df = pd.DataFrame(bsuite_journal.csv_rows(
        episodes, min(budget, num_episodes or budget)))
  if df.empty:
    return df
  # pylint: disable-next=protected-access
  return df[[bool(wrappers._logarithmic_logging(int(episode)))
             for episode in df.episode]]


def solved_episode(job: Job, num_episodes: Optional[int]) -> Optional[int]:
  """The episode at which bsuite's analysis counts the job's id solved.

  None if not (yet) solved. bsuite's own `find_solution` decides, on the
  rows logged so far with the id's settings (e.g. its size) as columns.
  """
  from bsuite import sweep  # pylint: disable=g-import-not-at-top
  df = logged_rows(job, num_episodes)
  if df.empty:
    return None
  for key, value in sweep.SETTINGS[job.bsuite_id].items():
    df[key] = value
  experiment = job.bsuite_id.partition('/')[0]
  with warnings.catch_warnings():
    warnings.simplefilter('ignore', FutureWarning)  # as in score()
    solution = solution_finder(experiment)(
        df, merge=False, **({'num_episodes': num_episodes}
                            if num_episodes else {}))
  solved = solution[solution.solved.astype(bool)]
  return int(solved.episode.iloc[0]) if len(solved) else None


def episodes_logged(job: Job) -> int:
  """Episodes the job's run has logged so far, read without TensorFlow.

  Ours: the complete lines of its journals (`tfa_explore.environments.
  bsuite`: <run dir>/bsuite/episodes/<id>.*.jsonl, one line per episode).
  A reference agent: the last row of its CSV, which bsuite writes at its
  logarithmic episode counts (1-10, 12, 14, ..., 100, 120, ...), so the
  count lags behind.
  """
  if job.agent.is_reference:
    try:
      with open(os.path.join(job.run_dir, csv_name(job.bsuite_id))) as f:
        rows = list(csv.DictReader(f))
      return int(float(rows[-1]['episode'])) if rows else 0
    except (OSError, KeyError, ValueError):  # not written yet, or being
      return 0
  count = 0
  pattern = os.path.join(job.run_dir, 'bsuite', 'episodes',
                         f'{job.bsuite_id.replace("/", SAFE_SEPARATOR)}.*.jsonl')
  for path in glob.glob(pattern):
    try:
      with open(path, 'rb') as f:
        count += f.read().count(b'\n')  # a torn last line has none
    except OSError:
      pass
  return count


def read_done(directory: str) -> Optional[Dict[str, Any]]:
  try:
    with open(os.path.join(directory, DONE_FILE)) as f:
      return json.load(f)
  except (OSError, ValueError):
    return None


def read_attempts(directory: str) -> List[Dict[str, Any]]:
  attempts = []
  try:
    with open(os.path.join(directory, ATTEMPTS_FILE)) as f:
      for line in f:
        try:
          attempts.append(json.loads(line))
        except ValueError:
          pass  # a line torn by a kill
  except OSError:
    pass
  return attempts


def format_seconds(seconds: float) -> str:
  """H:MM:SS."""
  minutes, secs = divmod(int(round(seconds)), 60)
  hours, minutes = divmod(minutes, 60)
  return f'{hours:d}:{minutes:02d}:{secs:02d}'


def _tail(path: str, lines: int = TAIL_LINES) -> str:
  try:
    with open(path, errors='replace') as f:
      return ''.join(collections.deque(f, maxlen=lines))
  except OSError as e:
    return f'(no log: {e})\n'


@dataclasses.dataclass
class _Running:
  job: Job
  process: subprocess.Popen
  started: float  # time.time()
  monotonic: float
  log: Any
  solved_at: Optional[int] = None  # --stop_when_solved: stopped there
  next_progress: float = 0.0  # time.monotonic() of its next progress line


class Runner:
  """Runs jobs, `max_jobs` at a time; a line per started and ended run."""

  def __init__(self, jobs: Sequence[Job], max_jobs: int,
               num_episodes: Optional[int] = None):
    self._pending = collections.deque(jobs)
    self._num_episodes = num_episodes
    self._next_solved_check = time.monotonic() + SOLVED_POLL_SECONDS
    self._total = len(jobs)
    self._max_jobs = max_jobs
    self._running: Dict[int, _Running] = {}
    self._ended = 0
    self._stopping = False
    self.failed: List[Job] = []

  def run(self) -> None:
    try:
      while self._pending or self._running:
        while self._pending and len(self._running) < self._max_jobs:
          self._start(self._pending.popleft())
        if not self._reap():
          self._stop_solved()
          self._report_progress()
          time.sleep(POLL_SECONDS)
    except BaseException:
      self._stop_all()
      raise

  def _start(self, job: Job) -> None:
    os.makedirs(job.run_dir, exist_ok=True)
    # A rerun is not finished until it exits 0 again.
    if os.path.exists(os.path.join(job.run_dir, DONE_FILE)):
      os.remove(os.path.join(job.run_dir, DONE_FILE))
    log = open(os.path.join(job.run_dir, LOG_FILE), 'a')  # pylint: disable=consider-using-with
    started = time.time()
    log.write(f'=== bsuite_sweep {_utc(started)}: {shlex.join(job.command)}\n')
    log.flush()
    process = subprocess.Popen(job.command, stdout=log,
                               stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, cwd=REPO_ROOT)
    self._running[process.pid] = _Running(
        job, process, started, time.monotonic(), log,
        next_progress=time.monotonic() + PROGRESS_SECONDS)
    print(f'start {job.label} (log: {os.path.join(job.run_dir, LOG_FILE)})',
          flush=True)

  def _report_progress(self) -> None:
    """A line per run every PROGRESS_SECONDS: its episodes and budget."""
    now = time.monotonic()
    for running in self._running.values():
      if now < running.next_progress:
        continue
      running.next_progress = now + PROGRESS_SECONDS
      job = running.job
      budget = self._num_episodes or episode_budget(
          job.bsuite_id.partition('/')[0])
      episodes = episodes_logged(job)
      print(f'progress {job.label}: episodes {episodes:,}/{budget:,} '
            f'({100.0 * episodes / budget:.0f}%) after '
            f'{format_seconds(now - running.monotonic)}', flush=True)

  def _stop_solved(self) -> None:
    """SIGTERM to the --stop_when_solved runs whose id is solved."""
    if time.monotonic() < self._next_solved_check:
      return
    self._next_solved_check = time.monotonic() + SOLVED_POLL_SECONDS
    for pid, running in self._running.items():
      if not running.job.stop_when_solved or running.solved_at is not None:
        continue
      episode = solved_episode(running.job, self._num_episodes)
      if episode is None:
        continue
      running.solved_at = episode
      os.kill(pid, signal.SIGTERM)
      print(f'solved {running.job.label} at episode {episode:,} (bsuite\'s '
            'find_solution): stopping it', flush=True)

  def _reap(self) -> bool:
    """Handles the runs that ended; whether any did."""
    ended = False
    for pid in list(self._running):
      if self._wait(pid, os.WNOHANG) is None:
        continue
      ended = True
    return ended

  def _wait(self, pid: int, options: int) -> Optional[int]:
    """Reaps run `pid` and records its attempt; its exit code, or None."""
    # wait4, not Popen.wait: it also gives the rusage of the child and of
    # the descendants it waited for (TF's and the envs' subprocesses).
    waited, status, usage = os.wait4(pid, options)
    if waited == 0:
      return None
    running = self._running.pop(pid)
    code = os.waitstatus_to_exitcode(status)
    running.process.returncode = code  # reaped here, not by Popen
    running.log.close()
    self._record(running, code, usage.ru_utime + usage.ru_stime,
                 time.monotonic() - running.monotonic)
    return code

  def _record(self, running: _Running, code: int, cpu: float,
              wall: float) -> None:
    """Appends the attempt to its run's record; a line for the user."""
    job = running.job
    attempt = {'started': _utc(running.started), 'exit_code': code,
               'wall_seconds': round(wall, 3), 'cpu_seconds': round(cpu, 3),
               'interrupted': self._stopping, 'settings': job.settings}
    stop_code = ''
    if running.solved_at is not None:
      # Stopped by us once its journal or CSV, already on disk, showed the
      # solution: the score does not depend on how the process then ended
      # (ours exit 143, a reference agent dies of the SIGTERM; any other
      # code is printed with the done line).
      attempt['solved_at_episode'] = running.solved_at
      if code not in (128 + signal.SIGTERM, -signal.SIGTERM):
        stop_code = f', exit code {code} after the stop'
      code = 0
    with open(os.path.join(job.run_dir, ATTEMPTS_FILE), 'a') as f:
      f.write(json.dumps(attempt) + '\n')
    if self._stopping:
      print(f'stopped {job.label} after {format_seconds(wall)} (exit code '
            f'{code}): the next sweep starts it again', flush=True)
      return
    self._ended += 1
    count = f'[{self._ended}/{self._total}]'
    if code == 0:
      attempts = read_attempts(job.run_dir)
      done = dict(attempt, attempts=len(attempts),
                  total_wall_seconds=sum(a['wall_seconds'] for a in attempts),
                  total_cpu_seconds=sum(a['cpu_seconds'] for a in attempts),
                  finished=_utc(time.time()))
      path = os.path.join(job.run_dir, DONE_FILE)
      with open(path + '.tmp', 'w') as f:
        json.dump(done, f, indent=2)
      os.replace(path + '.tmp', path)
      solved = (f' (solved at episode {running.solved_at:,}{stop_code})'
                if running.solved_at is not None else '')
      print(f'{count} done {job.label}{solved}: {format_seconds(wall)} wall, '
            f'{format_seconds(cpu)} CPU ({cpu / max(wall, 1e-9):.1f} '
            'cores)', flush=True)
      return
    self.failed.append(job)
    how = (f'killed by signal {-code}' if code < 0 else f'exit code {code}')
    log_path = os.path.join(job.run_dir, LOG_FILE)
    print(f'{count} FAILED {job.label}: {how} after {format_seconds(wall)}; '
          f'the end of {log_path}:\n'
          + ''.join(f'    {line}' for line in
                    _tail(log_path).splitlines(keepends=True)), flush=True)

  def _stop_all(self) -> None:
    """Stops the runs this sweep started (it was interrupted).

    SIGTERM first, so that they can end cleanly; SIGKILL for those still
    running after STOP_SECONDS.
    """
    self._stopping = True
    # os.kill, not Popen.terminate: that polls, and a poll that reaps a run
    # would lose its rusage. Not reaped yet, so the pid is still ours.
    for pid in self._running:
      os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_SECONDS
    while self._running and time.monotonic() < deadline:
      if not self._reap():
        time.sleep(POLL_SECONDS)
    for pid in list(self._running):
      os.kill(pid, signal.SIGKILL)
      self._wait(pid, 0)


def _utc(seconds: float) -> str:
  return datetime.datetime.fromtimestamp(
      seconds, datetime.timezone.utc).strftime('%Y-%m-%d %H:%M:%S UTC')


def plan(jobs: Sequence[Job]) -> List[Job]:
  """The jobs to run: all but the finished ones (a line for each skip)."""
  to_run = []
  for job in jobs:
    done = read_done(job.run_dir)
    if done is None:
      to_run.append(job)
    elif done.get('settings') != job.settings:
      print(f'rerun {job.label}: its settings changed since it finished '
            f'(was {done.get("settings")})', flush=True)
      to_run.append(job)
    else:
      print(f'skip {job.label}: finished ({DONE_FILE}: '
            f'{format_seconds(done["total_wall_seconds"])} wall, '
            f'{format_seconds(done["total_cpu_seconds"])} CPU)', flush=True)
  return to_run


# --------------------------------------------------------------- scoring ---


def collect_csvs(agent: Agent, bsuite_ids: Sequence[str], work_dir: str,
                 num_episodes: Optional[int] = None) -> Dict[str, str]:
  """Copies the agent's bsuite CSV logs to <work_dir>/<agent>/csv/.

  Our runs' CSVs are (re)written from their journals first, so a run that
  was killed is scored on what it logged; with a budget note, cut at
  `num_episodes` as the reference agents stop there (our envs end a few
  episodes more in the iteration that reaches it).

  Returns:
    {bsuite id: CSV path} of the ids with a log.
  """
  found = {}
  for bsuite_id in bsuite_ids:
    directory = run_dir(work_dir, agent, bsuite_id)
    if not os.path.isdir(directory):
      continue
    if agent.is_reference:
      path = os.path.join(directory, csv_name(bsuite_id))
    else:
      bsuite_journal = bsuite_journal_module()
      bsuite_journal.write_csv(directory, num_episodes)
      path = bsuite_journal.csv_path(directory, bsuite_id)
    if os.path.isfile(path):
      found[bsuite_id] = path
  csv_dir = os.path.join(work_dir, agent.name, CSV_DIR)
  os.makedirs(csv_dir, exist_ok=True)
  # Only this sweep's ids: bsuite's loader reads every CSV in the folder.
  for stale in glob.glob(os.path.join(csv_dir, '*.csv')):
    os.remove(stale)
  for path in found.values():
    shutil.copyfile(path, os.path.join(csv_dir, os.path.basename(path)))
  return found


def _costs(agent: Agent, bsuite_ids: Sequence[str], work_dir: str):
  """(ids finished, of them ended when solved, CPU s, wall s) of all attempts."""
  done, solved, cpu, wall = 0, 0, 0.0, 0.0
  for bsuite_id in bsuite_ids:
    directory = run_dir(work_dir, agent, bsuite_id)
    record = read_done(directory)
    done += record is not None
    solved += record is not None and 'solved_at_episode' in record
    for attempt in read_attempts(directory):
      cpu += attempt['cpu_seconds']
      wall += attempt['wall_seconds']
  return done, solved, cpu, wall


def _patch_matplotlib_for_plotnine() -> None:
  """Gives plotnine 0.12 the matplotlib function it imports for facets.

  plotnine 0.12 is the last release for pandas 1 (bsuite's analysis needs
  pandas 1); it imports `matplotlib.text._get_textbox`, which our
  matplotlib no longer has: without it every faceted plot (all of bsuite's)
  fails. `Text._get_layout` now returns the same box as its third item.
  """
  from matplotlib import text  # pylint: disable=g-import-not-at-top
  if hasattr(text, '_get_textbox'):
    return

  def _get_textbox(artist, renderer):
    _, _, ((x, y), (width, height)) = artist._get_layout(renderer)  # pylint: disable=protected-access
    return x, y, width, height

  text._get_textbox = _get_textbox  # pylint: disable=protected-access


def experiment_plots(experiment: str):
  """[(name, function, takes find_solution's frame)] of bsuite's analysis.

  Every `plot_*` of `bsuite.experiments.<experiment>.analysis`, its own or
  one it takes from another experiment's (deep_sea_stochastic's scaling
  and regret plots are deep_sea's). Each takes (df, sweep_vars), except
  those whose first argument is `plt_df` (deep_sea's scaling plots), which
  take this experiment's `find_solution(df, sweep_vars)`.
  """
  module = importlib.import_module(f'bsuite.experiments.{experiment}.analysis')
  plots = []
  for name, function in inspect.getmembers(module, inspect.isfunction):
    if not name.startswith('plot_'):
      continue
    first = next(iter(inspect.signature(function).parameters))
    plots.append((name[len('plot_'):], function, first == 'plt_df'))
  return module, plots


def save_plots(df, score_df, sweep_vars, experiments: Sequence[str],
               out_dir: str):
  """bsuite's plots as PNGs in out_dir.

  A plot that fails is reported and skipped: the table is already written.

  Returns:
    (the file names saved, {file name or experiment: why it was not
    drawn}) for scores.md.
  """
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')
  # absl shows INFO records; matplotlib's (font sizes clamped while plotnine
  # lays out legends) say nothing about the results.
  logging.getLogger('matplotlib').setLevel(logging.WARNING)
  _patch_matplotlib_for_plotnine()
  from bsuite.experiments import summary_analysis  # pylint: disable=g-import-not-at-top
  saved, not_drawn = [], {}

  def save(file_name, make):
    path = os.path.join(out_dir, file_name)
    if os.path.exists(path):
      os.remove(path)  # not an earlier sweep's plot in place of a failed one
    try:
      make().save(path, verbose=False)
      saved.append(file_name)
    except Exception as e:  # pylint: disable=broad-except
      reason = f'{type(e).__name__}: {_first_line(e)}'
      not_drawn[file_name] = reason
      print(f'plot {file_name} failed: {reason}', flush=True)

  if score_df['agent_name'].nunique() > 1:
    save('bsuite_bar_plot_compare.png',
         lambda: summary_analysis.bsuite_bar_plot_compare(score_df,
                                                          sweep_vars))
  else:
    save('bsuite_bar_plot.png',
         lambda: summary_analysis.bsuite_bar_plot(score_df, sweep_vars))
  for experiment in experiments:
    experiment_df = df[df.bsuite_env == experiment]
    if experiment_df.empty:
      continue
    try:
      module, plots = experiment_plots(experiment)
    except ImportError as e:
      not_drawn[f'plots of {experiment}'] = f'no analysis module ({e})'
      print(f'plots of {experiment}: no analysis module ({e})', flush=True)
      continue
    for name, function, wants_solution in plots:
      if wants_solution:
        make = (lambda function=function: function(
            module.find_solution(experiment_df, sweep_vars), sweep_vars))
      else:
        make = (lambda function=function: function(experiment_df,
                                                   sweep_vars))
      save(f'{experiment}_{name}.png', make)
  return saved, not_drawn


def _first_line(error: BaseException, limit: int = 160) -> str:
  lines = str(error).strip().splitlines()
  line = lines[0] if lines else repr(error)
  return line if len(line) <= limit else line[:limit - 3] + '...'


def _episodes(values: Sequence[int]) -> str:
  if not values:
    return '-'
  low, high = min(values), max(values)
  return f'{low:,}' if low == high else f'{low:,} to {high:,}'


def score(agents: Sequence[Agent], bsuite_ids: Sequence[str], work_dir: str,
          out_dir: str, num_episodes: Optional[int],
          command_line: str) -> Optional[str]:
  """Scores every agent with bsuite's analysis; writes out_dir's files.

  Returns:
    The markdown of scores.md, or None if no agent has a CSV log yet.
  """
  import pandas as pd  # pylint: disable=g-import-not-at-top
  from bsuite.experiments import summary_analysis  # pylint: disable=g-import-not-at-top
  from bsuite.logging import csv_load  # pylint: disable=g-import-not-at-top

  logged = {agent.name: collect_csvs(agent, bsuite_ids, work_dir,
                                     num_episodes)
            for agent in agents}
  results_dirs = {agent.name: os.path.join(work_dir, agent.name, CSV_DIR)
                  for agent in agents if logged[agent.name]}
  if not results_dirs:
    return None
  experiments = list(dict.fromkeys(i.partition('/')[0] for i in bsuite_ids))
  with warnings.catch_warnings():
    # bsuite's analysis runs on pandas 1 with calls pandas 2 removed
    # (Series.append): FutureWarnings by the dozen, nothing to act on.
    warnings.simplefilter('ignore', FutureWarning)
    warnings.simplefilter('ignore', DeprecationWarning)
    df, sweep_vars = csv_load.load_bsuite(results_dirs)
    score_df = summary_analysis.bsuite_score(df, sweep_vars)
    # bsuite drops groupby's level_* columns only if its input had them.
    score_df = score_df.drop(
        columns=[c for c in score_df.columns if c.startswith('level_')])

    rows = []
    # {agent: {experiment: (ids finished, ids logged)}}: what each
    # experiment's score is over.
    id_counts = {agent.name: _id_counts(agent, bsuite_ids, work_dir,
                                        logged[agent.name])
                 for agent in agents}
    for agent in agents:
      done, solved, cpu, wall = _costs(agent, bsuite_ids, work_dir)
      counts = [int(count) for count in df[df.agent_name == agent.name]
                .groupby('bsuite_id')['episode'].max()]
      row = {'agent': agent.name, 'config': agent.describe(),
             'reference': agent.is_reference}
      agent_scores = score_df[score_df.agent_name == agent.name]
      for experiment in experiments:
        match = agent_scores[agent_scores.bsuite_env == experiment]
        row[experiment] = (float(match.score.iloc[0]) if len(match) else None)
        row[f'{experiment} finished'] = (bool(match.finished.iloc[0])
                                         if len(match) else None)
      row.update(ids_requested=len(bsuite_ids), ids_done=done,
                 ids_ended_solved=solved,
                 ids_logged=len(logged[agent.name]),
                 episodes_min=min(counts) if counts else None,
                 episodes_max=max(counts) if counts else None,
                 cpu_hours=cpu / 3600, wall_hours=wall / 3600)
      rows.append(row)

    os.makedirs(out_dir, exist_ok=True)
    pd.DataFrame(rows).to_csv(os.path.join(out_dir, 'scores.csv'),
                              index=False)
    markdown = _markdown(rows, experiments, id_counts, num_episodes,
                         command_line)
    with open(os.path.join(out_dir, 'scores.md'), 'w') as f:
      f.write(markdown)
    warnings.simplefilter('ignore', UserWarning)  # plotnine's advice
    plots, not_drawn = save_plots(df, score_df, sweep_vars, experiments,
                                  out_dir)
  if plots or not_drawn:
    markdown += '\n'
  if plots:
    markdown += f'Plots (bsuite\'s own): {", ".join(plots)}\n'
  if not_drawn:
    markdown += 'Plots not drawn: ' + '; '.join(
        f'{name} ({reason})' for name, reason in not_drawn.items()) + '\n'
  with open(os.path.join(out_dir, 'scores.md'), 'w') as f:
    f.write(markdown)
  return markdown


def _id_counts(agent: Agent, bsuite_ids: Sequence[str], work_dir: str,
               logged: Dict[str, str]) -> Dict[str, tuple]:
  """{experiment: (ids finished, ids logged)} of the agent's runs.

  An experiment's score is over the ids logged, finished or not.
  """
  counts = {}
  for bsuite_id in bsuite_ids:
    experiment = bsuite_id.partition('/')[0]
    finished, count = counts.get(experiment, (0, 0))
    if bsuite_id in logged:
      count += 1
      finished += read_done(run_dir(work_dir, agent, bsuite_id)) is not None
    counts[experiment] = (finished, count)
  return counts


def _ids_scored(experiment: str, counts: Dict[str, tuple],
                total: int) -> str:
  """"deep_sea: 11 finished of bsuite's 21", per agent if they differ."""
  def ids(finished, logged):
    unfinished = logged - finished
    return f'{finished} finished' + (f' and {unfinished} unfinished'
                                     if unfinished else '')
  texts = {agent: ids(*by_experiment[experiment])
           for agent, by_experiment in counts.items()}
  if len(set(texts.values())) == 1:
    return f'{experiment}: {next(iter(texts.values()))} of bsuite\'s {total}'
  return (f'{experiment}, of bsuite\'s {total}: '
          + ', '.join(f'{agent} {text}' for agent, text in texts.items()))


def _git(*args: str) -> str:
  try:
    return subprocess.run(['git', *args], cwd=REPO_ROOT, capture_output=True,
                          text=True, check=True).stdout.strip()
  except (OSError, subprocess.CalledProcessError):
    return ''


def _markdown(rows, experiments, id_counts, num_episodes,
              command_line) -> str:
  header = (['agent'] + experiments +
            ['ids run', 'episodes per id', 'CPU-hours', 'wall-hours',
             'config'])
  lines = ['| ' + ' | '.join(header) + ' |',
           '|' + '---|' * len(header)]
  unfinished = False
  for row in rows:
    cells = [row['agent'] + (' (bsuite)' if row['reference'] else '')]
    for experiment in experiments:
      value = row[experiment]
      if value is None:
        cells.append('-')
        continue
      star = '' if row[f'{experiment} finished'] else '*'
      unfinished = unfinished or bool(star)
      cells.append(f'{value:.2f}{star}')
    ids = f'{row["ids_done"]}/{row["ids_requested"]}'
    if row['ids_logged'] > row['ids_done']:
      ids += f' (+{row["ids_logged"] - row["ids_done"]} unfinished)'
    counts = [c for c in (row['episodes_min'], row['episodes_max'])
              if c is not None]
    cells += [ids, _episodes(counts), f'{row["cpu_hours"]:.3g}',
              f'{row["wall_hours"]:.3g}', f'`{row["config"]}`']
    lines.append('| ' + ' | '.join(cells) + ' |')

  totals = {e: len(ids) for e, ids in _sweep_ids().items()}
  notes = [
      '',
      'Scores: bsuite\'s own (`summary_analysis.bsuite_score` on the CSV '
      'logs), in [0, 1]; an experiment\'s score is over the ids each agent '
      'logged (' + '; '.join(_ids_scored(e, id_counts, totals[e])
                             for e in experiments) + ').',
      'ids run: finished runs / ids asked. episodes per id: the fewest and '
      'most episodes logged. CPU- and wall-hours: all attempts of the '
      'agent\'s runs (CPU: the process and the children it waited for).',
  ]
  below = [e for e in experiments
           if num_episodes and num_episodes < episode_budget(e)]
  if below:
    notes.append(
        f'Budget: --num_episodes={num_episodes:,} episodes per id, below '
        'bsuite\'s for ' + ', '.join(f'{e} ({episode_budget(e):,})'
                                    for e in below)
        + ': a trial, not a bsuite result.')
  stopped = [f'{row["agent"]} {row["ids_ended_solved"]}' for row in rows
             if row['ids_ended_solved']]
  if stopped:
    notes.append(
        'Ended when solved (--stop_when_solved), ids per agent: '
        + ', '.join(stopped) + '. bsuite\'s analysis scores an id by the '
        'first logged episode below its threshold and counts a solved id as '
        'finished: the scores are those of the full budget; episodes per id '
        'counts the episodes run.')
  if unfinished:
    notes.append('`*`: not every id reached bsuite\'s episode count '
                 '(bsuite\'s `finished` flag is false).')
  notes.append('One seed per bsuite id: bsuite\'s protocol (the settings of '
               'an experiment are its repetitions).')
  commit = _git('rev-parse', '--short', 'HEAD') or 'unknown'
  if _git('status', '--porcelain', '--untracked-files=no'):
    commit += ' (with uncommitted changes)'
  notes += [
      '',
      f'Command: `{command_line}`',
      f'Commit: {commit}; date: {_utc(time.time())}.',
  ]
  return '\n'.join(lines + notes) + '\n'


def recorded_command(argv: Sequence[str], cwd: str) -> str:
  """The sweep's command, to be run again from `cwd`, the folder it ran in.

  scores.md is shared, so no path in it is absolute: the script and every
  absolute path in a flag (a gin file outside the checkout, --work_dir)
  are written relative to `cwd`.
  """
  def relative(path):
    return os.path.relpath(path, cwd) if os.path.isabs(path) else path

  def rewrite(arg):
    name, equals, value = arg.partition('=')
    if not (equals and name.startswith('-')):
      return relative(arg)
    if name.lstrip('-') == 'agent':  # --agent=NAME=GIN_FILE
      agent, equals, gin_file = value.partition('=')
      if equals:
        return f'{name}={agent}={relative(gin_file)}'
    return f'{name}={relative(value)}'

  script = os.path.relpath(os.path.abspath(argv[0]), cwd)
  return shlex.join(['python', script] + [rewrite(arg) for arg in argv[1:]])


# ------------------------------------------------------------------ main ---


def _raise_interrupt(signum, frame):
  del frame
  raise KeyboardInterrupt(f'signal {signum}')


def sweep_main() -> int:
  """The sweep; its exit code. Raises UsageError for bad flag values."""
  bsuite_ids = parse_ids(_BSUITE_IDS.value)
  agents = parse_agents(_AGENTS.value, _REFERENCES.value,
                        check_files=not _SCORE_ONLY.value)
  check_num_episodes(_NUM_EPISODES.value, bsuite_ids)
  if _JOBS.value < 1:
    raise UsageError(f'--jobs must be >= 1, got {_JOBS.value}')
  if _STOP_WHEN_SOLVED.value:
    check_stop_when_solved(bsuite_ids)
  work_dir = os.path.abspath(_WORK_DIR.value)
  out_dir = os.path.abspath(_OUT_DIR.value or os.path.join(work_dir,
                                                           'scores'))
  failed = []
  if not _SCORE_ONLY.value:
    check_reference_modules(agents)
    jobs = [make_job(agent, bsuite_id, work_dir, _NUM_EPISODES.value,
                     _GIN_BINDINGS.value, _STOP_WHEN_SOLVED.value)
            for bsuite_id in bsuite_ids for agent in agents]
    print(f'{len(bsuite_ids)} bsuite ids x {len(agents)} agents; runs in '
          f'{work_dir}', flush=True)
    runner = Runner(plan(jobs), _JOBS.value, _NUM_EPISODES.value)
    runner.run()
    failed = runner.failed

  markdown = score(agents, bsuite_ids, work_dir, out_dir, _NUM_EPISODES.value,
                   recorded_command(sys.argv, os.getcwd()))
  if markdown is None:
    print(f'Nothing to score: no bsuite CSV log under {work_dir} for these '
          'agents and ids.', flush=True)
    return 1
  print(f'\n{markdown}\nWritten to {out_dir}: scores.md, scores.csv and the '
        'plots.', flush=True)
  if failed:
    print(f'{len(failed)} runs failed: '
          f'{", ".join(job.label for job in failed)} (their logs: '
          f'{LOG_FILE} in each run directory).', flush=True)
    return 1
  return 0


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  signal.signal(signal.SIGTERM, _raise_interrupt)
  try:
    code = sweep_main()
  except UsageError as e:
    print(f'ERROR: {e}', file=sys.stderr)
    sys.exit(2)
  except KeyboardInterrupt:
    sys.exit(130)  # the runs were stopped (Runner.run); 128 + SIGINT
  sys.exit(code)


if __name__ == '__main__':
  app.run(main)
