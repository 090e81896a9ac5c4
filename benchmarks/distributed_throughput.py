r"""Throughput of the on-policy loop on this machine, measured and projected.

Measures RND-PPO on Montezuma's Revenge (gin/rnd_ppo/montezuma.gin; with
--tasks=montezuma,mountaincar also gin/rnd_ppo/mountaincar.gin, a cheap
second row) in three configurations, interleaved (single, 1actor,
2actors, then again, --repeats times), and reports the medians:

* `single`: the one-process loop (`on_policy.train_eval`);
* `1actor`, `2actors`: the same file with its collection on 1 or 2 actor
  processes (`on_policy.distributed_train_eval`, actor_mode 'process';
  docs/distributed.md, "The on-policy family").

    .venv/bin/python benchmarks/distributed_throughput.py \
        --output_dir=runs/distributed_throughput \
        --out=benchmarks/results/distributed/throughput_<date>.md

Each run is `train/train_eval.py` with the RND warm-up cut to 64 steps of
the batch, evaluations and checkpoints out of the way, a progress line
every iteration and a budget it never reaches. After --warmup iterations
(the first traces the loop's functions; none is counted) the window runs
--iterations iterations: from one progress line to another
(`common.progress_marks`), the CPU seconds of every process of the run
are read (psutil) at both lines, and the run is stopped one iteration
later (so that the window's summaries are flushed). Per run:

* agent steps/s: the loop's env steps (agent steps of 4 frames on
  Montezuma; reset steps are not counted) over the window's wall time;
* CPU-ms per agent step, by role: the train_eval process (single: the
  whole loop; distributed: the learner, with the Reverb server in its
  process), each actor process (per agent step of its own, its share of
  the batch: what one actor core costs per step it collects), other
  processes (the console filter, multiprocessing's resource tracker);
* the learner's cost per iteration (one batch of num_envs x
  rollout_length agent steps): its wait for the actors' rollouts
  (train/Replay/rollout_wait_seconds, the mean over the window), its busy
  wall time (the iteration's wall time minus that wait: the batch's
  metrics, `agent.train`, the weights' push, summaries) and its process's
  CPU seconds.

The load average before and after each run and this machine's CPU (model,
count, vector extensions) go to machine.jsonl in --output_dir
(distributed_learning.py's record); the table shows them. Every run's
numbers are also written as JSON lines (`<out>.jsonl` beside --out), one
run a line, which `--project=<that file>` reads again.

Projection (printed after the table; `--project` alone reads a file of
runs). The loop is synchronous (docs/distributed.md): the learner
publishes its weights, every actor collects its share of the batch, the
learner trains on the whole batch while the actors wait. With N actor
cores, each stepping E envs (the measured configuration's envs per
actor, so the batch is N x E x rollout_length agent steps), c the actor
CPU-s per agent step of its own and l the learner's busy seconds per
agent step of the batch (its busy seconds per batch over the batch):

    time per iteration  = B c / N  +  B l'         (slowest actor, then
                                                    the learner)
    agent steps/s       = B / time per iteration = 1 / (c / N + l')
    ceilings            = N / c (actors alone), 1 / l' (learner alone);
                          a loop that overlapped collection and training
                          would reach min(N / c, 1 / l')
    binds               = the larger of the two shares, c / N against l'

where l' = l / speedup (--accelerator_speedup: an accelerator learner
that trains a batch this many times faster than this machine's CPU
learner; without it, the CPU learner as measured here). The model
assumes an actor has a core to itself (c measured as CPU time, not
wall), that the learner's cost grows in proportion to the batch (the
epochs and minibatches run over every agent step of it), and that
transport (the weights' push and pull, the rollouts' writes) costs
nothing beyond what the two sides' CPU seconds hold; the model check
line after the table puts its iteration time beside the measured one.
Time to the budget: --budget agent steps (400M: the Montezuma file's
NUM_ENV_STEPS) at the synchronous rate.

On a machine with other work on its cores, the learner's busy seconds
include its waits for a core; its CPU-s per iteration stand beside them.

Estimated cost, extrapolated from trial runs of a few iterations on a
2-core machine at load 7 (a guide, not a measurement): a Montezuma run
starts in ~20 s (one process) or ~60 s (with actors: three interpreters
with TensorFlow), then takes ~5-7 s an iteration; with the defaults (3
warm-up + 10 timed + 1 iteration a run, 3 configurations, 3 repeats)
about 20 minutes, less on an idle machine; --tasks=montezuma,mountaincar
adds about 6 minutes (mostly start-up).
"""

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import sys
import time
from typing import Dict, List, Optional, Sequence

import bsuite_runs  # benchmarks/bsuite_runs.py, next to this script.
import bsuite_scores  # benchmarks/bsuite_scores.py, next to this script.
import common  # benchmarks/common.py, next to this script.
import distributed_learning  # benchmarks/distributed_learning.py, next to it.
import throughput  # benchmarks/throughput.py, next to this script.

REPO_ROOT = common.REPO_ROOT
TASKS = {'montezuma': throughput.MONTEZUMA_GIN,
         'mountaincar': throughput.RND_TASKS['MountainCar'][0]}
CONFIGS = {'single': 0, '1actor': 1, '2actors': 2}  # name -> actor processes
# The Montezuma file's NUM_ENV_STEPS: agent steps of 4 frames, the paper's
# 1.6e9 frames.
BUDGET = 400_000_000
# Every run: a progress line (and a flush of the summaries) every
# iteration, no evaluation or checkpoint, a budget never reached.
MEASURE_BINDINGS = throughput.SHORT_WARM_UP + (
    'NUM_ENV_STEPS = 1000000000',
    'on_policy.Settings.log_interval = 1',
    'on_policy.Settings.eval_interval = 1000000000',
    'on_policy.Settings.checkpoint_interval = 1000000000')
WAIT_TAG = 'Replay/rollout_wait_seconds'
STEPS_TAG = 'Metrics/EnvironmentSteps'
# A multiprocessing 'spawn' child: how an actor process's command line reads.
ACTOR_COMMAND = 'spawn_main'


def bindings(config: str, extra: Sequence[str] = ()) -> List[str]:
  """The gin bindings of one configuration's run."""
  ours = list(MEASURE_BINDINGS)
  if CONFIGS[config]:
    ours += [b for b in distributed_learning.DISTRIBUTED_BINDINGS
             if 'num_actors' not in b]
    ours.append(f'on_policy.Distributed.num_actors = {CONFIGS[config]}')
  return ours + list(extra)


def role_cpu_seconds(pid: int) -> Dict[str, object]:
  """{learner: s, actors: {pid: s}, other: s}: CPU seconds of the run's
  process (single: the loop) and its live descendants, by role."""
  processes = common.process_cpu_seconds(pid)
  roles = {'learner': 0.0, 'actors': {}, 'other': 0.0}
  for number, command, seconds in processes:
    if number == pid:
      roles['learner'] = seconds
    elif ACTOR_COMMAND in command:
      roles['actors'][str(number)] = seconds
    else:
      roles['other'] += seconds
  return roles


# ---------------------------------------------------------------- runs ---


def window_figures(start, end, iterations: int, waits: Sequence[float],
                   num_actors: int) -> Dict[str, object]:
  """One run's figures from its two marks (`common.progress_marks`, the
  sample `role_cpu_seconds`) and the learner's waits in the window.

  Args:
    start: the mark at the window's first line.
    end: the mark at its last line.
    iterations: iterations between the two lines.
    waits: train/Replay/rollout_wait_seconds of those iterations
      (distributed runs; [] for the one-process loop).
    num_actors: actor processes of the configuration.
  """
  (steps0, _, cpu0, wall0), (steps1, _, cpu1, wall1) = start, end
  steps, wall = steps1 - steps0, wall1 - wall0
  learner = cpu1['learner'] - cpu0['learner']
  other = cpu1['other'] - cpu0['other']
  # An actor restarted in the window has no CPU at its start: left out.
  actors = [cpu1['actors'][pid] - cpu0['actors'][pid]
            for pid in sorted(cpu1['actors'], key=int) if pid in cpu0['actors']]
  iteration_seconds = wall / iterations
  wait = statistics.mean(waits) if waits else None
  figures = dict(
      agent_steps=steps, iterations=iterations, wall_seconds=wall,
      batch_agent_steps=steps / iterations,
      agent_steps_per_second=steps / wall,
      cpu_seconds=dict(learner=learner, actors=actors, other=other),
      cpu_ms_per_agent_step=dict(
          total=1000 * (learner + sum(actors) + other) / steps,
          learner=1000 * learner / steps,
          # Each actor collects steps / num_actors of them.
          actors=[1000 * a / (steps / num_actors) for a in actors],
          other=1000 * other / steps),
      iteration_seconds=iteration_seconds,
      learner_cpu_seconds_per_iteration=learner / iterations,
      actors_restarted=len(actors) != num_actors)
  if wait is not None:
    figures.update(learner_wait_seconds_per_iteration=wait,
                   learner_busy_seconds_per_iteration=iteration_seconds - wait)
  return figures


def window_waits(run_dir: str, steps0: int, steps1: int) -> List[float]:
  """The learner's rollout waits of the iterations ending in (steps0,
  steps1] env steps, from its TensorBoard logs."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tf.get_logger().setLevel('ERROR')  # summary_iterator's deprecation line
  scalars = common.read_scalars(os.path.join(run_dir, 'train'))
  return [value for step, _, value in scalars.get(WAIT_TAG, [])
          if steps0 < step <= steps1]


def measure(task: str, config: str, repeat: int, args) -> Dict[str, object]:
  """One run of `task` in `config`: started fresh, measured over its
  window, stopped; its figures (`window_figures`) with what it ran."""
  label = f'{task}/{config}/r{repeat}'
  run_dir = os.path.join(args.output_dir, task, config, f'r{repeat}')
  shutil.rmtree(run_dir, ignore_errors=True)  # else train_eval resumes it
  os.makedirs(run_dir)
  command = common.train_eval_command(
      run_dir, os.path.join(REPO_ROOT, TASKS[task]),
      bindings(config, args.gin_bindings))
  lines = (1, args.warmup, args.warmup + args.iterations,
           args.warmup + args.iterations + 1)
  distributed_learning.log_machine(args.output_dir, 'start', label)
  load_before = os.getloadavg()[0]
  launched = time.monotonic()
  first, start, end, stopped = common.progress_marks(
      command, os.path.join(run_dir, 'train_eval.log'), lines,
      args.startup_timeout + args.iteration_timeout * (lines[-1] - 1),
      role_cpu_seconds, count_lines=True)
  distributed_learning.log_machine(args.output_dir, 'end', label)
  waits = (window_waits(run_dir, start[0], end[0]) if CONFIGS[config]
           else [])
  figures = window_figures(start, end, end[1] - start[1], waits,
                           CONFIGS[config])
  figures.update(
      task=task, config=config, repeat=repeat, gin_file=TASKS[task],
      num_actors=CONFIGS[config], bindings=bindings(config, args.gin_bindings),
      startup_seconds=first[3] - launched, run_seconds=stopped[3] - launched,
      load_before=load_before, load_after=os.getloadavg()[0],
      date=bsuite_runs.utc(time.time()))
  return figures


# -------------------------------------------------------------- report ---


def _median(runs, *keys) -> Optional[float]:
  values = []
  for run in runs:
    value = run
    for key in keys:
      value = value.get(key) if isinstance(value, dict) else None
    if value is not None:
      values.append(value)
  return statistics.median(values) if values else None


def _fmt(value, spec='.2f') -> str:
  return '-' if value is None else format(value, spec)


def summarize(runs: Sequence[Dict[str, object]]) -> Dict[str, object]:
  """The medians over the repeats of one task and configuration."""
  num_actors = runs[0]['num_actors']
  actors = [statistics.median(run['cpu_ms_per_agent_step']['actors'][i]
                              for run in runs
                              if len(run['cpu_ms_per_agent_step']['actors'])
                              > i) for i in range(num_actors)]
  return dict(
      runs=len(runs), num_actors=num_actors,
      agent_steps_per_second=_median(runs, 'agent_steps_per_second'),
      batch_agent_steps=_median(runs, 'batch_agent_steps'),
      cpu_ms_total=_median(runs, 'cpu_ms_per_agent_step', 'total'),
      cpu_ms_learner=_median(runs, 'cpu_ms_per_agent_step', 'learner'),
      cpu_ms_actors=actors,
      cpu_ms_other=_median(runs, 'cpu_ms_per_agent_step', 'other'),
      iteration_seconds=_median(runs, 'iteration_seconds'),
      learner_busy=_median(runs, 'learner_busy_seconds_per_iteration'),
      learner_wait=_median(runs, 'learner_wait_seconds_per_iteration'),
      learner_cpu=_median(runs, 'learner_cpu_seconds_per_iteration'),
      startup_seconds=_median(runs, 'startup_seconds'),
      loads=(min(run['load_before'] for run in runs),
             max(run['load_after'] for run in runs)))


def table(task: str, runs: Sequence[Dict[str, object]]) -> List[str]:
  """Markdown of one task: a row per configuration (medians), and the
  model check of the distributed rows."""
  lines = [f'### `{TASKS[task]}`', '',
           '| configuration | runs | agent steps/s | CPU-ms per agent step: '
           'all processes | train_eval process (single: the loop; else the '
           'learner + Reverb) | each actor, per agent step of its own | '
           'other | learner per iteration: busy s | its CPU-s | rollout '
           'wait s | iteration s | start-up s | load 1 min |',
           '|---|---|---|---|---|---|---|---|---|---|---|---|---|']
  checks = []
  for config in CONFIGS:
    mine = [r for r in runs if r['task'] == task and r['config'] == config]
    if not mine:
      continue
    s = summarize(mine)
    actors = ' / '.join(_fmt(a, '.3g') for a in s['cpu_ms_actors']) or '-'
    lines.append('| ' + ' | '.join([
        config, str(s['runs']), _fmt(s['agent_steps_per_second'], ',.0f'),
        _fmt(s['cpu_ms_total'], '.3g'), _fmt(s['cpu_ms_learner'], '.3g'),
        actors, _fmt(s['cpu_ms_other'], '.3g'), _fmt(s['learner_busy']),
        _fmt(s['learner_cpu']), _fmt(s['learner_wait']),
        _fmt(s['iteration_seconds']), _fmt(s['startup_seconds'], '.0f'),
        f'{s["loads"][0]:.1f} -> {s["loads"][1]:.1f}']) + ' |')
    if s['num_actors'] and s['learner_busy'] is not None:
      # The model's iteration: the slowest actor's CPU time for its share
      # of the batch, then the learner's busy time.
      collect = (max(s['cpu_ms_actors']) / 1000 * s['batch_agent_steps'] /
                 s['num_actors'])
      checks.append(
          f'* model check, {config}: slowest actor\'s CPU-s for its share '
          f'{collect:.2f} + learner busy {s["learner_busy"]:.2f} = '
          f'{collect + s["learner_busy"]:.2f} s per iteration; measured '
          f'{s["iteration_seconds"]:.2f} s (the rest: actors without a '
          'core of their own, weights and rollouts in transit).')
  return lines + [''] + checks + ([''] if checks else [])


@dataclasses.dataclass(frozen=True)
class ProjectionInputs:
  """What the projection takes from the measured runs."""
  actor_cpu_seconds_per_step: float  # c: per agent step of the actor's own
  learner_seconds_per_batch: float  # the learner's busy wall s per batch
  batch_agent_steps: float  # the measured batch
  envs_per_actor: int  # E of the measured configuration
  rollout_length: int


@dataclasses.dataclass(frozen=True)
class Projection:
  actor_cores: int
  batch_agent_steps: int
  iteration_seconds: float
  agent_steps_per_second: float  # the synchronous loop
  actors_ceiling: float  # N / c
  learner_ceiling: float  # 1 / l'
  actors_share: float  # of the iteration's time
  binds: str
  hours_to_budget: float


def project(inputs: ProjectionInputs, actor_cores: int, speedup: float = 1.0,
            budget: int = BUDGET) -> Projection:
  """The synchronous loop's throughput on `actor_cores` actor cores
  (module docstring: time per iteration = B c / N + B l / speedup)."""
  c = inputs.actor_cpu_seconds_per_step
  l = inputs.learner_seconds_per_batch / inputs.batch_agent_steps / speedup
  per_step = c / actor_cores + l
  batch = actor_cores * inputs.envs_per_actor * inputs.rollout_length
  rate = 1 / per_step
  return Projection(
      actor_cores=actor_cores, batch_agent_steps=batch,
      iteration_seconds=batch * per_step, agent_steps_per_second=rate,
      actors_ceiling=actor_cores / c, learner_ceiling=1 / l,
      actors_share=c / actor_cores / per_step,
      binds='actors' if c / actor_cores > l else 'learner',
      hours_to_budget=budget / rate / 3600)


def projection_inputs(runs: Sequence[Dict[str, object]], task: str,
                      config: str, rollout_length: int) -> ProjectionInputs:
  """The medians of `task`'s `config` runs (a distributed configuration):
  c over every actor of every run, the learner's busy s per batch."""
  mine = [r for r in runs if r['task'] == task and r['config'] == config]
  if not mine or not CONFIGS[config]:
    raise ValueError(f'no distributed runs of {task} {config} to project '
                     'from')
  actors = [a for r in mine for a in r['cpu_ms_per_agent_step']['actors']]
  batch = statistics.median(r['batch_agent_steps'] for r in mine)
  return ProjectionInputs(
      actor_cpu_seconds_per_step=statistics.median(actors) / 1000,
      learner_seconds_per_batch=statistics.median(
          r['learner_busy_seconds_per_iteration'] for r in mine),
      batch_agent_steps=batch,
      envs_per_actor=round(batch / rollout_length / CONFIGS[config]),
      rollout_length=rollout_length)


def _duration(hours: float) -> str:
  return f'{hours:,.{1 if hours < 10 else 0}f} h ({hours / 24:,.1f} days)'


def projection_table(inputs: ProjectionInputs, actor_cores: Sequence[int],
                     speedup: Optional[float], budget: int,
                     source: str) -> List[str]:
  """Markdown: the projection for each actor core count, with a CPU
  learner as measured and, given a speed-up, an accelerator learner."""
  learner_ms_per_step = (1000 * inputs.learner_seconds_per_batch /
                         inputs.batch_agent_steps)
  learners = [('CPU learner as measured', 1.0)]
  if speedup:
    learners.append((f'accelerator learner, {speedup:g}x the CPU learner',
                     speedup))
  lines = [
      f'### Projection from {source}', '',
      f'Inputs: actor CPU-ms per agent step of its own c = '
      f'{1000 * inputs.actor_cpu_seconds_per_step:.3g}; learner busy s per '
      f'batch of {inputs.batch_agent_steps:,.0f} agent steps = '
      f'{inputs.learner_seconds_per_batch:.2f} (l = '
      f'{learner_ms_per_step:.3g} ms per agent step); '
      f'{inputs.envs_per_actor} envs per actor, rollout length '
      f'{inputs.rollout_length}. Synchronous loop: agent steps/s = 1 / '
      '(c / N + l / speed-up); ceilings N / c (actors) and speed-up / l '
      '(learner).', '',
      '| learner | actor cores N | batch (agent steps) | iteration s | '
      'agent steps/s | actors ceiling | learner ceiling | actors\' share '
      f'of an iteration | binds | time to {budget:,} agent steps |',
      '|---|---|---|---|---|---|---|---|---|---|']
  for name, factor in learners:
    for cores in actor_cores:
      p = project(inputs, cores, factor, budget)
      lines.append('| ' + ' | '.join([
          name, str(cores), f'{p.batch_agent_steps:,}',
          f'{p.iteration_seconds:.1f}', f'{p.agent_steps_per_second:,.0f}',
          f'{p.actors_ceiling:,.0f}', f'{p.learner_ceiling:,.0f}',
          f'{100 * p.actors_share:.0f}%', p.binds,
          _duration(p.hours_to_budget)]) + ' |')
  return lines + ['']


def report(runs, output_dir, tasks, args, command_line) -> str:
  """The tables of every task and the projection, as markdown."""
  lines = ['## The on-policy loop\'s throughput: one process, 1 and 2 actor '
           'processes', '',
           f'Medians of {args.repeats} runs a configuration, interleaved; '
           f'a window of {args.iterations} iterations after {args.warmup} '
           'not counted; RND warm-up cut to 64 steps, no evaluation or '
           'checkpoint (benchmarks/distributed_throughput.py\'s docstring '
           'says what each column is).', '']
  lines += distributed_learning.machine_lines(
      distributed_learning.read_machine_log(output_dir), args.gin_bindings)
  for task in tasks:
    lines += table(task, runs)
  lines += project_all(runs, tasks, args)
  lines += [f'Command: `{command_line}`',
            f'Commit: {common.commit_description()}; date: '
            f'{bsuite_runs.utc(time.time())}.']
  return '\n'.join(lines) + '\n'


def project_all(runs, tasks, args) -> List[str]:
  lines = []
  for task in tasks:
    if not any(r['task'] == task and r['config'] == args.project_from
               for r in runs):
      continue
    inputs = projection_inputs(runs, task, args.project_from,
                               args.rollout_length)
    lines += projection_table(inputs, args.actor_cores,
                              args.accelerator_speedup, args.budget,
                              f'`{TASKS[task]}`, {args.project_from}')
  return lines


# ---------------------------------------------------------------- main ---


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--output_dir', default='runs/distributed_throughput')
  parser.add_argument('--out', default=None,
                      help='the markdown (default: <output_dir>/'
                      'throughput.md); the runs as JSON lines beside it, '
                      '<out without .md>.jsonl')
  parser.add_argument('--tasks', default='montezuma',
                      help=f'comma-separated, of {", ".join(TASKS)}')
  parser.add_argument('--configs', default=','.join(CONFIGS))
  parser.add_argument('--repeats', type=int, default=3)
  parser.add_argument('--warmup', type=int, default=3,
                      help='iterations before the window (>= 1: the first '
                      'traces the loop)')
  parser.add_argument('--iterations', type=int, default=10,
                      help='iterations in the window')
  parser.add_argument('--startup_timeout', type=float, default=600.0)
  parser.add_argument('--iteration_timeout', type=float, default=120.0)
  parser.add_argument('--gin_bindings', action='append', default=[],
                      help='extra binding for every run (repeatable)')
  parser.add_argument('--project', default=None, metavar='RUNS.jsonl',
                      help='no runs: the tables and projection of the runs '
                      'in this file')
  parser.add_argument('--project_from', default='2actors',
                      help='the configuration whose c and learner cost the '
                      'projection takes')
  parser.add_argument('--actor_cores', default='8,32,128')
  parser.add_argument('--accelerator_speedup', type=float, default=None,
                      help='an accelerator learner this many times faster '
                      'per batch than the measured CPU learner (default: '
                      'none, the CPU learner only)')
  parser.add_argument('--rollout_length', type=int, default=128,
                      help='the gin files\' rollout_length (batch = N x E '
                      'x this)')
  parser.add_argument('--budget', type=int, default=BUDGET,
                      help='agent steps of the time-to-budget column')
  args = parser.parse_args(argv)
  args.tasks = args.tasks.split(',')
  args.configs = args.configs.split(',')
  for name, values, known in (('--tasks', args.tasks, TASKS),
                              ('--configs', args.configs, CONFIGS)):
    for value in values:
      if value not in known:
        parser.error(f'{name}: unknown {value!r}; of {", ".join(known)}')
  if args.project_from not in CONFIGS or not CONFIGS[args.project_from]:
    parser.error('--project_from must be a distributed configuration')
  if args.warmup < 1 or args.iterations < 1 or args.repeats < 1:
    parser.error('--warmup, --iterations and --repeats must be >= 1')
  if args.accelerator_speedup is not None and args.accelerator_speedup <= 0:
    parser.error('--accelerator_speedup must be > 0')
  args.actor_cores = [int(n) for n in args.actor_cores.split(',')]
  args.output_dir = os.path.abspath(args.output_dir)
  args.out = args.out or os.path.join(args.output_dir, 'throughput.md')
  return args


def raw_path(out: str) -> str:
  return (out[:-3] if out.endswith('.md') else out) + '.jsonl'


def main(argv=None):
  args = parse_args(argv)
  command_line = bsuite_scores.recorded_command(
      sys.argv, os.getcwd())
  if args.project:
    runs = common.read_json_lines(args.project)
    tasks = [t for t in TASKS if any(r['task'] == t for r in runs)]
    print('\n'.join([line for task in tasks for line in table(task, runs)] +
                    project_all(runs, tasks, args)))
    return
  print(f'CPU: {common.cpu_description()}', flush=True)
  # Reading the learner's waits imports TensorFlow here: its C++ start-up
  # lines would only crowd the output.
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')
  runs = []
  raw = raw_path(args.out)
  os.makedirs(os.path.dirname(os.path.abspath(raw)), exist_ok=True)
  with open(raw, 'w') as f:
    for repeat in range(args.repeats):
      for task in args.tasks:
        for config in args.configs:
          run = measure(task, config, repeat, args)
          runs.append(run)
          f.write(json.dumps(run) + '\n')
          f.flush()
          actors = ', '.join(f'{a:.2f}'
                             for a in run['cpu_ms_per_agent_step']['actors'])
          print(f'  [{repeat + 1}/{args.repeats}] {task} {config}: '
                f'{run["agent_steps_per_second"]:,.0f} agent steps/s, '
                f'{run["cpu_ms_per_agent_step"]["total"]:.2f} CPU-ms per '
                f'agent step (train_eval process '
                f'{run["cpu_ms_per_agent_step"]["learner"]:.2f}'
                + (f', actors {actors}' if actors else '') + ')'
                + (f', learner busy '
                   f'{run["learner_busy_seconds_per_iteration"]:.2f} s and '
                   f'waiting {run["learner_wait_seconds_per_iteration"]:.2f}'
                   ' s an iteration'
                   if 'learner_busy_seconds_per_iteration' in run else ''),
                flush=True)
  text = report(runs, args.output_dir, args.tasks, args, command_line)
  print(text)
  with open(args.out, 'w') as f:
    f.write(text)
  print(f'Written to {args.out} and {raw}', flush=True)


if __name__ == '__main__':
  main()
