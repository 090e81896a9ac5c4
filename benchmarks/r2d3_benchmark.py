r"""R2D3 vs its R2D2 twin on MiniGrid-DoorKey-8x8, plus a demo-ratio ablation.

  python benchmarks/r2d3_benchmark.py --output_dir=runs/r2d3_benchmark \
      [--seeds=0,1,2] [--variants=r2d3,r2d2,rho_1_256,rho_1_16,rho_1_4] \
      [--ablation_seeds=0] [--num_env_steps=300000] \
      [--num_demo_episodes=20] [--demo_file=F] [--report_only] [--png=P] \
      [--gin_bindings=B ...] [--r2d3_gin_bindings=B ...]

1. Demonstrations: unless --demo_file is given, records --num_demo_episodes
   episodes of the scripted DoorKey expert (`experts.doorkey_expert`) once
   with train/collect_demonstrations.py into
   output_dir/doorkey8x8_<n>.demo (an existing file is reused). The env
   settings come from gin/r2d3/minigrid_doorkey8x8.gin itself, so the
   file's specs match the agent's; the collection seed (DEMO_SEED) is far
   from the actor (seed + i) and eval (seed + 1000003 + j) env seeds.
2. Runs, one at a time (2 cores), each train/train_eval.py in a
   subprocess, into output_dir/<variant>_seed<seed> (an existing run that
   reached the budget is reused; an unfinished one resumes):
   * r2d3: gin/r2d3/minigrid_doorkey8x8.gin as shipped, on --seeds;
   * r2d2: the twin gin/r2d2/minigrid_doorkey8x8.gin, on --seeds;
   * r2d2_rnd, r2d3_rnd: the same two with the RND exploration bonus
     (gin/r2d2_rnd/, gin/r2d3_rnd/; issue #17 runs them at
     --num_env_steps=1000000), on --seeds;
   * rho_1_256, rho_1_16, rho_1_4 (default) and rho_1_2: R2D3 with the demo
     ratio bound to 1/256 ... 1/2, on --ablation_seeds (the shipped value,
     1/2, is the r2d3 row; rho_1_2 only repeats it).
3. Reads eval/Metrics/SuccessRate (fraction of the greedy eval episodes that
   reached the goal) and prints a Markdown table (also written to
   output_dir/results.md): per run the first env step with success rate
   >= 0.9, the success rate right after pre-training (env step 0, R2D3
   only), best and final success rate, the mean of the last 10 evals (how
   well a run holds what it learnt: at 300k, the evals from ~210k on),
   learner steps (pre-training included), wall time (first to last event,
   TF start-up excluded).
4. With --png (also with --report_only): the greedy eval success rate of
   every run against env steps (R2D3's first point, at 0, is right after
   pre-training), one colour per variant, one thin line per seed, the
   target as a dashed line.

--gin_bindings / --r2d3_gin_bindings (the latter only for the variants
with demonstrations) are for smoke tests with a tiny budget; the table
then says that the shipped config was not used. Smoke test (~3 minutes):

  python benchmarks/r2d3_benchmark.py --output_dir=runs/r2d3_smoke \
      --seeds=0 --variants=r2d3,r2d2,rho_1_16 --num_env_steps=3000 \
      --num_demo_episodes=3 \
      --gin_bindings='r2d2.Settings.eval_interval = 1500' \
      --gin_bindings='r2d2.Settings.num_eval_episodes = 2' \
      --gin_bindings='r2d2.Settings.min_size_to_sample = 50' \
      --r2d3_gin_bindings='r2d3.DemonstrationReplay.pretrain_steps = 20'
"""

import os
import sys

from absl import app
from absl import flags
import numpy as np

import common  # benchmarks/common.py, next to this script.

REPO_ROOT = common.REPO_ROOT
R2D3_GIN = os.path.join(REPO_ROOT, 'gin', 'r2d3', 'minigrid_doorkey8x8.gin')
R2D2_GIN = os.path.join(REPO_ROOT, 'gin', 'r2d2', 'minigrid_doorkey8x8.gin')
R2D2_RND_GIN = os.path.join(REPO_ROOT, 'gin', 'r2d2_rnd',
                            'minigrid_doorkey8x8.gin')
R2D3_RND_GIN = os.path.join(REPO_ROOT, 'gin', 'r2d3_rnd',
                            'minigrid_doorkey8x8.gin')
TARGET_SUCCESS = 0.9
# Evals (env step 0 excluded) averaged for the "mean of last" column.
LAST_EVALS = 10
SUCCESS_TAG = 'Metrics/SuccessRate'
# Far from the training (SEED + i) and eval (SEED + 1000003 + j) env seeds.
DEMO_SEED = 100000
DEMO_BINDINGS = [
    'demonstrations.collect.env_loader = @minigrid.load',
    'demonstrations.collect.source = @demonstrations.scripted_expert()',
    'demonstrations.scripted_expert.expert = @experts.doorkey_expert',
    f'demonstrations.collect.seed = {DEMO_SEED}',
]
RHO = 'r2d3.DemonstrationReplay.demo_ratio'
# variant -> (gin file, extra bindings, uses demonstrations, ablation).
VARIANTS = {
    'r2d3': (R2D3_GIN, [], True, False),
    'r2d2': (R2D2_GIN, [], False, False),
    'r2d2_rnd': (R2D2_RND_GIN, [], False, False),
    'r2d3_rnd': (R2D3_RND_GIN, [], True, False),
    'rho_1_256': (R2D3_GIN, [f'{RHO} = 0.00390625'], True, True),
    'rho_1_16': (R2D3_GIN, [f'{RHO} = 0.0625'], True, True),
    'rho_1_4': (R2D3_GIN, [f'{RHO} = 0.25'], True, True),
    'rho_1_2': (R2D3_GIN, [f'{RHO} = 0.5'], True, True),
}

_OUTPUT_DIR = flags.DEFINE_string('output_dir', 'runs/r2d3_benchmark',
                                  'Where the demonstrations and runs go.')
_SEEDS = flags.DEFINE_list('seeds', ['0', '1', '2'],
                           'Seeds of the r2d3 and r2d2 variants.')
_ABLATION_SEEDS = flags.DEFINE_list('ablation_seeds', ['0'],
                                    'Seeds of the rho_* variants.')
_VARIANTS = flags.DEFINE_list(
    'variants', ['r2d3', 'r2d2', 'rho_1_256', 'rho_1_16', 'rho_1_4'],
    f'Subset of {sorted(VARIANTS)}.')
_NUM_ENV_STEPS = flags.DEFINE_integer('num_env_steps', 300_000,
                                      'Env steps per run.')
_NUM_DEMO_EPISODES = flags.DEFINE_integer(
    'num_demo_episodes', 20, 'Expert episodes to record (without '
    '--demo_file).')
_DEMO_FILE = flags.DEFINE_string(
    'demo_file', None, 'Use this demonstration file instead of recording.')
_EXTRA_BINDINGS = flags.DEFINE_multi_string(
    'gin_bindings', [], 'Extra bindings for every run (smoke tests: e.g. '
    'shorter eval intervals); they change the figures, so the table notes '
    'them.')
_EXTRA_R2D3_BINDINGS = flags.DEFINE_multi_string(
    'r2d3_gin_bindings', [], 'Extra bindings for the variants with '
    'demonstrations only (the twin does not know r2d3.* names), e.g. '
    "'r2d3.DemonstrationReplay.pretrain_steps = 20'.")
_REPORT_ONLY = flags.DEFINE_bool('report_only', False,
                                 'Only read existing runs.')
_PNG = flags.DEFINE_string('png', None,
                           'Also draw the eval curves into this PNG.')


def demo_file(output_dir):
  """The demonstration file: given, found, or recorded now."""
  if _DEMO_FILE.value:
    return os.path.abspath(_DEMO_FILE.value)
  path = os.path.join(output_dir,
                      f'doorkey8x8_{_NUM_DEMO_EPISODES.value}.demo')
  if not os.path.exists(path) and not _REPORT_ONLY.value:
    command = [
        sys.executable,
        os.path.join(REPO_ROOT, 'train', 'collect_demonstrations.py'),
        f'--output={path}', f'--num_episodes={_NUM_DEMO_EPISODES.value}',
        f'--gin_file={R2D3_GIN}',
    ] + [f'--gin_bindings={binding}' for binding in DEMO_BINDINGS]
    seconds, _ = common.run_logged(command, path + '.log')
    print(f'  demonstrations: {seconds:.0f} s', flush=True)
  return path


def summarize(run_dir):
  """Figures of one run from its logs, or None if it has no eval yet."""
  evals = common.read_scalars(os.path.join(run_dir, 'eval')).get(
      SUCCESS_TAG, [])
  if not evals:
    return None
  train = common.read_scalars(os.path.join(run_dir, 'train'))
  steps = train.get('Metrics/EnvironmentSteps', [])
  learner = train.get('Metrics/LearnerSteps', [])
  wall_times = [wall for _, wall, _ in evals + steps]
  reached = [step for step, _, value in evals
             if common.reaches(value, TARGET_SUCCESS)]
  # Only R2D3 evaluates at env step 0, right after pre-training.
  pretrained = [value for step, _, value in evals if step == 0]
  return {
      'env_steps': max(int(steps[-1][2]) if steps else 0, evals[-1][0]),
      'first_target_step': reached[0] if reached else None,
      'after_pretraining': pretrained[0] if pretrained else None,
      'best': max(value for _, _, value in evals),
      'final': evals[-1][2],
      'last_mean': float(np.mean([value for step, _, value in evals
                                  if step > 0][-LAST_EVALS:] or [np.nan])),
      'learner_steps': int(learner[-1][2]) if learner else 0,
      'wall_seconds': max(wall_times) - min(wall_times),
      'curve': [(step, value) for step, _, value in evals],
  }


def run(variant, seed, run_dir, demo_path):
  gin_file, bindings, uses_demos, _ = VARIANTS[variant]
  bindings = [f'SEED={seed}', f'NUM_ENV_STEPS={_NUM_ENV_STEPS.value}'] + (
      bindings + _EXTRA_BINDINGS.value)
  if uses_demos:
    bindings += [f"r2d3.DemonstrationReplay.path = '{demo_path}'"] + (
        _EXTRA_R2D3_BINDINGS.value)
  seconds, _ = common.run_logged(
      common.train_eval_command(run_dir, gin_file, bindings), run_dir + '.log')
  print(f'  {variant} seed {seed}: {seconds:.0f} s', flush=True)


def _shown_path(path):
  """`path` relative to the checkout if inside it (no machine paths)."""
  relative = os.path.relpath(path, REPO_ROOT)
  return path if relative.startswith(os.pardir) else relative


def report(rows, demo_path):
  """The Markdown table and per-variant target lines."""
  lines = [
      f'MiniGrid-DoorKey-8x8-v0, {_NUM_ENV_STEPS.value:,} env steps, '
      f'demonstrations: {_shown_path(demo_path)}; greedy eval success rate '
      f'(fraction of episodes reaching the goal), target >= {TARGET_SUCCESS}.',
  ]
  extra = _EXTRA_BINDINGS.value + _EXTRA_R2D3_BINDINGS.value
  if extra:
    lines.append(f'Extra bindings (NOT the shipped config): {extra}')
  lines += [
      '',
      '| variant | seed | env steps | first success >= 0.9 at | '
      f'after pre-training | best | final | mean of last {LAST_EVALS} | '
      'learner steps | wall (s) |',
      '|---|---|---|---|---|---|---|---|---|---|',
  ]
  for variant, seed, result in rows:
    if result is None:
      lines.append(f'| {variant} | {seed} | not run | | | | | | | |')
      continue
    first = result['first_target_step']
    pretrained = result['after_pretraining']
    lines.append(
        f"| {variant} | {seed} | {result['env_steps']:,} | "
        f"{f'{first:,}' if first is not None else 'never'} | "
        f"{f'{pretrained:.2f}' if pretrained is not None else '-'} | "
        f"{result['best']:.2f} | {result['final']:.2f} | "
        f"{result['last_mean']:.2f} | {result['learner_steps']:,} | "
        f"{result['wall_seconds']:.0f} |")
  lines.append('')
  for variant in dict.fromkeys(variant for variant, _, _ in rows):
    results = [r for v, _, r in rows if v == variant]
    hits = sum(r is not None and r['first_target_step'] is not None and
               r['first_target_step'] <= _NUM_ENV_STEPS.value
               for r in results)
    # Unfinished runs count as seeds (they may still reach the target);
    # the line says how many there are.
    unfinished = sum(r is None or r['env_steps'] < _NUM_ENV_STEPS.value
                     for r in results)
    lines.append(f'* {variant}: success rate >= {TARGET_SUCCESS} within '
                 f'{_NUM_ENV_STEPS.value:,} env steps on {hits}/'
                 f'{len(results)} seeds' +
                 (f' ({unfinished} not run or unfinished).' if unfinished
                  else '.'))
  return '\n'.join(lines)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  unknown = sorted(set(_VARIANTS.value) - set(VARIANTS))
  if unknown:
    raise app.UsageError(f'Unknown variants {unknown}; known: '
                         f'{sorted(VARIANTS)}.')
  output_dir = os.path.abspath(_OUTPUT_DIR.value)
  os.makedirs(output_dir, exist_ok=True)
  print(f'CPU: {common.cpu_description()}', flush=True)
  demo_path = demo_file(output_dir)
  rows = []
  for variant in _VARIANTS.value:
    ablation = VARIANTS[variant][3]
    for seed in (_ABLATION_SEEDS.value if ablation else _SEEDS.value):
      run_dir = os.path.join(output_dir, f'{variant}_seed{seed}')
      result = summarize(run_dir) if os.path.isdir(run_dir) else None
      finished = (result is not None and
                  result['env_steps'] >= _NUM_ENV_STEPS.value)
      if not finished and not _REPORT_ONLY.value:
        run(variant, seed, run_dir, demo_path)
        result = summarize(run_dir)
      rows.append((variant, seed, result))
  table = report(rows, demo_path)
  print('\n' + table)
  with open(os.path.join(output_dir, 'results.md'), 'w') as f:
    f.write(table + '\n')
  if _PNG.value:
    curves = {}
    for variant, seed, result in rows:
      curves.setdefault(variant, {})[seed] = result['curve'] if result else []
    extra = (' (extra bindings)' if
             _EXTRA_BINDINGS.value + _EXTRA_R2D3_BINDINGS.value else '')
    common.plot_eval_curves(
        curves, _PNG.value,
        title=f'R2D3 and its R2D2 twin on MiniGrid-DoorKey-8x8-v0{extra}',
        ylabel='greedy eval success rate (20 episodes)',
        target=TARGET_SUCCESS, budget=_NUM_ENV_STEPS.value,
        ylim=(-0.03, 1.03))
    print(f'\nEval curves: {_PNG.value}')


if __name__ == '__main__':
  app.run(main)
