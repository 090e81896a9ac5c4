"""RND-PPO vs its PPO twin: runs, then reads TensorBoard logs into a table.

For each task (gin/rnd_ppo/<task>.gin and its twin gin/ppo/<task>.gin) and
seed, both agents are trained by train/train_eval.py (the gin file's own
NUM_ENV_STEPS; only SEED is overridden). Runs go two at a time by default,
RND-PPO and its twin of the same seed side by side, so their steps/s come
from the same machine under the same load. A run that already finished is
not repeated (train_eval resumes unfinished ones), so `--report_only`
re-reads the logs.

    .venv/bin/python benchmarks/rnd_ppo_benchmark.py \\
        --output_dir=runs/rnd_ppo_benchmark \\
        --png=benchmarks/results/rnd_ppo/rnd_ppo_learning_curves.png

Read from the logs (x-axis env steps):
* train/Metrics/TerminatedEpisodes: episodes ended by termination (the
  flag, the goal); "first success" is the first iteration where it is > 0;
* eval/Metrics/AverageReturn: greedy return over 10 episodes (MiniGrid
  tasks with `eval_metric`: eval/Metrics/SuccessRate, the share of greedy
  episodes at the goal);
* train/Metrics/StepsPerSecond: median over the iterations after the first
  (which includes tf.function tracing).
"""

import argparse
import concurrent.futures
import os
import statistics

import common  # benchmarks/common.py, next to this script.

REPO_ROOT = common.REPO_ROOT
AGENTS = ('rnd_ppo', 'ppo')

# Task -> (title, target of the greedy eval metric, env-step budget of the
# target; the metric is eval/Metrics/AverageReturn unless `eval_metric`
# names another). The budgets are the gin files' NUM_ENV_STEPS; a run counts
# as meeting the target if it happens at or before the budget.
TASKS = {
    'mountaincar': dict(
        title='MountainCar-v0', budget=100_000, return_target=None,
        success='flag reached'),
    'minigrid_empty8x8': dict(
        title='MiniGrid-Empty-8x8-v0', budget=40_000, return_target=0.95,
        success='goal reached'),
    'minigrid_multiroom_n6s5': dict(
        title='MiniGrid-MultiRoom-N4-S5-v0 (6 rooms)', budget=1_000_000,
        return_target=0.9, eval_metric='Metrics/SuccessRate',
        success='goal reached'),
    'minigrid_keycorridor_s3r3': dict(
        title='MiniGrid-KeyCorridorS3R3-v0', budget=2_000_000,
        return_target=0.9, eval_metric='Metrics/SuccessRate',
        success='ball picked up'),
}


def run_dir(output_dir, task, agent, seed):
  return os.path.join(output_dir, task, agent, f'seed{seed}')


def read_scalars(directory):
  """{tag: [(step, value)]} sorted by step, from all event files."""
  return {tag: [(step, value) for step, _, value in points]
          for tag, points in common.read_scalars(directory).items()}


def finished(directory, budget):
  evals = read_scalars(os.path.join(directory, 'eval')).get(
      'Metrics/AverageReturn', [])
  return bool(evals) and evals[-1][0] >= budget


def eval_metric(spec):
  return spec.get('eval_metric', 'Metrics/AverageReturn')


def eval_label(spec):
  return ('greedy success rate' if eval_metric(spec) == 'Metrics/SuccessRate'
          else 'greedy eval return')


def train(task, agent, seed, output_dir, log_dir):
  """Runs one train_eval job; returns (name, seconds, returncode)."""
  directory = run_dir(output_dir, task, agent, seed)
  name = f'{agent}/{task}/seed{seed}'
  if finished(directory, TASKS[task]['budget']):
    return name, 0.0, 0
  command = common.train_eval_command(
      directory, os.path.join(REPO_ROOT, 'gin', agent, task + '.gin'),
      [f'SEED={seed}'])
  seconds, code = common.run_logged(
      command, os.path.join(log_dir, f'{agent}_{task}_seed{seed}.log'),
      check=False)
  return name, seconds, code


def summarize_run(directory, task, spec=None):
  """What one run logged; `spec` (as TASKS' values) for a task not in TASKS."""
  spec = spec or TASKS[task]
  train_scalars = read_scalars(os.path.join(directory, 'train'))
  eval_scalars = read_scalars(os.path.join(directory, 'eval'))
  terminated = train_scalars.get('Metrics/TerminatedEpisodes', [])
  evals = eval_scalars.get(eval_metric(spec), [])
  rates = [v for _, v in train_scalars.get('Metrics/StepsPerSecond', [])[1:]]
  first_success = next((s for s, v in terminated if v > 0), None)
  first_target = None
  if spec['return_target'] is not None:
    first_target = next(
        (s for s, v in evals if common.reaches(v, spec['return_target'])),
        None)
  return dict(
      first_success=first_success,
      terminated=int(terminated[-1][1]) if terminated else 0,
      first_target=first_target,
      final_return=evals[-1][1] if evals else float('nan'),
      best_return=max(v for _, v in evals) if evals else float('nan'),
      first_eval_success=next((s for s, v in evals if v > -200.0), None)
      if task == 'mountaincar' else None,
      steps=evals[-1][0] if evals else 0,
      steps_per_second=statistics.median(rates) if rates else float('nan'),
      curves=dict(terminated=terminated, evals=evals),
  )


def _fmt(value):
  return '-' if value is None else f'{value:,}'


def report(output_dir, seeds, tasks):
  """Markdown table text and per-run summaries."""
  lines = []
  results = {}
  for task in tasks:
    spec = TASKS[task]
    budget = spec['budget']
    lines.append(f'### {spec["title"]} ({budget:,} env steps, seeds '
                 f'{",".join(map(str, seeds))})\n')
    header = ('| agent | seed | first env step with a terminated episode '
              f'({spec["success"]}) | terminated episodes | ')
    if spec['return_target'] is not None:
      header += f'first eval >= {spec["return_target"]} | '
    header += f'final {eval_label(spec)} | best | steps/s |'
    lines.append(header)
    lines.append('|' + '---|' * (header.count('|') - 1))
    for agent in AGENTS:
      for seed in seeds:
        run = summarize_run(run_dir(output_dir, task, agent, seed), task)
        results[(task, agent, seed)] = run
        row = (f'| {agent} | {seed} | {_fmt(run["first_success"])} | '
               f'{run["terminated"]:,} | ')
        if spec['return_target'] is not None:
          row += f'{_fmt(run["first_target"])} | '
        row += (f'{run["final_return"]:.2f} | {run["best_return"]:.2f} | '
                f'{run["steps_per_second"]:.0f} |')
        lines.append(row)
    lines.append('')
    for agent in AGENTS:
      runs = [results[(task, agent, s)] for s in seeds]
      if spec['return_target'] is None:
        hits = sum(r['first_success'] is not None and
                   r['first_success'] <= budget for r in runs)
        evals = sum(r['best_return'] > -200.0 for r in runs)
        lines.append(f'* {agent}: {spec["success"]} in training on {hits}/'
                     f'{len(runs)} seeds within {budget:,} env steps; greedy '
                     f'eval ever above -200 on {evals}/{len(runs)}.')
      else:
        hits = sum(r['first_target'] is not None and
                   r['first_target'] <= budget for r in runs)
        final = sum(common.reaches(r['final_return'], spec['return_target'])
                    for r in runs)
        lines.append(f'* {agent}: {eval_label(spec)} >= '
                     f'{spec["return_target"]} '
                     f'within {budget:,} env steps on {hits}/{len(runs)} '
                     f'seeds (at the end of the run on {final}/'
                     f'{len(runs)}).')
    rnd_rate = statistics.mean(
        results[(task, 'rnd_ppo', s)]['steps_per_second'] for s in seeds)
    ppo_rate = statistics.mean(
        results[(task, 'ppo', s)]['steps_per_second'] for s in seeds)
    lines.append(f'* steps/s (mean over seeds of the per-run median): '
                 f'RND-PPO {rnd_rate:.0f}, PPO twin {ppo_rate:.0f}, ratio '
                 f'RND/PPO {rnd_rate / ppo_rate:.2f}.\n')
  return '\n'.join(lines), results


def plot(results, seeds, tasks, path):
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')
  from matplotlib import pyplot  # pylint: disable=g-import-not-at-top
  colours = {'rnd_ppo': 'tab:blue', 'ppo': 'tab:orange'}
  labels = {'rnd_ppo': 'RND-PPO', 'ppo': 'PPO twin'}
  figure, axes = pyplot.subplots(2, len(tasks), figsize=(5.5 * len(tasks), 7),
                                 squeeze=False)
  for column, task in enumerate(tasks):
    spec = TASKS[task]
    for agent in AGENTS:
      for index, seed in enumerate(seeds):
        curves = results[(task, agent, seed)]['curves']
        label = labels[agent] if index == 0 else None
        if curves['evals']:
          steps, values = zip(*curves['evals'])
          axes[0][column].plot(steps, values, color=colours[agent],
                               alpha=0.7, marker='.', label=label)
        if curves['terminated']:
          steps, values = zip(*curves['terminated'])
          axes[1][column].plot(steps, values, color=colours[agent],
                               alpha=0.7, label=label)
    if spec['return_target'] is not None:
      axes[0][column].axhline(spec['return_target'], color='grey',
                              linestyle='--', linewidth=1)
    for row in (0, 1):
      axes[row][column].axvline(spec['budget'], color='grey', linestyle=':',
                                linewidth=1)
      axes[row][column].set_xlabel('env steps')
      axes[row][column].legend(loc='upper left')
    axes[0][column].set_title(f'{spec["title"]}: {eval_label(spec)}')
    axes[1][column].set_title(
        f'{spec["title"]}: terminated episodes ({spec["success"]})')
    # Log scale above 1, linear below, so "never" (0) stays visible.
    axes[1][column].set_yscale('symlog', linthresh=1.0)
    axes[1][column].set_ylim(bottom=0)
  figure.suptitle(f'RND-PPO vs PPO twin, seeds {seeds[0]}-{seeds[-1]}')
  figure.tight_layout()
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  figure.savefig(path, dpi=80)


def main():
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--output_dir', default='runs/rnd_ppo_benchmark')
  parser.add_argument('--seeds', default='0,1,2,3,4')
  parser.add_argument('--tasks', default=','.join(TASKS))
  parser.add_argument('--jobs', type=int, default=2,
                      help='train_eval processes at once')
  parser.add_argument('--png', default=None,
                      help='learning-curve PNG (default: in output_dir)')
  parser.add_argument('--report_only', action='store_true')
  args = parser.parse_args()
  seeds = [int(s) for s in args.seeds.split(',')]
  tasks = args.tasks.split(',')
  output_dir = os.path.abspath(args.output_dir)

  if not args.report_only:
    print(f'CPU: {common.cpu_description()}', flush=True)
    # RND-PPO and its twin of the same task and seed are adjacent, so with
    # two jobs they run side by side.
    jobs = [(task, agent, seed) for task in tasks for seed in seeds
            for agent in AGENTS]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
      futures = [pool.submit(train, task, agent, seed, output_dir,
                             os.path.join(output_dir, 'logs'))
                 for task, agent, seed in jobs]
      for future in futures:
        name, seconds, code = future.result()
        print(f'{name}: {seconds:.0f} s, exit code {code}', flush=True)
        if code:
          raise SystemExit(f'{name} failed; see {output_dir}/logs')

  table, results = report(output_dir, seeds, tasks)
  print(table)
  with open(os.path.join(output_dir, 'results.md'), 'w') as f:
    f.write(table)
  png = args.png or os.path.join(output_dir, 'rnd_ppo_learning_curves.png')
  plot(results, seeds, tasks, png)
  print(f'Learning curves: {png}')


if __name__ == '__main__':
  main()
