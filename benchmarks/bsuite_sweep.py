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

import difflib
import importlib.util
import os
import re
import signal
import sys
from typing import Dict, List, Optional, Sequence

from absl import app
from absl import flags

import bsuite_runs  # benchmarks/bsuite_runs.py, next to this script.
import bsuite_scores  # benchmarks/bsuite_scores.py, next to this script.

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


# ----------------------------------------------------------------- flags ---


def _unknown(item: str, experiments: Dict[str, List[str]]) -> UsageError:
  name = item.removeprefix(bsuite_runs.ID_PREFIX)
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
  experiments = bsuite_runs.sweep_ids()
  ids = []
  for item in items:
    item = item.strip()
    if not item:
      continue
    name = item.removeprefix(bsuite_runs.ID_PREFIX)
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


def parse_agents(agent_flags: Sequence[str], reference_flags: Sequence[str],
                 check_files: bool = True) -> List[bsuite_runs.Agent]:
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
    agents.append(bsuite_runs.Agent(name, gin_file=gin_file))
  for name in reference_flags:
    if name not in REFERENCES:
      raise UsageError(f'--reference={name}: bsuite\'s reference agents are '
                       f'{", ".join(REFERENCES)}.')
    agents.append(bsuite_runs.Agent(name, module=REFERENCES[name]))
  names = [agent.name for agent in agents]
  for name in names:
    if names.count(name) > 1:
      raise UsageError(f'Agent name {name!r} given twice (--agent, '
                       '--reference): names must differ.')
  if not agents:
    raise UsageError('Give at least one --agent=NAME=GIN_FILE or '
                     '--reference=NAME.')
  return agents


def check_reference_modules(agents: Sequence[bsuite_runs.Agent]) -> None:
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
    budget = bsuite_runs.episode_budget(experiment)
    if num_episodes > budget:
      raise UsageError(
          f'--num_episodes={num_episodes} is above bsuite\'s budget for '
          f'{experiment} ({budget}): leave it out to run bsuite\'s.')


def check_stop_when_solved(bsuite_ids: Sequence[str]) -> None:
  """Raises UsageError if an id's experiment has no solved criterion."""
  for experiment in dict.fromkeys(i.partition('/')[0] for i in bsuite_ids):
    if bsuite_runs.solution_finder(experiment) is None:
      raise UsageError(
          f'--stop_when_solved: bsuite\'s analysis of {experiment} has no '
          'solved criterion (find_solution); only deep_sea and '
          'deep_sea_stochastic have one.')


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
    jobs = [bsuite_runs.make_job(agent, bsuite_id, work_dir,
                                 _NUM_EPISODES.value, _GIN_BINDINGS.value,
                                 _STOP_WHEN_SOLVED.value)
            for bsuite_id in bsuite_ids for agent in agents]
    print(f'{len(bsuite_ids)} bsuite ids x {len(agents)} agents; runs in '
          f'{work_dir}', flush=True)
    runner = bsuite_runs.Runner(bsuite_runs.plan(jobs), _JOBS.value,
                                _NUM_EPISODES.value)
    runner.run()
    failed = runner.failed

  markdown = bsuite_scores.score(
      agents, bsuite_ids, work_dir, out_dir, _NUM_EPISODES.value,
      bsuite_scores.recorded_command(sys.argv, os.getcwd()))
  if markdown is None:
    print(f'Nothing to score: no bsuite CSV log under {work_dir} for these '
          'agents and ids.', flush=True)
    return 1
  print(f'\n{markdown}\nWritten to {out_dir}: scores.md, scores.csv and the '
        'plots.', flush=True)
  if failed:
    print(f'{len(failed)} runs failed: '
          f'{", ".join(job.label for job in failed)} (their logs: '
          f'{bsuite_runs.LOG_FILE} in each run directory).', flush=True)
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
