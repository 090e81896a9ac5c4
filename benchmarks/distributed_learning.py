r"""The on-policy loop on 2 actor processes beside the one-process loop.

For each task and seed, the same gin file runs in one process (`single`)
and with its collection on 2 actor processes on this machine (`2actors`,
docs/distributed.md "The on-policy family"), at the same seed and budget,
back to back, so that the machine's load falls on both alike:

    .venv/bin/python benchmarks/distributed_learning.py \
        --output_dir=runs/distributed_learning \
        --out=benchmarks/results/distributed/learning_<date>.md

Tasks (--tasks), seeds 0-4 (--seeds) each:
* mountaincar: RND-PPO on MountainCar-v0, gin/rnd_ppo/mountaincar.gin
  and gin/rnd_ppo/mountaincar_distributed.gin, 100,000 env steps (the
  file's NUM_ENV_STEPS). Read as rnd_ppo_benchmark.py reads it: the first
  env step with a terminated episode in training (the flag:
  train/Metrics/TerminatedEpisodes > 0) and the final greedy eval return
  (eval/Metrics/AverageReturn over 10 episodes).
* cartpole: the PPO twin on CartPole-v1, gin/ppo/cartpole.gin alone and
  with DISTRIBUTED_BINDINGS (its 8 envs: 4 per actor), 200,000 env steps:
  the final greedy eval return and the first env step the greedy eval
  reached the file's target, 475.
* deep_sea: RND-PPO on bsuite deep_sea sizes 10-20 (--bsuite_ids
  deep_sea/0-5) at 1,000 episodes an id (--num_episodes; bsuite's budget
  is 10,000), gin/rnd_ppo/bsuite_deep_sea.gin and
  gin/rnd_ppo/bsuite_deep_sea_distributed.gin (its 4 envs: 2 per actor):
  per seed, one bsuite_sweep.py of both agents (rnd_ppo, rnd_ppo_2actors:
  id by id, one agent then the other) with SEED=<seed>; per id, the
  episode at which bsuite's own analysis (find_solution) counts it solved.
  deep_sea's bsuite score is the share of ids solved.

Runs: train_eval's run directories <output_dir>/<task>/<variant>/seed<s>/
(its output in train_eval.log there); a sweep's work dir
<output_dir>/deep_sea/seed<s>/ (each run's output in its sweep.log). One
process at a time (--jobs: runs at once, also passed to the sweeps).
--gin_bindings go to every run (a trial: NUM_ENV_STEPS=4096). Every ended
run appends its attempt to SWEEP_ATTEMPTS.jsonl in its directory, and one
that exited 0 gets SWEEP_DONE.json: bsuite_sweep.py's files, read by its
readers. A finished run is skipped, any other started again (train_eval
resumes it from its checkpoint); a finished run whose command differs
stops the script before anything starts (use another --output_dir).
--report_only rereads what is there.

Wall and CPU seconds, per attempt, summed over a run's attempts. CPU is
`os.wait4`'s rusage of the train_eval process: its own and that of the
descendants it waited for, which are its actor processes (spawned by
multiprocessing, joined when the run stops, a dead one reaped when it is
restarted) and its console filter. Checked on a 4,096-step run of
mountaincar_distributed.gin: rusage 50.5 CPU-s, the process tree sampled
every 0.1 s until it exited 50.2 (the learner 36.7, each actor 6.7).
machine.jsonl in output_dir: this machine's CPU (model, count, vector
extensions) and its load average before and after every run and sweep;
the table shows them.

Estimated cost (--jobs=1), extrapolated from one seed's trial runs on a
2-core machine at load 6-9: mountaincar and cartpole at 8,192 and 30,720
env steps (start-up, then the cost per step), deep_sea at its largest
size, 20, for the full 1,000 episodes (17 s wall and 14 CPU-s single, 53
s and 37 CPU-s with 2 actors); a guide, not a measurement:

| task, per seed | single: wall, CPU | 2 actors: wall, CPU |
|---|---|---|
| mountaincar, 100,000 env steps | ~20 s, ~18 CPU-s | ~90 s, ~60 CPU-s |
| cartpole, 200,000 env steps | ~70 s, ~45 CPU-s | ~155 s, ~115 CPU-s |
| deep_sea sizes 10-20, 6 ids | ~90 s, ~75 CPU-s | ~280 s, ~210 CPU-s |

About 12 minutes of wall time and 9 CPU-minutes a seed (the 2-actor
runs' start-up, three interpreters with TensorFlow, is most of their
cost at these budgets), so about an hour and 45 CPU-minutes for seeds
0-4; a quiet machine takes less.
"""

import argparse
import concurrent.futures
import dataclasses
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple

import bsuite_runs  # benchmarks/bsuite_runs.py, next to this script.
import bsuite_scores  # benchmarks/bsuite_scores.py, next to this script.
import common  # benchmarks/common.py, next to this script.
import rnd_ppo_benchmark  # benchmarks/rnd_ppo_benchmark.py, next to it.

REPO_ROOT = common.REPO_ROOT
SWEEP = os.path.join(REPO_ROOT, 'benchmarks', 'bsuite_sweep.py')
# What gin/rnd_ppo/mountaincar_distributed.gin adds to its base file.
DISTRIBUTED_BINDINGS = (
    'import tfa_explore.experiments.on_policy_distributed',
    'run_experiment.experiment = @on_policy.distributed_train_eval',
    'on_policy.Distributed.num_actors = 2',
    "on_policy.Distributed.actor_mode = 'process'",
)
VARIANTS = ('single', '2actors')
RUN_LOG = 'train_eval.log'
MACHINE_LOG = 'machine.jsonl'


@dataclasses.dataclass(frozen=True)
class Task:
  """A task read from TensorBoard logs: its files, budget and result."""
  title: str
  gin_file: str  # relative to the repo
  distributed_gin_file: str
  distributed_bindings: Tuple[str, ...]
  budget: int  # env steps: the gin file's NUM_ENV_STEPS
  # The first env step of what counts as learning: `first_success` (a
  # terminated episode in training) or `first_target` (greedy eval >=
  # `return_target`), as rnd_ppo_benchmark.summarize_run names them.
  first: str
  first_label: str
  return_target: Optional[float] = None


TASKS = {
    'mountaincar': Task(
        'RND-PPO, MountainCar-v0', 'gin/rnd_ppo/mountaincar.gin',
        'gin/rnd_ppo/mountaincar_distributed.gin', (), 100_000,
        'first_success', 'flag first reached in training'),
    'cartpole': Task(
        'PPO, CartPole-v1', 'gin/ppo/cartpole.gin', 'gin/ppo/cartpole.gin',
        DISTRIBUTED_BINDINGS, 200_000, 'first_target',
        'first greedy eval >= 475', return_target=475.0),
}
DEEP_SEA = 'deep_sea'
# bsuite_sweep.py's agents: name -> gin file, in VARIANTS' order.
DEEP_SEA_AGENTS = {'rnd_ppo': 'gin/rnd_ppo/bsuite_deep_sea.gin',
                   'rnd_ppo_2actors':
                       'gin/rnd_ppo/bsuite_deep_sea_distributed.gin'}


# ------------------------------------------------------------------ runs ---


@dataclasses.dataclass
class Run:
  """One train_eval run of a task, variant and seed."""
  label: str
  run_dir: str
  command: List[str]
  settings: Dict[str, object]  # what its result depends on


def run_dir(output_dir: str, task: str, variant: str, seed: int) -> str:
  return os.path.join(output_dir, task, variant, f'seed{seed}')


def make_run(output_dir: str, task: str, variant: str, seed: int,
             bindings: Sequence[str]) -> Run:
  spec = TASKS[task]
  if variant == 'single':
    gin_file, ours = spec.gin_file, []
  else:
    gin_file, ours = spec.distributed_gin_file, list(spec.distributed_bindings)
  ours += [f'SEED={seed}'] + list(bindings)
  directory = run_dir(output_dir, task, variant, seed)
  return Run(f'{task}/{variant}/seed{seed}', directory,
             common.train_eval_command(
                 directory, os.path.join(REPO_ROOT, gin_file), ours),
             {'gin_file': gin_file, 'bindings': ours})


def sweep_dir(output_dir: str, seed: int) -> str:
  return os.path.join(output_dir, DEEP_SEA, f'seed{seed}')


def deep_sea_agents() -> List[bsuite_runs.Agent]:
  return [bsuite_runs.Agent(name, gin_file=os.path.join(REPO_ROOT, gin_file))
          for name, gin_file in DEEP_SEA_AGENTS.items()]


def sweep_command(output_dir: str, seed: int, bsuite_ids: Sequence[str],
                  num_episodes: int, jobs: int,
                  bindings: Sequence[str]) -> List[str]:
  return ([sys.executable, SWEEP] +
          [f'--agent={name}={os.path.join(REPO_ROOT, gin_file)}'
           for name, gin_file in DEEP_SEA_AGENTS.items()] +
          [f'--bsuite_ids={",".join(bsuite_ids)}',
           f'--num_episodes={num_episodes}', f'--jobs={jobs}',
           f'--work_dir={sweep_dir(output_dir, seed)}',
           f'--gin_bindings=SEED={seed}'] +
          [f'--gin_bindings={binding}' for binding in bindings])


def sweep_jobs(output_dir: str, seed: int, bsuite_ids: Sequence[str],
               num_episodes: int,
               bindings: Sequence[str]) -> List[bsuite_runs.Job]:
  """The sweep's runs as bsuite_sweep.py makes them (dirs, settings)."""
  return [bsuite_runs.make_job(agent, bsuite_id, sweep_dir(output_dir, seed),
                               num_episodes, [f'SEED={seed}'] + list(bindings))
          for bsuite_id in bsuite_ids for agent in deep_sea_agents()]


def changed_settings(runs) -> List[str]:
  """Labels of finished runs (Run or bsuite_runs.Job) run with other
  settings: rerunning them in the same directory would resume them."""
  changed = []
  for run in runs:
    done = bsuite_runs.read_done(run.run_dir)
    if done is not None and done.get('settings') != run.settings:
      changed.append(f'{run.label} (was {done.get("settings")})')
  return changed


def log_machine(output_dir: str, event: str, label: str) -> None:
  """A line of machine.jsonl: the CPU and the load average, now."""
  os.makedirs(output_dir, exist_ok=True)
  with open(os.path.join(output_dir, MACHINE_LOG), 'a') as f:
    f.write(json.dumps({'time': bsuite_runs.utc(time.time()), 'event': event,
                        'label': label, 'cpu': common.cpu_description(),
                        'load': [round(x, 2) for x in os.getloadavg()]})
            + '\n')


def start_logged(command: List[str], log_path: str) -> subprocess.Popen:
  """Starts `command` from the repo root, its output appended to
  `log_path` after a line naming it."""
  os.makedirs(os.path.dirname(log_path), exist_ok=True)
  with open(log_path, 'a') as log:
    log.write(f'=== {bsuite_runs.utc(time.time())}: {shlex.join(command)}\n')
    log.flush()
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, cwd=REPO_ROOT)


def wait(process: subprocess.Popen):
  """(exit code, CPU seconds, interrupted) of `process`, once it ended.

  `os.wait4`, not Popen.wait: its rusage covers the process and the
  children it waited for (a run's actor processes). A Ctrl-C reaches the
  whole process group, so the process saves its run and exits: it is
  waited for still, and `interrupted` says so.
  """
  interrupted = False
  try:
    _, status, usage = os.wait4(process.pid, 0)
  except KeyboardInterrupt:
    interrupted = True
    _, status, usage = os.wait4(process.pid, 0)
  process.returncode = os.waitstatus_to_exitcode(status)
  return process.returncode, usage.ru_utime + usage.ru_stime, interrupted


def train(run: Run, output_dir: str):
  """Runs one train_eval attempt and records it; (label, exit code, wall
  s, CPU s). A finished run is not run again: (label, 0, None, None)."""
  if bsuite_runs.read_done(run.run_dir) is not None:
    return run.label, 0, None, None
  log_machine(output_dir, 'start', run.label)
  started, start = time.time(), time.monotonic()
  code, cpu, _ = wait(start_logged(run.command,
                                   os.path.join(run.run_dir, RUN_LOG)))
  wall = time.monotonic() - start
  log_machine(output_dir, 'end', run.label)
  attempt = {'started': bsuite_runs.utc(started), 'exit_code': code,
             'wall_seconds': round(wall, 3), 'cpu_seconds': round(cpu, 3),
             'settings': run.settings}
  with open(os.path.join(run.run_dir, bsuite_runs.ATTEMPTS_FILE), 'a') as f:
    f.write(json.dumps(attempt) + '\n')
  if code == 0:
    path = os.path.join(run.run_dir, bsuite_runs.DONE_FILE)
    with open(path + '.tmp', 'w') as f:
      json.dump(dict(attempt, attempts=len(bsuite_runs.read_attempts(
          run.run_dir)), finished=bsuite_runs.utc(time.time())), f, indent=2)
    os.replace(path + '.tmp', path)
  return run.label, code, wall, cpu


def sweep(output_dir: str, seed: int, command: List[str]) -> int:
  """One seed's bsuite sweep (it skips and records its own runs)."""
  label = f'{DEEP_SEA}/seed{seed}'
  log_machine(output_dir, 'start', label)
  print(shlex.join(command), flush=True)
  code, _, interrupted = wait(start_logged(
      command, os.path.join(sweep_dir(output_dir, seed), 'sweeps.log')))
  log_machine(output_dir, 'end', label)
  if interrupted:
    raise KeyboardInterrupt
  return code


# --------------------------------------------------------------- reading ---


def costs(directory: str) -> Dict[str, float]:
  """Wall and CPU seconds over a run's attempts; whether it finished."""
  attempts = bsuite_runs.read_attempts(directory)
  return dict(wall=sum(a['wall_seconds'] for a in attempts),
              cpu=sum(a['cpu_seconds'] for a in attempts),
              attempts=len(attempts),
              finished=bsuite_runs.read_done(directory) is not None)


def read_machine_log(output_dir: str) -> List[Dict[str, object]]:
  return common.read_json_lines(os.path.join(output_dir, MACHINE_LOG))


def loads(machine_log, label: str) -> str:
  """'a -> b': the 1-minute load average at the last start and end of
  `label`'s process; '-' when not recorded."""
  marks = {}
  for line in machine_log:
    if line['label'] == label:
      marks[line['event']] = line['load'][0]
  if 'start' not in marks:
    return '-'
  return f'{marks["start"]:.1f} -> ' + (
      f'{marks["end"]:.1f}' if 'end' in marks else '?')


def summarize_task_run(directory: str, task: str) -> Dict[str, object]:
  """rnd_ppo_benchmark's reading of a run's logs, with its costs."""
  spec = TASKS[task]
  summary = rnd_ppo_benchmark.summarize_run(
      directory, task, spec=dict(return_target=spec.return_target))
  summary.update(costs(directory))
  return summary


def summarize_deep_sea(output_dir: str, seed: int, bsuite_ids: Sequence[str],
                       num_episodes: int, bindings: Sequence[str]):
  """{agent: {solved: {id: episode or None}, episodes: {id: n}, wall, cpu,
  finished}} of one seed's sweep, bsuite's find_solution on each run's
  journals."""
  summaries = {name: dict(solved={}, episodes={}, wall=0.0, cpu=0.0,
                          finished=True) for name in DEEP_SEA_AGENTS}
  for job in sweep_jobs(output_dir, seed, bsuite_ids, num_episodes, bindings):
    summary = summaries[job.agent.name]
    episodes = bsuite_runs.episodes_logged(job)
    summary['episodes'][job.bsuite_id] = episodes
    summary['solved'][job.bsuite_id] = (
        bsuite_runs.solved_episode(job, num_episodes) if episodes else None)
    spent = costs(job.run_dir)
    summary['wall'] += spent['wall']
    summary['cpu'] += spent['cpu']
    summary['finished'] = summary['finished'] and spent['finished']
  return summaries


def _step(value) -> str:
  return 'never' if value is None else f'{value:,}'


def _seconds(summary) -> List[str]:
  cores = summary['cpu'] / summary['wall'] if summary['wall'] else 0.0
  return [f'{summary["wall"]:,.0f}', f'{summary["cpu"]:,.0f}',
          f'{cores:.2f}']


def spread(name: str, single: Sequence[float],
           distributed: Sequence[float], fmt: str = '.1f') -> str:
  """One line: both variants' range and median, and how many 2-actor
  seeds fall inside the single-process seeds' range."""
  if not single or not distributed:
    return f'* {name}: not enough runs to compare.'
  low, high = min(single), max(single)
  inside = sum(low <= value <= high for value in distributed)
  return (f'* {name}: single {low:{fmt}} to {high:{fmt}} (median '
          f'{statistics.median(single):{fmt}}), 2 actors '
          f'{min(distributed):{fmt}} to {max(distributed):{fmt}} (median '
          f'{statistics.median(distributed):{fmt}}); 2-actor seeds inside '
          f'the single-process range: {inside}/{len(distributed)}.')


def _totals(rows) -> str:
  parts = []
  for variant in VARIANTS:
    wall = sum(r['wall'] for v, r in rows if v == variant)
    cpu = sum(r['cpu'] for v, r in rows if v == variant)
    parts.append(f'{variant} {wall:,.0f} s wall, {cpu:,.0f} CPU-s')
  return '* totals: ' + '; '.join(parts) + '.'


def task_table(task: str, results, seeds, machine_log,
               bindings: Sequence[str] = ()) -> List[str]:
  """Markdown of one event-file task: a row per seed and variant."""
  spec = TASKS[task]
  distributed = spec.distributed_gin_file + (
      ' + the 2-actor bindings' if spec.distributed_bindings else '')
  budget = (
      'budget set by the extra bindings' if any(
          b.replace(' ', '').startswith('NUM_ENV_STEPS=') for b in bindings)
      else f'{spec.budget:,} env steps (the gin file\'s budget)')
  lines = [f'### {spec.title}, {budget}, seeds '
           f'{",".join(map(str, seeds))}', '',
           f'single: `{spec.gin_file}`; 2actors: `{distributed}`.', '',
           f'| seed | variant | env steps | {spec.first_label} | final '
           'greedy return | wall s | CPU-s | cores | load 1 min |',
           '|---|---|---|---|---|---|---|---|---|']
  for seed in seeds:
    for variant in VARIANTS:
      run = results[(task, variant, seed)]
      steps = f'{run["steps"]:,}' + ('' if run['finished'] else
                                     ' (unfinished)')
      lines.append('| ' + ' | '.join(
          [str(seed), variant, steps, _step(run[spec.first]),
           f'{run["final_return"]:.1f}'] + _seconds(run) +
          [loads(machine_log, f'{task}/{variant}/seed{seed}')]) + ' |')
  by_variant = {variant: [results[(task, variant, s)] for s in seeds]
                for variant in VARIANTS}
  lines.append('')
  for variant, runs in by_variant.items():
    reached = [r[spec.first] for r in runs if r[spec.first] is not None]
    lines.append(f'* {variant}: {spec.first_label} on {len(reached)}/'
                 f'{len(runs)} seeds' + (
                     f' (env steps {min(reached):,} to {max(reached):,})'
                     if reached else '') + '.')
  lines.append(spread('final greedy return',
                      [r['final_return'] for r in by_variant['single']],
                      [r['final_return'] for r in by_variant['2actors']]))
  lines.append(spread(
      spec.first_label + ' (seeds that reached it)',
      [r[spec.first] for r in by_variant['single']
       if r[spec.first] is not None],
      [r[spec.first] for r in by_variant['2actors']
       if r[spec.first] is not None], fmt=',.0f'))
  lines.append(_totals([(v, r) for v, runs in by_variant.items()
                        for r in runs]))
  return lines + ['']


def deep_sea_table(summaries, seeds, bsuite_ids, num_episodes,
                   machine_log) -> List[str]:
  """Markdown of the deep_sea sweeps: a row per seed and variant."""
  from bsuite import sweep as bsuite_sweep  # pylint: disable=g-import-not-at-top
  sizes = {i: bsuite_sweep.SETTINGS[i]['size'] for i in bsuite_ids}
  smallest, largest = min(sizes.values()), max(sizes.values())
  size_range = (f'size {smallest}' if smallest == largest
                else f'sizes {smallest}-{largest}')
  lines = [f'### RND-PPO, bsuite deep_sea {size_range} '
           f'({",".join(bsuite_ids)}), {num_episodes:,} episodes an id, seeds '
           f'{",".join(map(str, seeds))}', '',
           'single: `' + DEEP_SEA_AGENTS['rnd_ppo'] + '` (rnd_ppo); 2actors: `'
           + DEEP_SEA_AGENTS['rnd_ppo_2actors'] + '` (rnd_ppo_2actors). '
           'Per size, the episode at which bsuite\'s find_solution counts it '
           'solved; score: the share of ids solved (bsuite\'s deep_sea score '
           'over these ids). Load: of the seed\'s whole sweep.', '',
           '| seed | variant | score | solved at episode, by size | wall s | '
           'CPU-s | cores | load 1 min |',
           '|---|---|---|---|---|---|---|---|']
  scores = {variant: [] for variant in VARIANTS}
  rows = []
  for seed in seeds:
    for variant, agent in zip(VARIANTS, DEEP_SEA_AGENTS):
      summary = summaries[seed][agent]
      solved = summary['solved']
      score = sum(e is not None for e in solved.values()) / len(bsuite_ids)
      scores[variant].append(score)
      rows.append((variant, summary))
      by_size = ', '.join(
          f'{sizes[i]}: {_step(solved.get(i))}' for i in bsuite_ids)
      mark = '' if summary['finished'] else ' (unfinished)'
      lines.append('| ' + ' | '.join(
          [str(seed), variant, f'{score:.2f}{mark}', by_size] +
          _seconds(summary) + [loads(machine_log, f'{DEEP_SEA}/seed{seed}')])
                   + ' |')
  lines += ['', spread('score', scores['single'], scores['2actors'],
                       fmt='.2f'), _totals(rows), '']
  return lines


def machine_lines(machine_log, bindings: Sequence[str]) -> List[str]:
  """Markdown lines of a results file's header: the CPUs and the range of
  the load average that machine.jsonl recorded, the extra bindings."""
  cpus = list(dict.fromkeys(line['cpu'] for line in machine_log))
  every = [line['load'][0] for line in machine_log]
  return [f'CPU: {"; ".join(cpus) or "not recorded"}.',
          (f'Load average (1 min) over the runs: {min(every):.1f} to '
           f'{max(every):.1f}.' if every else 'Load not recorded.'),
          f'Extra bindings: {", ".join(bindings) or "none"}.', '']


def report(output_dir: str, tasks: Sequence[str], seeds: Sequence[int],
           bsuite_ids: Sequence[str], num_episodes: int,
           bindings: Sequence[str], command_line: str) -> str:
  """The comparison's markdown, from what the runs logged."""
  machine_log = read_machine_log(output_dir)
  lines = ['## The on-policy loop on 2 actor processes beside one process',
           '',
           'Same gin file, seed and budget; `2actors` collects on 2 actor '
           'processes on this machine (docs/distributed.md, "The on-policy '
           'family"). Each seed ran single then 2actors, one process at a '
           'time unless --jobs says otherwise. Wall s and CPU-s: all '
           'attempts of a run; CPU of the train_eval process and the '
           'children it waited for (the actor processes); cores = CPU-s / '
           'wall s. Load: the 1-minute load average before -> after.',
           ''] + machine_lines(machine_log, bindings)
  for task in tasks:
    if task == DEEP_SEA:
      summaries = {seed: summarize_deep_sea(output_dir, seed, bsuite_ids,
                                            num_episodes, bindings)
                   for seed in seeds}
      lines += deep_sea_table(summaries, seeds, bsuite_ids, num_episodes,
                              machine_log)
    else:
      results = {(task, variant, seed): summarize_task_run(
          run_dir(output_dir, task, variant, seed), task)
                 for variant in VARIANTS for seed in seeds}
      lines += task_table(task, results, seeds, machine_log, bindings)
  lines += [f'Command: `{command_line}`',
            f'Commit: {common.commit_description()}; date: '
            f'{bsuite_runs.utc(time.time())}.']
  return '\n'.join(lines) + '\n'


# ------------------------------------------------------------------ main ---


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--output_dir', default='runs/distributed_learning')
  parser.add_argument('--out', default=None,
                      help='the markdown table (default: '
                      '<output_dir>/learning.md)')
  parser.add_argument('--tasks', default=','.join(list(TASKS) + [DEEP_SEA]))
  parser.add_argument('--seeds', default='0,1,2,3,4')
  parser.add_argument('--jobs', type=int, default=1,
                      help='runs at once (1: each pair back to back)')
  parser.add_argument('--bsuite_ids', default='deep_sea/0-5')
  parser.add_argument('--num_episodes', type=int, default=1000,
                      help='deep_sea: episodes an id')
  parser.add_argument('--gin_bindings', action='append', default=[],
                      help='extra binding for every run (repeatable)')
  parser.add_argument('--report_only', action='store_true')
  args = parser.parse_args(argv)
  args.tasks = args.tasks.split(',')
  for task in args.tasks:
    if task not in TASKS and task != DEEP_SEA:
      parser.error(f'--tasks: unknown {task!r}; tasks: '
                   f'{", ".join(list(TASKS) + [DEEP_SEA])}')
  args.seeds = [int(s) for s in args.seeds.split(',')]
  if args.jobs < 1:
    parser.error(f'--jobs must be >= 1, got {args.jobs}')
  if DEEP_SEA in args.tasks:
    import bsuite_sweep  # pylint: disable=g-import-not-at-top
    try:
      args.bsuite_ids = bsuite_sweep.parse_ids(args.bsuite_ids.split(','))
    except bsuite_sweep.UsageError as e:
      parser.error(str(e))
  else:
    args.bsuite_ids = []
  args.output_dir = os.path.abspath(args.output_dir)
  return args


def run_all(args) -> List[str]:
  """Runs what is not finished; the labels of failed runs and sweeps."""
  runs = [make_run(args.output_dir, task, variant, seed, args.gin_bindings)
          for seed in args.seeds for task in args.tasks if task in TASKS
          for variant in VARIANTS]
  jobs = [job for seed in args.seeds for job in sweep_jobs(
      args.output_dir, seed, args.bsuite_ids, args.num_episodes,
      args.gin_bindings)] if DEEP_SEA in args.tasks else []
  changed = changed_settings(runs + jobs)
  if changed:
    raise SystemExit('ERROR: finished runs with other settings (use another '
                     '--output_dir): ' + '; '.join(changed))
  print(f'CPU: {common.cpu_description()}', flush=True)
  failed = []
  pool = concurrent.futures.ThreadPoolExecutor(args.jobs)
  try:
    for label, code, wall, cpu in pool.map(
        lambda run: train(run, args.output_dir), runs):
      print(f'{label}: finished earlier, skipped' if wall is None else
            f'{label}: exit code {code}, {wall:.0f} s wall, {cpu:.0f} CPU-s',
            flush=True)
      if code:
        failed.append(label)
  finally:
    # Interrupted: the running runs got the Ctrl-C too; they save, exit
    # and are recorded; the others are not started.
    pool.shutdown(wait=True, cancel_futures=True)
  if DEEP_SEA in args.tasks:
    for seed in args.seeds:
      code = sweep(args.output_dir, seed, sweep_command(
          args.output_dir, seed, args.bsuite_ids, args.num_episodes,
          args.jobs, args.gin_bindings))
      print(f'{DEEP_SEA}/seed{seed}: sweep exit code {code}', flush=True)
      if code:
        failed.append(f'{DEEP_SEA}/seed{seed}')
  return failed


def main(argv=None):
  args = parse_args(argv)
  try:
    failed = [] if args.report_only else run_all(args)
  except KeyboardInterrupt:
    print('Interrupted: the next run of this command resumes.', flush=True)
    sys.exit(130)
  # Reading the logs imports TensorFlow here, after the runs: its C++
  # start-up lines would only crowd the table.
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')
  table = report(args.output_dir, args.tasks, args.seeds, args.bsuite_ids,
                 args.num_episodes, args.gin_bindings,
                 bsuite_scores.recorded_command(sys.argv, os.getcwd()))
  print(table)
  out = args.out or os.path.join(args.output_dir, 'learning.md')
  os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
  with open(out, 'w') as f:
    f.write(table)
  print(f'Written to {out}', flush=True)
  if failed:
    raise SystemExit(f'Failed: {", ".join(failed)} (logs: {RUN_LOG} in each '
                     'run directory, sweeps.log in each sweep\'s)')


if __name__ == '__main__':
  main()
