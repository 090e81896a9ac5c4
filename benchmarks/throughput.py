"""Speed of the on-policy loop, side by side: ours vs stock TF-Agents.

Every figure comes from fresh processes run one after another, pairs
interleaved (A B A B ...), `--repeats` times; the table shows medians and
the ratios of the medians. CPU seconds are those of the whole process
(user + system), the figure that holds when the machine is loaded; wall
seconds are printed too, with the load average before and after.

    .venv/bin/python benchmarks/throughput.py --measure=startup,steady,rnd

* `startup`: `train/train_eval.py --gin_file=gin/ppo/cartpole.gin`
  launched as a user would; the seconds from launch to its "First
  iteration done" line (the first gradient steps are in that iteration)
  and to its first greedy eval with average return >= 475. The run is
  stopped there.
* `steady`: env steps per CPU-second of PPO on CartPole
  (gin/ppo/cartpole.gin's hyperparameters) once start-up is over:
  `ours` is the loop of `on_policy.train_eval` (RolloutCollector over a
  GymnasiumBatch, EpochLoopPPOClipAgent, the gin file's `tf_threads`),
  also shown with TensorFlow's default thread pools; `stock` is TF-Agents' own
  pieces with the same hyperparameters: PPOClipAgent, a
  TFPyEnvironment over a BatchedPyEnvironment, DynamicStepDriver into a
  TFUniformReplayBuffer, `gather_all`, `clear`, run with TensorFlow's
  default thread pools and with one thread (`stock_1_thread`); ours is
  compared with the better of the two per CPU-second. Both also report
  the seconds from process start to the end of the first train call.
* `components`: CPU microseconds per batched step of 8 CartPoles:
  TF-Agents' BatchedPyEnvironment vs our GymnasiumBatch, each stepped
  from Python and through a TFPyEnvironment inside a tf.function loop; a
  trivial function call for scale; the PPO collect policy called from
  Python once per step vs the collector's one traced loop of policy and
  env step.
* `rnd`: env steps per CPU-second of RND-PPO and its PPO twin (both with
  our loop) on MountainCar and MiniGrid-Empty-8x8 (gin/rnd_ppo/<task>.gin
  and gin/ppo/<task>.gin).
* `torso`: agent steps per CPU-second of RND-PPO on Montezuma's Revenge
  (gin/rnd_ppo/montezuma.gin, its 8 envs) with its shared torso
  against the same file with two torsos (an actor and a value network of
  their own, (256, 448) units each after the convs, the file's layout
  before the shared torso). The RND warm-up is cut to 64 steps (it is not
  timed).
* `cleanrl`: agent steps per CPU-second of the whole process tree (env
  subprocesses included) of RND-PPO on Montezuma's Revenge
  (gin/rnd_ppo/montezuma.gin as shipped, 8 in-process envs, 128 steps
  each per update; and the same with one subprocess per env) against
  CleanRL's `ppo_atari.py` (no RND; 8 envs, 128 steps, `--no-cuda`), run unchanged from a CleanRL checkout by the Python of an
  environment with PyTorch (`--cleanrl_dir`, `--cleanrl_python`; set-up
  in docs/performance.md) through `benchmarks/cleanrl_shim.py`, with
  torch's default threads and with one (`OMP_NUM_THREADS=1`); ours is
  compared with CleanRL's better setting per CPU-second and per second.
  Its updates are timed between the "SPS:" lines it prints after each
  one.

* `window`: `train/train_eval.py --gin_file=gin/rnd_ppo/montezuma.gin`
  itself (RND warm-up cut to 64 steps, evals and checkpoints out of the
  way, a progress line every 1,024 agent steps), as shipped and with one
  subprocess per env, interleaved: agent steps per CPU-second of the
  whole process tree and per second from its progress line at or past
  3,000 agent steps to the one at or past 15,000 (`common.window`). The
  binary's own figure beside the steady loop's. `--window_env=NAME=VALUE`
  adds the shipped file run with that variable set, e.g.
  `ONEDNN_MAX_CPU_ISA=AVX2` (oneDNN's kernels as on an AVX2-only CPU).

Steady figures time `--iterations` collect + train iterations after
`--warmup` iterations; evals and checkpoints are not in them.

`--baseline_tree=DIR` (steady, rnd, torso): each of our loops also runs from
another checkout of the repository, its own script and package (e.g.
`git worktree add ../before <commit>`), interleaved in the same repeats,
so a change is measured before and after in one run.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import common  # benchmarks/common.py, next to this script.
import throughput_loops  # benchmarks/throughput_loops.py, next to this script.

REPO_ROOT = common.REPO_ROOT
CARTPOLE_GIN = 'gin/ppo/cartpole.gin'
RND_TASKS = {
    'MountainCar': ('gin/rnd_ppo/mountaincar.gin', 'gin/ppo/mountaincar.gin'),
    'MiniGrid-Empty-8x8': ('gin/rnd_ppo/minigrid_empty8x8.gin',
                           'gin/ppo/minigrid_empty8x8.gin'),
}
MONTEZUMA_GIN = 'gin/rnd_ppo/montezuma.gin'
CLEANRL_ENV_ID = 'MontezumaRevengeNoFrameskip-v4'
CLEANRL_ENVS, CLEANRL_STEPS = 8, 128  # ppo_atari.py's defaults, as the gin file
TWO_TORSOS = ('ppo.ppo_clip_agent.shared_torso = False',
              'ppo.ppo_clip_agent.torso_fc_layers = ()',
              'ppo.ppo_clip_agent.actor_fc_layers = (256, 448)',
              'ppo.ppo_clip_agent.value_fc_layers = (256, 448)')
SHORT_WARM_UP = ('warm_up_observation_normalizer.num_steps = 64',)
SOLVED_RETURN = 475.0  # CartPole-v1's reward threshold (gymnasium)


# ------------------------------------------------------------ measures ---


def _run_child(args, tree=None):
  """Runs this script's child in a fresh process; its JSON line.

  `tree`: another checkout of the repository (e.g. a `git worktree` of an
  earlier commit), whose own script and package run the child.
  """
  root = os.path.abspath(tree) if tree else REPO_ROOT
  script = os.path.join(root, 'benchmarks', os.path.basename(__file__))
  environment = dict(os.environ)
  if tree:
    environment['PYTHONPATH'] = os.pathsep.join(
        [root] + [p for p in [environment.get('PYTHONPATH')] if p])
  command = [sys.executable, script] + args
  output = subprocess.run(command, cwd=root, capture_output=True,
                          text=True, check=False, env=environment)
  if output.returncode:
    sys.exit(f'{" ".join(command)} failed:\n{output.stderr[-3000:]}')
  return json.loads(output.stdout.strip().splitlines()[-1])


def measure_steady(gin_file, loop, warmup, iterations, gin_bindings=(),
                   tree=False, checkout=None):
  result = _run_child(['--child=steady', f'--loop={loop}',
                       f'--gin_file={gin_file}', f'--warmup={warmup}',
                       f'--iterations={iterations}'] +
                      [f'--gin_bindings={b}' for b in gin_bindings] +
                      (['--tree'] if tree else []), checkout)
  result['steps_per_cpu_second'] = result['env_steps'] / result['cpu_seconds']
  result['steps_per_second'] = result['env_steps'] / result['wall_seconds']
  if tree:
    result['steps_per_tree_cpu_second'] = (result['env_steps'] /
                                           result['tree_cpu_seconds'])
  return result


def measure_cleanrl(python, cleanrl_dir, warmup, iterations, timeout,
                    one_thread=False):
  """CleanRL's ppo_atari.py in its own process; its updates timed.

  The window runs from its `warmup`-th to its `warmup + iterations`-th
  "SPS:" line (each is printed after an update; `common.cleanrl_window`).
  `one_thread`: torch's thread pools at one thread instead of its default.
  """
  steps_per_update = CLEANRL_ENVS * CLEANRL_STEPS
  result = common.cleanrl_window(
      python, cleanrl_dir, 'ppo_atari.py',
      [f'--env-id={CLEANRL_ENV_ID}', f'--num-envs={CLEANRL_ENVS}',
       f'--num-steps={CLEANRL_STEPS}', '--no-cuda',
       f'--total-timesteps={(warmup + iterations + 1) * steps_per_update}'],
      warmup, warmup + iterations, iterations * steps_per_update, timeout,
      one_thread=one_thread)
  result['first_train_seconds'] = result.pop('first_line_seconds')
  return result


CLEANRL_PEERS = ("CleanRL ppo_atari, torch's default threads",
                 'CleanRL ppo_atari, 1 thread')


def report_cleanrl(args):
  """Ours (RND-PPO, Montezuma) and CleanRL's ppo_atari at both thread
  settings, interleaved; ratios to CleanRL's better setting."""
  ours_label = 'RND-PPO (ours)'
  subprocess_label = 'RND-PPO (ours), one subprocess per env'
  results = {ours_label: [], subprocess_label: [], CLEANRL_PEERS[0]: [],
             CLEANRL_PEERS[1]: []}
  for repeat in range(args.repeats):
    for label in results:
      if label in (ours_label, subprocess_label):
        bindings = SHORT_WARM_UP + (
            ('on_policy.Settings.parallel_envs = True',)
            if label == subprocess_label else ())
        result = measure_steady(MONTEZUMA_GIN, 'ours', args.warmup,
                                args.iterations, bindings, tree=True)
      else:
        result = measure_cleanrl(args.cleanrl_python, args.cleanrl_dir,
                                 args.warmup, args.iterations,
                                 args.startup_timeout + 60 * args.iterations,
                                 one_thread=label == CLEANRL_PEERS[1])
      results[label].append(result)
      print(f'  [cleanrl {repeat + 1}/{args.repeats}] {label}: '
            f'{result["steps_per_tree_cpu_second"]:,.0f} agent steps per '
            f'CPU-s of the process tree, {result["steps_per_second"]:,.0f} '
            f'agent steps/s, first update done '
            f'{result["first_train_seconds"]:.1f} s after start', flush=True)
  print(f"\nMontezuma's Revenge, 8 envs, steady (median of {args.repeats}; "
        'CleanRL runs PPO without RND)')
  print('| loop | agent steps / CPU-s of the process tree | agent steps / s '
        '| start -> first update done (s) |')
  print('|---|---|---|---|')
  for label, runs in results.items():
    print(f'| {label} | {_fmt(_median(runs, "steps_per_tree_cpu_second"))} '
          f'| {_fmt(_median(runs, "steps_per_second"))} '
          f'| {_fmt(_median(runs, "first_train_seconds"), ".1f")} |')
  for key, unit in (('steps_per_tree_cpu_second',
                     'agent steps per CPU-s of the process tree'),
                    ('steps_per_second', 'agent steps per second')):
    best = max(CLEANRL_PEERS, key=lambda label: _median(results[label], key))
    value = _median(results[ours_label], key) / _median(results[best], key)
    print(f'ratio ours / CleanRL at its best setting ({best}; {unit}): '
          f'{value:.2f}', flush=True)
  print(flush=True)


def report_window(args):
  """RND-PPO's train_eval.py on Montezuma over a steady window, with the
  file's envs and with one subprocess per env, interleaved."""
  layouts = {'as shipped': ((), None),
             'one subprocess per env':
                 (('on_policy.Settings.parallel_envs = True',), None)}
  for setting in args.window_env:
    # e.g. ONEDNN_MAX_CPU_ISA=AVX2: this CPU's kernels capped to another's.
    name, _, value = setting.partition('=')
    layouts[f'as shipped, {setting}'] = ((), dict(os.environ, **{name: value}))
  bindings = SHORT_WARM_UP + (
      'NUM_ENV_STEPS = 20000', 'on_policy.Settings.log_interval = 1024',
      'on_policy.Settings.eval_interval = 100000000',
      'on_policy.Settings.checkpoint_interval = 100000000')
  results = {label: [] for label in layouts}
  with tempfile.TemporaryDirectory() as work_dir:
    for repeat in range(args.repeats):
      for index, (label, (layout, environment)) in enumerate(
          layouts.items()):
        run = os.path.join(work_dir, f'{len(results[label])}_{index}')
        per_cpu, per_second, _, _ = common.window(
            common.train_eval_command(run, MONTEZUMA_GIN, bindings + layout),
            run + '.log', 3_000, 15_000, args.startup_timeout + 600,
            environment=environment)
        results[label].append(dict(steps_per_tree_cpu_second=per_cpu,
                                   steps_per_second=per_second))
        print(f'  [window {repeat + 1}/{args.repeats}] {label}: '
              f'{per_cpu:,.0f} agent steps per CPU-s of the process tree, '
              f'{per_second:,.0f} per s', flush=True)
  print(f'\nRND-PPO, train_eval.py on {MONTEZUMA_GIN}, agent steps 3,000 to '
        f'15,000 (median of {args.repeats})')
  print('| layout | agent steps / CPU-s of the process tree | agent steps / s |')
  print('|---|---|---|')
  for label, runs in results.items():
    print(f'| {label} | {_fmt(_median(runs, "steps_per_tree_cpu_second"))} '
          f'| {_fmt(_median(runs, "steps_per_second"))} |', flush=True)
  print(flush=True)


def measure_startup(timeout):
  """Launch -> first iteration, launch -> greedy eval >= 475 (seconds)."""
  with tempfile.TemporaryDirectory() as root_dir:
    command = common.train_eval_command(root_dir,
                                        os.path.join(REPO_ROOT, CARTPOLE_GIN))
    launched = time.monotonic()
    process = subprocess.Popen(command, cwd=REPO_ROOT,
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    result = {'first_iteration_seconds': None, 'solved_seconds': None,
              'solved_at_env_step': None}
    try:
      for line in process.stdout:
        now = time.monotonic() - launched
        if 'First iteration done' in line:
          result['first_iteration_seconds'] = now
        if 'Eval at env step' in line:
          step = int(line.split('Eval at env step ')[1].split(':')[0]
                     .replace(',', ''))
          average = float(line.split('average return ')[1].split(',')[0])
          if average >= SOLVED_RETURN:
            result['solved_seconds'] = now
            result['solved_at_env_step'] = step
            break
        if now > timeout:
          break
    finally:
      process.kill()
      process.wait()
  return result


# -------------------------------------------------------------- report ---


def _median(results, key):
  values = [r[key] for r in results if r.get(key) is not None]
  return statistics.median(values) if values else None


def _fmt(value, spec=',.0f'):
  return '-' if value is None else format(value, spec)


def report_pairs(title, pairs, repeats, warmup, iterations, baseline=None):
  """Runs (label, gin, loop[, bindings]) interleaved; a table and ratios.

  The ratios are each label's env steps per CPU-s over the reference's:
  the best per CPU-s of the stock loops (TF-Agents at both thread
  settings) where there are any, else the second label (the PPO twin).
  With `baseline` (another checkout) each of our loops also runs from it,
  interleaved in the same repeats, as '<label> @ baseline', and each ratio
  to it is printed.
  """
  pairs = [tuple(pair) + ((),) * (4 - len(pair)) + (None,) for pair in pairs]
  if baseline:
    pairs += [(f'{label} @ baseline', gin_file, loop, bindings, baseline)
              for label, gin_file, loop, bindings, _ in pairs
              if not loop.startswith('stock')]
  results = {label: [] for label, *_ in pairs}
  for repeat in range(repeats):
    for label, gin_file, loop, bindings, checkout in pairs:
      result = measure_steady(gin_file, loop, warmup, iterations, bindings,
                              checkout=checkout)
      results[label].append(result)
      print(f'  [{title} {repeat + 1}/{repeats}] {label}: '
            f'{result["steps_per_cpu_second"]:,.0f} env steps/CPU-s, '
            f'{result["steps_per_second"]:,.0f} env steps/s, first train '
            f'call done {result["first_train_seconds"]:.1f} s after start',
            flush=True)
  print(f'\n{title} (median of {repeats})')
  print('| loop | env steps / CPU-s | env steps / s | start -> first train '
        'done (s) | CPU ms per iteration: collect / train (its preprocessing) |')
  print('|---|---|---|---|---|')
  for label, *_ in pairs:
    split = {name: statistics.median(r['cpu_ms_per_iteration'][name]
                                     for r in results[label])
             for name in results[label][0]['cpu_ms_per_iteration']}
    preprocessing = split['preprocess (in train)']
    print(f'| {label} | {_fmt(_median(results[label], "steps_per_cpu_second"))} '
          f'| {_fmt(_median(results[label], "steps_per_second"))} '
          f'| {_fmt(_median(results[label], "first_train_seconds"), ".1f")} '
          f'| {split["collect"]:.0f} / {split["train"]:.0f}'
          + (f' ({preprocessing:.0f})' if preprocessing else '') + ' |')
  stock = [label for label, _, loop, *_ in pairs if loop.startswith('stock')]
  reference = (max(stock, key=lambda label: _median(
      results[label], 'steps_per_cpu_second')) if stock else pairs[1][0])
  ratios = {}

  def ratio(label, other):
    value = (_median(results[label], 'steps_per_cpu_second') /
             _median(results[other], 'steps_per_cpu_second'))
    print(f'ratio {label} / {other} (env steps per CPU-s): {value:.2f}',
          flush=True)
    return value

  for label, _, loop, _, checkout in pairs:
    if not (checkout or loop.startswith('stock')):
      ratios[label] = ratio(label, reference)
  for label, *_, checkout in pairs:
    if checkout:
      ratio(label.replace(' @ baseline', ''), label)
  print(flush=True)
  return ratios


def main():
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--measure', default='components,startup,steady,rnd',
                      help='Comma-separated: components, startup, steady, '
                      'rnd, torso, cleanrl, window.')
  parser.add_argument('--repeats', type=int, default=3)
  parser.add_argument('--warmup', type=int, default=3,
                      help='Iterations before the timed ones.')
  parser.add_argument('--iterations', type=int, default=20,
                      help='Timed collect + train iterations.')
  parser.add_argument('--startup_timeout', type=float, default=300.0)
  parser.add_argument('--cleanrl_dir',
                      help='cleanrl: a checkout of github.com/vwxyzjn/cleanrl.')
  parser.add_argument('--cleanrl_python',
                      help='cleanrl: the Python of an environment with '
                      'PyTorch, gymnasium, ale-py, opencv and tyro.')
  parser.add_argument('--window_env', action='append', default=[],
                      help='window: also run the shipped file with this '
                      'NAME=VALUE in its environment, interleaved (e.g. '
                      'ONEDNN_MAX_CPU_ISA=AVX2 runs oneDNN as on an '
                      'AVX2-only CPU); repeatable.')
  parser.add_argument('--baseline_tree',
                      help='steady, rnd, torso: also run our loops from this '
                      'checkout (e.g. `git worktree add ../before <commit>`), '
                      'interleaved, and print the ratios to it.')
  parser.add_argument('--tree', action='store_true', help=argparse.SUPPRESS)
  parser.add_argument('--child', help=argparse.SUPPRESS)
  parser.add_argument('--loop', help=argparse.SUPPRESS)
  parser.add_argument('--gin_file', help=argparse.SUPPRESS)
  parser.add_argument('--gin_bindings', action='append', default=[],
                      help=argparse.SUPPRESS)
  args = parser.parse_args()

  if args.child == 'steady':
    throughput_loops.child_steady(args.loop, args.gin_file, args.warmup,
                                  args.iterations, args.gin_bindings,
                                  args.tree)
    return
  if args.child == 'components':
    throughput_loops.child_components(CARTPOLE_GIN, args.repeats)
    return

  print(f'CPU: {common.cpu_description()}', flush=True)
  print(f'load average before: {os.getloadavg()}; {os.cpu_count()} CPUs',
        flush=True)
  measures = args.measure.split(',')
  if 'cleanrl' in measures:
    if not (args.cleanrl_dir and args.cleanrl_python):
      parser.error('--measure=cleanrl needs --cleanrl_dir and '
                   '--cleanrl_python (docs/performance.md).')
    # CleanRL runs in a temporary directory (its runs/ go there), so paths
    # given relative to ours are resolved here.
    args.cleanrl_dir = os.path.abspath(args.cleanrl_dir)
    args.cleanrl_python = os.path.abspath(args.cleanrl_python)
    for flag, path in (('--cleanrl_dir', args.cleanrl_dir),
                       ('--cleanrl_python', args.cleanrl_python)):
      if not os.path.exists(path):
        parser.error(f'{flag}: {path} does not exist (docs/performance.md).')
  if 'components' in measures:
    costs = _run_child(['--child=components', f'--repeats={args.repeats}'])
    print(f'\nCPU microseconds per batched step of 8 CartPole-v1 envs '
          f'(best of {args.repeats} x 2000 steps)')
    print('| piece | CPU us per step |')
    print('|---|---|')
    for name, cost in costs.items():
      print(f'| {name} | {cost:,.0f} |')
    print(flush=True)
  if 'startup' in measures:
    runs = []
    for repeat in range(args.repeats):
      runs.append(measure_startup(args.startup_timeout))
      print(f'  [startup {repeat + 1}/{args.repeats}] {runs[-1]}', flush=True)
    print(f'\nPPO CartPole start-up, train/train_eval.py --gin_file='
          f'{CARTPOLE_GIN} (median of {args.repeats})')
    print('| launch -> first iteration done (s) | launch -> greedy eval '
          '>= 475 (s) | at env step |')
    print('|---|---|---|')
    print(f'| {_fmt(_median(runs, "first_iteration_seconds"), ".1f")} '
          f'| {_fmt(_median(runs, "solved_seconds"), ".1f")} '
          f'| {_fmt(_median(runs, "solved_at_env_step"))} |\n', flush=True)
  if 'steady' in measures:
    report_pairs('PPO CartPole, steady', [
        ('ours', CARTPOLE_GIN, 'ours'),
        ('stock TF-Agents', CARTPOLE_GIN, 'stock'),
        ('stock TF-Agents, 1 thread', CARTPOLE_GIN, 'stock_1_thread'),
        ('ours with TF default threads', CARTPOLE_GIN,
         'ours_default_threads')],
        args.repeats, args.warmup, args.iterations, args.baseline_tree)
  if 'rnd' in measures:
    for task, (rnd_gin, twin_gin) in RND_TASKS.items():
      report_pairs(f'{task}, RND-PPO vs PPO twin, steady', [
          ('RND-PPO', rnd_gin, 'ours'), ('PPO twin', twin_gin, 'ours')],
          args.repeats, args.warmup, args.iterations, args.baseline_tree)
  if 'torso' in measures:
    report_pairs("Montezuma's Revenge, RND-PPO, shared torso vs two torsos, "
                 'steady', [
                     ('shared torso', MONTEZUMA_GIN, 'ours', SHORT_WARM_UP),
                     ('two torsos', MONTEZUMA_GIN, 'ours',
                      SHORT_WARM_UP + TWO_TORSOS)],
                 args.repeats, args.warmup, args.iterations,
                 args.baseline_tree)
  if 'cleanrl' in measures:
    report_cleanrl(args)
  if 'window' in measures:
    report_window(args)
  print(f'load average after: {os.getloadavg()}', flush=True)


if __name__ == '__main__':
  main()
