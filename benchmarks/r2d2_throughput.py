r"""R2D2 against a stock TF-Agents recurrent DQN, side by side.

  .venv/bin/python benchmarks/r2d2_throughput.py \
      [--gin_file=gin/r2d2/stateless_cartpole.gin] [--repeats=2] \
      [--window_start=20000] [--window_end=60000] [--baseline_tree=DIR] \
      [--peers=ours,stock,stock_1_thread]

Peers, each a fresh process, interleaved (A B C A B C ...):
* `ours`: train/train_eval.py on the gin file as shipped (its actor
  process and learner), without evals or checkpoints in the window;
* `stock`: benchmarks/stock_recurrent_dqn.py on the same gin file
  (DqnAgent + QRnnNetwork, same sizes, batch and replay ratio) with
  TensorFlow's default thread pools, and `stock 1 thread` with one intra-
  and one inter-op thread; the better of the two per CPU-second is the
  peer's best setting;
* `baseline` (with `--baseline_tree=DIR`): `ours` run from another
  checkout, its own binary, package and gin file (e.g. `git worktree add
  ../before <commit>`), so a change is measured before and after in one
  run.

A window runs from the first progress line at or past `--window_start` env
steps to the first at or past `--window_end`: env steps over the CPU
seconds of the whole process tree (psutil, sampled when each of the two
lines appears) and over wall seconds, and the CPU-ms per env step of the
main process (ours: the learner with the Reverb server) and of its children
(ours: the actor processes). The stock loop also prints its own split,
collection per env step and sampling + training per learner step. Start-up,
replay warm-up and tracing fall before the window. The table shows
medians; the ratios are ours over each peer. The load average is printed
before and after.
"""

import os
import statistics
import sys
import tempfile

from absl import app
from absl import flags

import common

_GIN_FILE = flags.DEFINE_string('gin_file', 'gin/r2d2/stateless_cartpole.gin',
                                'An R2D2 gin file.')
_REPEATS = flags.DEFINE_integer('repeats', 2, 'Interleaved repeats.')
_WINDOW_START = flags.DEFINE_integer('window_start', 20_000,
                                     'Env steps where the window opens.')
_WINDOW_END = flags.DEFINE_integer('window_end', 60_000,
                                   'Env steps where the window closes.')
_TIMEOUT = flags.DEFINE_float('timeout', 1200.0, 'Seconds per run.')
_BASELINE_TREE = flags.DEFINE_string(
    'baseline_tree', None, 'Also run ours from this checkout, interleaved.')
_PEERS = flags.DEFINE_list(
    'peers', ['ours', 'stock', 'stock_1_thread'],
    'Peers to run (spaces in labels as underscores); baseline is added '
    'with --baseline_tree.')

def _commands(root_dir):
  """label -> (command line, environment) of each peer."""
  budget = _WINDOW_END.value + 20_000
  bindings = [f'NUM_ENV_STEPS = {budget}',
              'r2d2.Settings.eval_interval = 100000000',
              'r2d2.Settings.checkpoint_interval = 100000000',
              'r2d2.Settings.num_eval_episodes = 1',
              'r2d2.Settings.log_interval = 10000']
  ours = common.train_eval_command(root_dir, _GIN_FILE.value, bindings)
  stock = [sys.executable,
           os.path.join(common.REPO_ROOT, 'benchmarks',
                        'stock_recurrent_dqn.py'),
           f'--gin_file={_GIN_FILE.value}', f'--num_env_steps={budget}',
           '--log_interval=10000']
  commands = {'ours': (ours, None), 'stock': (stock, None),
              'stock 1 thread': (stock + ['--tf_threads=1'], None)}
  commands = {label: command for label, command in commands.items()
              if label.replace(' ', '_') in _PEERS.value}
  if _BASELINE_TREE.value:
    tree = os.path.abspath(_BASELINE_TREE.value)
    # The tree's package ahead of the venv's editable install of this one.
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [tree] + [p for p in [os.environ.get('PYTHONPATH')] if p]))
    # The tree's own gin file: a change may bind settings only it knows.
    baseline = common.train_eval_command(
        root_dir + '_baseline', os.path.join(tree, _GIN_FILE.value),
        bindings)
    baseline[1] = os.path.join(tree, 'train', 'train_eval.py')
    commands['baseline'] = (baseline, environment)
  return commands


def measure(command, log_path, environment=None):
  """`common.window` of one run between the two flags' env steps."""
  return common.window(command, log_path, _WINDOW_START.value,
                       _WINDOW_END.value, _TIMEOUT.value, environment)


def main(argv):
  del argv
  print(f'CPU: {common.cpu_description()}', flush=True)
  print(f'load average before: {os.getloadavg()}', flush=True)
  workdir = tempfile.mkdtemp(prefix='r2d2_throughput_')
  results = {}
  for repeat in range(_REPEATS.value):
    for label, (command, environment) in _commands(
        os.path.join(workdir, f'ours_{repeat}')).items():
      log_path = os.path.join(workdir,
                              f'{label.replace(" ", "_")}_{repeat}.log')
      per_cpu, per_second, main_ms, children_ms = measure(
          command, log_path, environment)
      results.setdefault(label, []).append((per_cpu, per_second, main_ms,
                                            children_ms))
      print(f'  {label}, repeat {repeat}: {per_cpu:,.0f} env steps per '
            f'CPU-s, {per_second:,.0f} per s; CPU-ms per env step: '
            f'{main_ms:.3f} main process, {children_ms:.3f} its children',
            flush=True)
      if label.startswith('stock'):
        # Its own split, from its progress lines in the window.
        with open(log_path) as f:
          split = [line.rsplit('| ', 1)[-1].strip() for line in f
                   if 'CPU-ms per env step in collection' in line]
        print(f'    {split[-1] if split else ""}', flush=True)
  print(f'load average after: {os.getloadavg()}')
  medians = {label: tuple(statistics.median(v[k] for v in values)
                          for k in range(4))
             for label, values in results.items()}
  print(f'\n{_GIN_FILE.value}, env steps {_WINDOW_START.value:,} to '
        f'{_WINDOW_END.value:,}, medians of {_REPEATS.value}')
  print('| loop | env steps / CPU-s | env steps / s | CPU-ms per env step: '
        'main process / its children |')
  print('|---|---|---|---|')
  for label, (per_cpu, per_second, main_ms, children_ms) in medians.items():
    print(f'| {label} | {per_cpu:,.0f} | {per_second:,.0f} | '
          f'{main_ms:.3f} / {children_ms:.3f} |')
  if 'ours' not in medians:
    return
  peers = [label for label in medians if label not in ('ours', 'baseline')]
  best = max(peers, key=lambda label: medians[label][0]) if peers else None
  ours = medians['ours']
  for label in medians:
    if label != 'ours':
      print(f'ours / {label}: {ours[0] / medians[label][0]:.2f} per CPU-s, '
            f'{ours[1] / medians[label][1]:.2f} per s'
            f'{" (the peer at its best setting)" if label == best else ""}')


if __name__ == '__main__':
  app.run(main)
