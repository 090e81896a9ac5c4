r"""R2D2's learner step with and without XLA, and the shipped run's pace.

  .venv/bin/python benchmarks/r2d2_speed.py [--measure=learner,run]
      [--gin_file=gin/r2d2/stateless_cartpole.gin] [--repeats=5]

* `learner`: learner steps per second (and per CPU-second) of the gin
  file's agent on a batch of `r2d2.Settings.batch_size` random sequences,
  built twice in one process, `jit_compile` False and True, timed
  interleaved (`--steps` steps per repeat) after two warm-up steps; the
  medians and their ratio. Same weights, same batch (tests/test_r2d2_agent.py
  checks the two give the same numbers to float tolerance).
* `run`: `train/train_eval.py` on the gin file with `--run_env_steps`,
  with `r2d2.r2d2_agent_fn.jit_compile` False and True one after the other;
  env steps per second of the run (its progress lines after the first,
  i.e. without start-up) and learner steps per second.
"""

import os
import re
import statistics
import tempfile
import time

from absl import app
from absl import flags

import common

_MEASURE = flags.DEFINE_list('measure', ['learner', 'run'],
                             'learner, run.')
_GIN_FILE = flags.DEFINE_string('gin_file', 'gin/r2d2/stateless_cartpole.gin',
                                'An R2D2 gin file.')
_REPEATS = flags.DEFINE_integer('repeats', 5, 'Interleaved repeats.')
_STEPS = flags.DEFINE_integer('steps', 50, 'Learner steps per repeat.')
_RUN_ENV_STEPS = flags.DEFINE_integer('run_env_steps', 60_000,
                                      'Budget of each `run` measurement.')


# label -> (jit_compile, static_unroll) of `r2d2.r2d2_agent_fn`.
_VARIANTS = {
    'while loop': (False, False),
    'static unroll': (False, True),
    'XLA (while loop)': (True, False),
}
_BASELINE = 'while loop'


def measure_learner():
  import gin  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  import reverb  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tfa_explore.agents.r2d2 import agent as r2d2_agent  # pylint: disable=g-import-not-at-top
  from tfa_explore.experiments import runner  # pylint: disable=g-import-not-at-top
  from tfa_explore.experiments.r2d2 import builder as builder_lib  # pylint: disable=g-import-not-at-top
  from tfa_explore.experiments.r2d2 import settings as settings_lib  # pylint: disable=g-import-not-at-top
  from tfa_explore.testing import r2d2 as r2d2_testing  # pylint: disable=g-import-not-at-top

  runner.parse_gin([_GIN_FILE.value], [])
  settings = settings_lib.from_gin()
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
  batch = r2d2_agent.PrioritizedSequences(sequences, reverb.SampleInfo(
      key=tf.cast(tf.range(size), tf.uint64),
      probability=tf.fill([size], tf.constant(1.0 / size, tf.float64)),
      table_size=tf.fill([size], tf.constant(size, tf.int64)),
      priority=tf.ones([size], tf.float64),
      times_sampled=tf.ones([size], tf.int32)))
  trains = {label: tf.function(agent.train, autograph=False)
            for label, agent in agents.items()}
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
  for label in agents:
    if label != _BASELINE:
      print(f'ratio {label} / {_BASELINE}: '
            f'{medians[label][0] / medians[_BASELINE][0]:.2f} (per s), '
            f'{medians[label][1] / medians[_BASELINE][1]:.2f} (per CPU-s)',
            flush=True)


def _children_cpu_seconds():
  """CPU seconds of this process's waited-for children and theirs."""
  times = os.times()
  return times.children_user + times.children_system


def measure_run():
  workdir = tempfile.mkdtemp(prefix='r2d2_speed_')
  print(f'\n{_GIN_FILE.value}, {_RUN_ENV_STEPS.value:,} env steps, one '
        'machine (rates of the progress lines after the first)')
  print('| learner step | env steps / s | learner steps / s | wall s | '
        'CPU s (whole tree) |')
  print('|---|---|---|---|---|')
  for label, (jit_compile, static_unroll) in _VARIANTS.items():
    root_dir = os.path.join(workdir, label.replace(' ', '_'))
    command = common.train_eval_command(
        root_dir, _GIN_FILE.value,
        [f'NUM_ENV_STEPS = {_RUN_ENV_STEPS.value}',
         f'r2d2.r2d2_agent_fn.jit_compile = {jit_compile}',
         f'r2d2.r2d2_agent_fn.static_unroll = {static_unroll}',
         'r2d2.Settings.eval_interval = 1000000',
         'r2d2.Settings.num_eval_episodes = 1'])
    log_path = root_dir + '.log'
    cpu = _children_cpu_seconds()
    seconds, _ = common.run_logged(command, log_path)
    cpu = _children_cpu_seconds() - cpu
    with open(log_path) as f:
      log = f.read()
    env_rates = [float(r.replace(',', '')) for r in
                 re.findall(r'\| ([\d,.]+) env steps/s', log)]
    learner_rates = [float(r.replace(',', '')) for r in
                     re.findall(r'([\d,.]+) learner steps/s', log)]
    print(f'| {label} | {statistics.median(env_rates):,.0f} | '
          f'{statistics.median(learner_rates):.1f} | {seconds:.0f} | '
          f'{cpu:.0f} |', flush=True)


def main(argv):
  del argv
  print(f'load average before: {os.getloadavg()}', flush=True)
  if 'learner' in _MEASURE.value:
    measure_learner()
  if 'run' in _MEASURE.value:
    measure_run()
  print(f'load average after: {os.getloadavg()}', flush=True)


if __name__ == '__main__':
  app.run(main)
