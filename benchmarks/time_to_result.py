r"""Time to a result: R2D2 against the stock recurrent DQN, launch to solved.

  .venv/bin/python benchmarks/time_to_result.py --output_dir=DIR \
      [--gin_file=gin/r2d2/stateless_cartpole.gin] [--seeds=0,1,2] \
      [--agents=r2d2,stock] [--num_env_steps=N] [--threshold=450] \
      [--gin_bindings=B ...]
  .venv/bin/python benchmarks/time_to_result.py --output_dir=DIR \
      --report_only [--threshold=T]

For each seed, each agent in turn (one run at a time: two at once would
share the cores and slow both) into `<output_dir>/<agent>_seed<seed>`:
* `r2d2`: train/train_eval.py on the gin file, `SEED` and `NUM_ENV_STEPS`
  bound;
* `stock`: benchmarks/stock_recurrent_dqn.py on the same gin file and
  seed (DqnAgent + QRnnNetwork, same sizes, batch and replay ratio) with
  `--root_dir`, so it evaluates as R2D2 does: the same `Evaluator`, the gin
  file's `num_eval_episodes` on the same eval env seeds, every
  `eval_interval` env steps and at the end.
Both run to the same env-step cap (default: the gin file's
NUM_ENV_STEPS), so their total wall and CPU seconds cover the same env
steps; `--gin_bindings` go to both.

Per run: the env step and the wall seconds from launch (the eval event's
wall time minus the launch time) of the first greedy evaluation with
`Metrics/AverageReturn` >= `--threshold`, or 'not reached by N env steps';
the run's wall seconds and the CPU seconds of its process tree
(`getrusage(RUSAGE_CHILDREN)` before and after; actor processes included,
as the run waits for them). Then per agent the median and range. The launch
time and totals are kept in each run dir's `time_to_result.json`, so
`--report_only` reads the runs again (e.g. at another threshold); a run
dir that already has one is not run again.
"""

import json
import os
import resource
import statistics
import sys
import time

from absl import app
from absl import flags

import common

AGENTS = ('r2d2', 'stock')
STOCK = os.path.join(common.REPO_ROOT, 'benchmarks', 'stock_recurrent_dqn.py')
RECORD = 'time_to_result.json'
AVERAGE_RETURN = 'Metrics/AverageReturn'


def define_flags():
  """The command line; defined by `__main__` only, so tests can import."""
  flags.DEFINE_string('gin_file', 'gin/r2d2/stateless_cartpole.gin',
                      'An R2D2 gin file.')
  flags.DEFINE_list('seeds', ['0', '1', '2'], 'SEED of each run.')
  flags.DEFINE_list('agents', list(AGENTS), 'Of: ' + ', '.join(AGENTS))
  flags.DEFINE_integer('num_env_steps', None,
                       'Env-step cap of every run (default: the gin '
                       "file's NUM_ENV_STEPS).")
  flags.DEFINE_float('threshold', 450.0,
                     'Average greedy return that counts as the result.')
  flags.DEFINE_string('output_dir', None, 'Where the run dirs go.')
  flags.DEFINE_multi_string('gin_bindings', [],
                            'Extra gin bindings for both agents.')
  flags.DEFINE_bool('report_only', False,
                    'Run nothing: report the runs in --output_dir.')
  flags.mark_flag_as_required('output_dir')


def commands(agent, run_dir, gin_file, seed, num_env_steps, bindings):
  """The command line of one run."""
  bindings = list(bindings) + [f'SEED={seed}']
  if agent == 'r2d2':
    return common.train_eval_command(
        run_dir, gin_file, bindings + [f'NUM_ENV_STEPS={num_env_steps}'])
  return [sys.executable, STOCK, f'--gin_file={gin_file}',
          f'--root_dir={run_dir}', f'--num_env_steps={num_env_steps}'] + [
              f'--gin_bindings={binding}' for binding in bindings]


def run(command, run_dir):
  """Runs `command` (output in run_dir/output.log); writes its record."""
  if os.path.exists(run_dir):
    sys.exit(f'{run_dir} exists without a {RECORD} (an interrupted run?): '
             'remove it, or use another --output_dir.')
  before = resource.getrusage(resource.RUSAGE_CHILDREN)
  launched = time.time()
  wall, code = common.run_logged(command, os.path.join(run_dir, 'output.log'),
                                 check=False)
  after = resource.getrusage(resource.RUSAGE_CHILDREN)
  cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
  record = {'command': command, 'launched': launched, 'wall_seconds': wall,
            'cpu_seconds': cpu, 'exit_code': code}
  with open(os.path.join(run_dir, RECORD), 'w') as f:
    json.dump(record, f, indent=1)
  return record


def first_crossing(evals, threshold, launched):
  """(env step, seconds after `launched`) of the first eval >= threshold.

  Args:
    evals: [(env step, wall time, average return)], sorted by env step.
    threshold: the average return that counts.
    launched: the run's launch time (seconds since the epoch).

  Returns:
    The pair, or None if no eval reached `threshold`.
  """
  for step, wall_time, value in evals:
    if value >= threshold:
      return step, wall_time - launched
  return None


def run_result(run_dir, threshold):
  """What one run dir holds: its record, evals and first crossing.

  Returns:
    None if the run has no record; else its record plus 'reached' ((env
    step, seconds) or None) and 'last_eval_step' (None without evals).
  """
  try:
    with open(os.path.join(run_dir, RECORD)) as f:
      result = json.load(f)
  except FileNotFoundError:
    return None
  evals = common.read_scalars(os.path.join(run_dir, 'eval')).get(
      AVERAGE_RETURN, [])
  result['reached'] = first_crossing(evals, threshold, result['launched'])
  result['last_eval_step'] = evals[-1][0] if evals else None
  return result


def describe(result, threshold):
  """One run's line: the crossing or where evals stopped, and totals."""
  if result is None:
    return 'no record (not run, or interrupted)'
  if result['reached'] is not None:
    step, seconds = result['reached']
    text = f'>= {threshold:g} at env step {step:,}, {seconds:.0f} s'
  elif result['last_eval_step'] is None:
    text = 'no evals'
  else:
    text = f'not reached by {result["last_eval_step"]:,} env steps'
  text += (f'; run {result["wall_seconds"]:.0f} s wall, '
           f'{result["cpu_seconds"]:.0f} CPU-s')
  if result['exit_code']:
    text += f' (exit code {result["exit_code"]})'
  return text


def _spread(values, spec):
  """'median (min-max)' of values, or '-'."""
  if not values:
    return '-'
  low, high = min(values), max(values)
  return (f'{format(statistics.median(values), spec)} '
          f'({format(low, spec)}-{format(high, spec)})')


def summary_rows(results):
  """{agent: [result or None]} -> markdown table rows, one per agent."""
  rows = []
  for agent, runs in results.items():
    done = [r for r in runs if r is not None]
    reached = [r['reached'] for r in done if r['reached'] is not None]
    rows.append(
        f'| {agent} | {len(reached)} of {len(runs)} | '
        f'{_spread([s for _, s in reached], ",.0f")} | '
        f'{_spread([step for step, _ in reached], ",.0f")} | '
        f'{_spread([r["wall_seconds"] for r in done], ",.0f")} | '
        f'{_spread([r["cpu_seconds"] for r in done], ",.0f")} |')
  return rows


def run_all(opts, runs, output_dir):
  """Runs each (seed, agent) of `runs` not run before, one at a time."""
  from tfa_explore import config  # pylint: disable=g-import-not-at-top
  gin_file = (os.path.abspath(opts.gin_file) if os.path.exists(opts.gin_file)
              else opts.gin_file)
  config.parse_gin([gin_file], opts.gin_bindings)
  num_env_steps = (opts.num_env_steps or
                   common.gin_value('r2d2.Settings.num_env_steps'))
  print(f'{opts.gin_file}: greedy evals of '
        f'{common.gin_value("r2d2.Settings.num_eval_episodes")} episodes '
        f'every {common.gin_value("r2d2.Settings.eval_interval"):,} env '
        f'steps; cap {num_env_steps:,} env steps.', flush=True)
  print(f'load average before: {os.getloadavg()}', flush=True)
  for seed, agent in runs:
    run_dir = os.path.join(output_dir, f'{agent}_seed{seed}')
    if os.path.exists(os.path.join(run_dir, RECORD)):
      print(f'{agent} seed {seed}: done earlier, not run again.')
      continue
    run(commands(agent, run_dir, gin_file, seed, num_env_steps,
                 opts.gin_bindings), run_dir)
    print(f'  {agent} seed {seed}: '
          f'{describe(run_result(run_dir, opts.threshold), opts.threshold)}',
          flush=True)
  print(f'load average after: {os.getloadavg()}', flush=True)


def main(argv):
  del argv
  opts = flags.FLAGS
  unknown = set(opts.agents) - set(AGENTS)
  if unknown:
    sys.exit(f'Unknown --agents {sorted(unknown)}; of: {", ".join(AGENTS)}.')
  print(f'CPU: {common.cpu_description()}', flush=True)
  output_dir = os.path.abspath(opts.output_dir)
  runs = [(int(seed), agent) for seed in opts.seeds for agent in opts.agents]
  if not opts.report_only:
    run_all(opts, runs, output_dir)
  results = {agent: [] for agent in opts.agents}
  print(f'\nPer run ({output_dir}):')
  for seed, agent in runs:
    result = run_result(os.path.join(output_dir, f'{agent}_seed{seed}'),
                        opts.threshold)
    results[agent].append(result)
    print(f'  {agent} seed {seed}: {describe(result, opts.threshold)}')
  print(f'\nFirst greedy eval >= {opts.threshold:g}, medians (range):')
  print('| agent | runs that reached it | wall s from launch | at env step '
        '| run wall s | run CPU-s |')
  print('|---|---|---|---|---|---|')
  print('\n'.join(summary_rows(results)))


if __name__ == '__main__':
  define_flags()
  app.run(main)
