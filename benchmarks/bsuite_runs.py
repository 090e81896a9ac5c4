"""bsuite_sweep.py's runs: what each is, how they are run, what they logged.

An Agent (one of our gin files or a bsuite reference agent) and its run
directory per bsuite id; a Job per (agent, id) and the Runner that runs
them `--jobs` at a time (start, progress and end lines, the stop of a
solved run, SWEEP_DONE.json and SWEEP_ATTEMPTS.jsonl); what a run has
logged so far (its episodes, the episode bsuite's analysis counts its id
solved at). Also what the script and bsuite_scores.py both read: bsuite's
sweep (ids, episode budgets, find_solution) and tfa_explore's bsuite
journal module, imported quietly.
"""

import collections
import contextlib
import csv
import dataclasses
import datetime
import glob
import importlib
import inspect
import io
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Sequence
import warnings

import common  # benchmarks/common.py, next to this module.

REPO_ROOT = common.REPO_ROOT
ID_PREFIX = 'bsuite/'
# bsuite's CSV logger's file names (bsuite.logging.csv_logging).
CSV_PREFIX = 'bsuite_id_-_'
SAFE_SEPARATOR = '-'
LOG_FILE = 'sweep.log'
DONE_FILE = 'SWEEP_DONE.json'
ATTEMPTS_FILE = 'SWEEP_ATTEMPTS.jsonl'
TAIL_LINES = 20
POLL_SECONDS = 0.2
SOLVED_POLL_SECONDS = 30  # --stop_when_solved: how often a run's log is read
PROGRESS_SECONDS = 60  # a progress line per running run this often
# An interrupted sweep's runs get this long to end. Ours save their
# checkpoint first, then stop their actors and replay server: at load 10 on
# 2 cores that took over 30 s.
STOP_SECONDS = 120


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


# ---------------------------------------------------------------- bsuite ---


def sweep_ids() -> Dict[str, List[str]]:
  """{experiment: its ids in setting order}, from bsuite's sweep."""
  from bsuite import sweep  # pylint: disable=g-import-not-at-top
  experiments = {}
  for known in sweep.SWEEP:
    experiments.setdefault(known.partition('/')[0], []).append(known)
  return experiments


def episode_budget(experiment: str) -> int:
  """bsuite's episode count for `experiment` (its sweep's NUM_EPISODES)."""
  return importlib.import_module(
      f'bsuite.experiments.{experiment}.sweep').NUM_EPISODES


def solution_finder(experiment: str):
  """bsuite's `find_solution` of `experiment`'s analysis, or None."""
  analysis = importlib.import_module(
      f'bsuite.experiments.{experiment}.analysis')
  return getattr(analysis, 'find_solution', None)


# ---------------------------------------------------------------- agents ---


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
    command names it (`bsuite_scores.recorded_command`): no machine's
    absolute path."""
    if self.is_reference:
      return self.module
    return self._in_repo() or os.path.relpath(self.gin_file)


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


# The first episode an experiment's `find_solution` counts, where it drops
# the ones before: deep_sea_stochastic's fails on the empty frame that
# leaves while fewer episodes are logged.
FIRST_COUNTED_EPISODE = {'deep_sea_stochastic': 100}


def solved_episode(job: Job, num_episodes: Optional[int]) -> Optional[int]:
  """The episode at which bsuite's analysis counts the job's id solved.

  None if not (yet) solved. bsuite's own `find_solution` decides, on the
  rows logged so far with the id's settings (e.g. its size) as columns.
  """
  from bsuite import sweep  # pylint: disable=g-import-not-at-top
  df = logged_rows(job, num_episodes)
  experiment = job.bsuite_id.partition('/')[0]
  if df.empty or df.episode.max() < FIRST_COUNTED_EPISODE.get(experiment, 0):
    return None
  for key, value in sweep.SETTINGS[job.bsuite_id].items():
    df[key] = value
  find_solution = solution_finder(experiment)
  # The experiments' finders differ in what they take: deep_sea's merges
  # the logged rows back unless told not to, deep_sea_stochastic's has no
  # `merge` (its answer has the same `solved` and `episode` columns).
  parameters = inspect.signature(find_solution).parameters
  options = {}
  if 'merge' in parameters:
    options['merge'] = False
  if num_episodes and 'num_episodes' in parameters:
    options['num_episodes'] = num_episodes
  with warnings.catch_warnings():
    warnings.simplefilter('ignore', FutureWarning)  # as in bsuite_scores.score
    solution = find_solution(df, **options)
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
  return common.read_json_lines(os.path.join(directory, ATTEMPTS_FILE))


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
  # --stop_when_solved whose criterion could not be read: runs to its budget.
  criterion_failed: bool = False
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
    log.write(f'=== bsuite_sweep {utc(started)}: {shlex.join(job.command)}\n')
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
      if (not running.job.stop_when_solved or running.solved_at is not None
          or running.criterion_failed):
        continue
      try:
        episode = solved_episode(running.job, self._num_episodes)
      except Exception as e:  # pylint: disable=broad-except
        # A criterion that cannot be read must not end the sweep (and so
        # its runs): the run goes on to its budget.
        running.criterion_failed = True
        print(f'could not read bsuite\'s solved criterion for '
              f'{running.job.label}, so it runs to its budget: '
              f'{type(e).__name__}: {e}', flush=True)
        continue
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
    attempt = {'started': utc(running.started), 'exit_code': code,
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
                  finished=utc(time.time()))
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


def utc(seconds: float) -> str:
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
