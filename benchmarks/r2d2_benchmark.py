r"""R2D2 vs its feed-forward twin on StatelessCartPole-v1, plus throughput.

  python benchmarks/r2d2_benchmark.py --output_dir=runs/r2d2_benchmark \
      [--seeds=0,1,2] [--variants=r2d2,feed_forward] [--num_env_steps=200000]
      [--report_only] [--png=P] [--gin_bindings=B ...]

Runs train/train_eval.py with gin/r2d2/stateless_cartpole.gin once per
(variant, seed), one run at a time, into output_dir/<variant>_seed<seed>
(an existing finished run is reused), then reads the TensorBoard logs and
prints:

* per run: final greedy eval return, the mean of the last 5 evals, best
  eval return, the first env step with an eval return >= 450 (the
  target), wall time;
* throughput: sequences inserted per second (Replay/inserted over the run),
  learner steps per second and env steps per second overall;
* with --png (also with --report_only): the greedy eval return
  (eval/Metrics/AverageReturn) of every run against env steps, one colour
  per variant, one thin line per seed, the target as a dashed line.

`r2d2` is the gin file as shipped (one actor process stepping 16 batched
envs: 16 epsilon slots). The feed-forward variant binds
`r2d2.r2d2_agent_fn.lstm_size = None` (no recurrence, empty stored state);
`threads` runs the same agent with 4 actor threads of one env each;
everything else is identical. --gin_bindings adds bindings to every run
(trials of other settings: give them their own --output_dir; the report
names them). The README's earlier results (32 sequences per learner step,
4 samples per insert) are reproduced with
`--gin_bindings='r2d2.Settings.batch_size = 32'
--gin_bindings='r2d2.Settings.samples_per_insert = 4.0'`.
"""

import os

from absl import app
from absl import flags

import common  # benchmarks/common.py, next to this script.

REPO_ROOT = common.REPO_ROOT
GIN_FILE = os.path.join(REPO_ROOT, 'gin', 'r2d2', 'stateless_cartpole.gin')
TARGET_RETURN = 450.0
VARIANT_BINDINGS = {
    'r2d2': [],
    'feed_forward': ['r2d2.r2d2_agent_fn.lstm_size = None'],
    # Same agent, actors as 4 threads of the learner's process, one env each.
    'threads': ['r2d2.Settings.num_actors = 4',
                'r2d2.Settings.envs_per_actor = 1',
                "r2d2.Settings.actor_mode = 'thread'"],
}

_OUTPUT_DIR = flags.DEFINE_string('output_dir', 'runs/r2d2_benchmark',
                                  'Where the runs go.')
_SEEDS = flags.DEFINE_list('seeds', ['0', '1', '2'], 'Seeds.')
_VARIANTS = flags.DEFINE_list('variants', ['r2d2', 'feed_forward'],
                              f'Subset of {sorted(VARIANT_BINDINGS)}.')
_NUM_ENV_STEPS = flags.DEFINE_integer('num_env_steps', 200_000,
                                      'Env steps per run.')
_EXTRA_BINDINGS = flags.DEFINE_multi_string(
    'gin_bindings', [], 'Extra bindings for every run (not the shipped '
    'config; the report lists them).')
_REPORT_ONLY = flags.DEFINE_bool('report_only', False,
                                 'Only read existing runs.')
_PNG = flags.DEFINE_string('png', None,
                           'Also draw the eval curves into this PNG.')


def summarize(run_dir):
  """Figures of one finished run, or None."""
  evals = common.read_scalars(os.path.join(run_dir, 'eval')).get(
      'Metrics/AverageReturn', [])
  train = common.read_scalars(os.path.join(run_dir, 'train'))
  if not evals or 'Metrics/EnvironmentSteps' not in train:
    return None
  steps = train['Metrics/EnvironmentSteps']
  learner = train['Metrics/LearnerSteps']
  inserted = train['Replay/inserted']
  wall = steps[-1][1] - steps[0][1]
  reached = [step for step, _, value in evals if value >= TARGET_RETURN]
  return {
      'final': evals[-1][2],
      'last5': sum(value for _, _, value in evals[-5:]) / len(evals[-5:]),
      'best': max(value for _, _, value in evals),
      'first_target_step': reached[0] if reached else None,
      'env_steps': int(steps[-1][2]),
      'env_steps_per_second': (steps[-1][2] - steps[0][2]) / max(wall, 1e-9),
      'learner_steps_per_second':
          (learner[-1][2] - learner[0][2]) / max(wall, 1e-9),
      'sequences_per_second':
          (inserted[-1][2] - inserted[0][2]) / max(wall, 1e-9),
      'wall_seconds': wall,
      'curve': [(step, value) for step, _, value in evals],
  }


def run(variant, seed, run_dir):
  command = common.train_eval_command(
      run_dir, GIN_FILE,
      [f'SEED={seed}', f'NUM_ENV_STEPS={_NUM_ENV_STEPS.value}'] +
      VARIANT_BINDINGS[variant] + _EXTRA_BINDINGS.value)
  seconds, _ = common.run_logged(command, run_dir + '.log')
  print(f'  {variant} seed {seed}: {seconds:.0f} s', flush=True)


def main(argv):
  del argv
  output_dir = os.path.abspath(_OUTPUT_DIR.value)
  os.makedirs(output_dir, exist_ok=True)
  print(f'CPU: {common.cpu_description()}', flush=True)
  rows = []
  for variant in _VARIANTS.value:
    for seed in _SEEDS.value:
      run_dir = os.path.join(output_dir, f'{variant}_seed{seed}')
      result = summarize(run_dir) if os.path.isdir(run_dir) else None
      finished = (result is not None and
                  result['env_steps'] >= _NUM_ENV_STEPS.value)
      if not finished and not _REPORT_ONLY.value:
        run(variant, seed, run_dir)
        result = summarize(run_dir)
      rows.append((variant, seed, result))

  print(f'\nStatelessCartPole-v1, greedy eval return (10 episodes), '
        f'target >= {TARGET_RETURN:.0f}\n')
  if _EXTRA_BINDINGS.value:
    print(f'Extra bindings (NOT the shipped config): {_EXTRA_BINDINGS.value}\n')
  print('| variant | seed | env steps | final return | mean of last 5 | '
        'best return | first >= 450 at | wall (s) |')
  print('|---|---|---|---|---|---|---|---|')
  for variant, seed, result in rows:
    if result is None:
      print(f'| {variant} | {seed} | not run | | | | | |')
      continue
    first = result['first_target_step']
    print(f"| {variant} | {seed} | {result['env_steps']} | "
          f"{result['final']:.1f} | {result['last5']:.1f} | "
          f"{result['best']:.1f} | "
          f"{first if first is not None else 'never'} | "
          f"{result['wall_seconds']:.0f} |")
  print('\nThroughput (whole run, from TensorBoard):\n')
  print('| variant | seed | sequences inserted/s | learner steps/s | '
        'env steps/s |')
  print('|---|---|---|---|---|')
  for variant, seed, result in rows:
    if result is not None:
      print(f"| {variant} | {seed} | {result['sequences_per_second']:.1f} | "
            f"{result['learner_steps_per_second']:.1f} | "
            f"{result['env_steps_per_second']:.0f} |")
  if _PNG.value:
    curves = {}
    for variant, seed, result in rows:
      curves.setdefault(variant, {})[seed] = result['curve'] if result else []
    extra = ' (extra bindings)' if _EXTRA_BINDINGS.value else ''
    common.plot_eval_curves(
        curves, _PNG.value,
        title=f'R2D2 on StatelessCartPole-v1{extra}: greedy eval',
        ylabel='greedy eval return (10 episodes)', target=TARGET_RETURN,
        budget=_NUM_ENV_STEPS.value)
    print(f'\nEval curves: {_PNG.value}')


if __name__ == '__main__':
  app.run(main)
