r"""R2D2's learner step and the shipped run's pace, three ways.

  .venv/bin/python benchmarks/r2d2_speed.py [--measure=learner,run,layout]
      [--gin_file=gin/r2d2/stateless_cartpole.gin] [--repeats=5]
      [--run_repeats=2] [--layouts=2x8,1x16]

The three (`_VARIANTS`, bindings of `r2d2.r2d2_agent_fn`): the LSTM as a
`tf.while_loop` (`static_unroll=False`, the unroll before 5dc5d09), unrolled
step by step (the default), and the learner's loss under XLA
(`jit_compile=True`, its unroll the while loop, the actors' step by step).

* `learner`: learner steps per second (and per CPU-second) of the gin
  file's agent on a batch of `r2d2.Settings.batch_size` random sequences,
  one agent per variant in one process, timed interleaved (`--steps`
  steps per repeat) after two warm-up steps; medians and ratios to the
  while loop. Same weights, same batch (tests check that the variants
  give the same numbers to float tolerance). Beside them, the peer's
  learner step: TF-Agents' `DqnAgent` + `QRnnNetwork` of the same sizes
  (`stock_agents.py`) on a batch of the same shape.
* `run`: `train/train_eval.py` on the gin file with `--run_env_steps`
  (no evals or checkpoints in between), each variant `--run_repeats`
  times, interleaved; env steps and learner steps per second (the
  median of the progress lines after the first, which holds start-up)
  and the CPU seconds of the whole process tree.
* `layout`: the same runs as `run`, each with the gin file's learner and
  one actor layout of --layouts, `<num_actors>x<envs_per_actor>[:thread]`
  (actor processes, or threads of the learner's process; the same 16
  epsilon slots and env seeds when the product is 16), interleaved.
* `processes`: one run of the gin file as shipped; the cores each of its
  processes (learner with the Reverb server, actors) used over a window
  (`--window_start`, `--window`). Needs psutil (the `bench` extra).
"""

import os
import re
import statistics
import subprocess
import tempfile
import time

from absl import app
from absl import flags

import common
import stock_agents

_MEASURE = flags.DEFINE_list('measure', ['learner', 'run'],
                             'learner, run, processes.')
_GIN_FILE = flags.DEFINE_string('gin_file', 'gin/r2d2/stateless_cartpole.gin',
                                'An R2D2 gin file.')
_REPEATS = flags.DEFINE_integer('repeats', 5, 'Interleaved repeats.')
_STEPS = flags.DEFINE_integer('steps', 50, 'Learner steps per repeat.')
_RUN_ENV_STEPS = flags.DEFINE_integer('run_env_steps', 60_000,
                                      'Budget of each `run` measurement.')
_WINDOW_START = flags.DEFINE_integer(
    'window_start', 45, '`processes`: seconds after launch the window opens.')
_WINDOW = flags.DEFINE_integer('window', 30,
                               '`processes`: the window, in seconds.')
_LAYOUTS = flags.DEFINE_list(
    'layouts', ['2x8', '1x16'],
    '`layout`: <num_actors>x<envs_per_actor>[:thread] actor layouts to '
    'compare (actor processes unless :thread).')
_RUN_REPEATS = flags.DEFINE_integer('run_repeats', 2,
                                    'Interleaved runs of each variant.')


# label -> (jit_compile, static_unroll) of `r2d2.r2d2_agent_fn`.
_VARIANTS = {
    'while loop': (False, False),
    'static unroll': (False, True),
    'XLA': (True, True),
}
_BASELINE = 'while loop'
_STOCK = 'stock DqnAgent + QRnnNetwork'


def measure_learner():
  import gin  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  import reverb  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tfa_explore.agents.r2d2 import inputs as r2d2_inputs  # pylint: disable=g-import-not-at-top
  from tfa_explore import config  # pylint: disable=g-import-not-at-top
  from tfa_explore.experiments.r2d2 import builder as builder_lib  # pylint: disable=g-import-not-at-top
  from tfa_explore.experiments.r2d2 import settings as r2d2_settings  # pylint: disable=g-import-not-at-top
  from tfa_explore.testing import r2d2 as r2d2_testing  # pylint: disable=g-import-not-at-top

  config.parse_gin([_GIN_FILE.value], [])
  settings = r2d2_settings.settings_from_gin()
  agents = {}
  for label, (jit_compile, static_unroll) in _VARIANTS.items():
    with gin.unlock_config():
      gin.bind_parameter('r2d2.r2d2_agent_fn.jit_compile', jit_compile)
      gin.bind_parameter('r2d2.r2d2_agent_fn.static_unroll', static_unroll)
    _, agents[label] = builder_lib.Builder(settings).make_agent()
  plain = agents[_BASELINE]
  for agent in agents.values():
    for a, b in zip(plain.q_network.variables, agent.q_network.variables):
      b.assign(a)
  length = plain.sequence_config.sequence_length
  step_types = np.ones((settings.batch_size, length), np.int32)
  step_types[:, 0] = 0
  sequences = r2d2_testing.random_sequences(plain, step_types)
  size = settings.batch_size
  batch = r2d2_inputs.PrioritizedSequences(sequences, reverb.SampleInfo(
      key=tf.cast(tf.range(size), tf.uint64),
      probability=tf.fill([size], tf.constant(1.0 / size, tf.float64)),
      table_size=tf.fill([size], tf.constant(size, tf.int64)),
      priority=tf.ones([size], tf.float64),
      times_sampled=tf.ones([size], tf.int32)))
  trains = {label: tf.function(agent.train, autograph=False)
            for label, agent in agents.items()}
  # The peer's step: TF-Agents' DqnAgent + QRnnNetwork of the same sizes
  # on a batch of the same shape (no burn-in, priorities or rescaling).
  stock = stock_agents.recurrent_dqn_agent(
      plain.time_step_spec, plain.action_spec,
      tf.Variable(0, dtype=tf.int64))
  stock_batch = r2d2_testing.random_sequences(stock, step_types)
  stock_train = tf.function(stock.train, autograph=False)
  trains[_STOCK] = lambda _: stock_train(stock_batch)
  for train in trains.values():
    for _ in range(2):
      train(batch)
  results = {label: [] for label in trains}
  for _ in range(_REPEATS.value):
    for label, train in trains.items():
      wall, cpu = time.perf_counter(), time.process_time()
      for _ in range(_STEPS.value):
        train(batch)
      results[label].append((_STEPS.value / (time.perf_counter() - wall),
                             _STEPS.value / (time.process_time() - cpu)))
  print(f'\nR2D2 learner steps at batch {settings.batch_size}, '
        f'{_GIN_FILE.value} (median of {_REPEATS.value} x {_STEPS.value})')
  print('| learner step | steps / s | steps / CPU-s |')
  print('|---|---|---|')
  medians = {}
  for label, values in results.items():
    medians[label] = (statistics.median(v[0] for v in values),
                      statistics.median(v[1] for v in values))
    print(f'| {label} | {medians[label][0]:.1f} | {medians[label][1]:.1f} |')
  for label in trains:
    if label != _BASELINE:
      print(f'ratio {label} / {_BASELINE}: '
            f'{medians[label][0] / medians[_BASELINE][0]:.2f} (per s), '
            f'{medians[label][1] / medians[_BASELINE][1]:.2f} (per CPU-s)',
            flush=True)


def _children_cpu_seconds():
  """CPU seconds of this process's waited-for children and theirs."""
  times = os.times()
  return times.children_user + times.children_system


def _run_command(root_dir, bindings):
  """train_eval.py on the gin file for `--run_env_steps`, without evals or
  checkpoints in between, plus `bindings`."""
  return common.train_eval_command(
      root_dir, _GIN_FILE.value,
      [f'NUM_ENV_STEPS = {_RUN_ENV_STEPS.value}',
       'r2d2.Settings.eval_interval = 1000000',
       'r2d2.Settings.checkpoint_interval = 1000000',
       'r2d2.Settings.num_eval_episodes = 1'] + list(bindings))


def _variant_bindings():
  """label -> gin bindings of the `run` measure."""
  return {label: [f'r2d2.r2d2_agent_fn.jit_compile = {jit_compile}',
                  f'r2d2.r2d2_agent_fn.static_unroll = {static_unroll}']
          for label, (jit_compile, static_unroll) in _VARIANTS.items()}


def _layout_bindings():
  """label -> gin bindings of the `layout` measure."""
  variants = {}
  for layout in _LAYOUTS.value:
    shape, _, mode = layout.partition(':')
    mode = mode or 'process'
    try:
      num_actors, envs = (int(n) for n in shape.split('x'))
    except ValueError as e:
      raise app.UsageError(f'--layouts: {layout!r} is not '
                           '<num_actors>x<envs_per_actor>[:mode]') from e
    variants[f'{num_actors} x {envs} envs, actor {mode}'] = [
        f'r2d2.Settings.num_actors = {num_actors}',
        f'r2d2.Settings.envs_per_actor = {envs}',
        f"r2d2.Settings.actor_mode = '{mode}'"]
  return variants


def measure_run(variants, baseline):
  """Interleaved runs of each variant (label -> gin bindings)."""
  workdir = tempfile.mkdtemp(prefix='r2d2_speed_')
  runs = {label: [] for label in variants}
  for repeat in range(_RUN_REPEATS.value):
    for label, bindings in variants.items():
      root_dir = os.path.join(workdir, f'{label.replace(" ", "_")}_{repeat}')
      command = _run_command(root_dir, bindings)
      log_path = root_dir + '.log'
      cpu = _children_cpu_seconds()
      seconds, _ = common.run_logged(command, log_path)
      cpu = _children_cpu_seconds() - cpu
      with open(log_path) as f:
        log = f.read()
      # The first progress line holds start-up and the replay's warm-up.
      env_rates = [float(r.replace(',', '')) for r in
                   re.findall(r'\| ([\d,.]+) env steps/s', log)][1:]
      learner_rates = [float(r.replace(',', '')) for r in
                       re.findall(r'([\d,.]+) learner steps/s', log)][1:]
      runs[label].append((statistics.median(env_rates),
                          statistics.median(learner_rates), seconds, cpu))
      print(f'  {label}, repeat {repeat}: {runs[label][-1][0]:,.0f} env '
            f'steps/s, {runs[label][-1][1]:.1f} learner steps/s, '
            f'{seconds:.0f} s, {cpu:.0f} CPU-s', flush=True)
  print(f'\n{_GIN_FILE.value}, {_RUN_ENV_STEPS.value:,} env steps, one '
        'machine (median of the progress lines after the first; median of '
        f'{_RUN_REPEATS.value} interleaved runs)')
  print('| learner step | env steps / s | learner steps / s | wall s | '
        'CPU s (whole tree) |')
  print('|---|---|---|---|---|')
  medians = {}
  for label, values in runs.items():
    medians[label] = [statistics.median(v[k] for v in values)
                      for k in range(4)]
    env, learner, seconds, cpu = medians[label]
    print(f'| {label} | {env:,.0f} | {learner:.1f} | {seconds:.0f} | '
          f'{cpu:.0f} |')
  for label in runs:
    if label != baseline:
      print(f'ratio {label} / {baseline}: env steps/s '
            f'{medians[label][0] / medians[baseline][0]:.2f}, learner '
            f'steps/s {medians[label][1] / medians[baseline][1]:.2f}, CPU s '
            f'{medians[label][3] / medians[baseline][3]:.2f}',
            flush=True)


def measure_processes():
  """Cores each process of the shipped run uses over a window."""
  import psutil  # pylint: disable=g-import-not-at-top
  root_dir = tempfile.mkdtemp(prefix='r2d2_processes_')
  command = _run_command(root_dir, [])
  print(' '.join(command), flush=True)
  with open(root_dir + '.log', 'w') as log:
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                               cwd=common.REPO_ROOT)
    time.sleep(_WINDOW_START.value)

    def cpu_by_process():
      tree = psutil.Process(process.pid)
      times = {}
      for p in [tree] + tree.children(recursive=True):
        try:
          cpu = p.cpu_times()
          if p.pid == process.pid:
            name = 'train_eval.py: learner, Reverb server'
          elif any('multiprocessing-fork' in arg for arg in p.cmdline()):
            name = 'actor process'
          else:
            name = ' '.join(p.cmdline())[-60:]
          times[p.pid] = (name, cpu.user + cpu.system)
        except psutil.NoSuchProcess:
          pass
      return times

    before = cpu_by_process()
    time.sleep(_WINDOW.value)
    after = cpu_by_process()
    process.wait()
  print(f'\n{_GIN_FILE.value}: cores used by each process from '
        f'{_WINDOW_START.value} s to {_WINDOW_START.value + _WINDOW.value} s '
        'after launch')
  print('| process | cores |')
  print('|---|---|')
  for pid, (name, cpu) in after.items():
    if pid in before:
      cores = (cpu - before[pid][1]) / _WINDOW.value
      if cores >= 0.01:
        print(f'| {pid} {name} | {cores:.2f} |')


def main(argv):
  del argv
  print(f'CPU: {common.cpu_description()}', flush=True)
  print(f'load average before: {os.getloadavg()}', flush=True)
  if 'learner' in _MEASURE.value:
    measure_learner()
  if 'run' in _MEASURE.value:
    measure_run(_variant_bindings(), _BASELINE)
  if 'layout' in _MEASURE.value:
    layouts = _layout_bindings()
    measure_run(layouts, next(iter(layouts)))
  if 'processes' in _MEASURE.value:
    measure_processes()
  print(f'load average after: {os.getloadavg()}', flush=True)


if __name__ == '__main__':
  app.run(main)
