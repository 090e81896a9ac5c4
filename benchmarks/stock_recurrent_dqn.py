r"""A stock TF-Agents recurrent DQN on an R2D2 gin file's task: the peer.

  .venv/bin/python benchmarks/stock_recurrent_dqn.py \
      [--gin_file=gin/r2d2/stateless_cartpole.gin] [--num_env_steps=80000] \
      [--tf_threads=1] [--gin_bindings=SEED=1 ...] \
      [--root_dir=DIR [--stop_return=450]]

TF-Agents' own pieces, as a TF-Agents user would assemble them:
`DqnAgent` + `QRnnNetwork` (the gin file's torso, LSTM and head sizes), the
gin file's envs (`r2d2.Settings.env_loader`, `num_actors x envs_per_actor`
of them) in a `BatchedPyEnvironment` under a `TFPyEnvironment`, a
`DynamicStepDriver` with the epsilon-greedy collect policy (epsilon 0.4,
R2D2's most random slot) into a `TFUniformReplayBuffer`, and training on
its `as_dataset` sequences. What R2D2 adds is absent: no burn-in or stored
state (sequences start from a zero state), no priorities, no n-step
targets, no value rescaling, one epsilon. Same as the gin file: batch size,
sequence length (burn-in + trace), replay ratio (`samples_per_insert`
sequences per inserted sequence of `replay_period` steps, so
`samples_per_insert / (batch_size * replay_period)` learner steps per env
step), replay capacity in env steps, learning rate, gamma, target period.

It prints progress lines in train_eval's format (`env steps N/M ... |
X env steps/s`) every `--log_interval` env steps, which
benchmarks/r2d2_throughput.py reads to time a steady window.

With `--root_dir`, the greedy policy is evaluated as R2D2's learner
evaluates its own, by the same `Evaluator`: the gin file's
`num_eval_episodes` episodes (one per eval env, seeded from `SEED` as
R2D2's) at every multiple of its `eval_interval` env steps and at the end,
`Metrics/*` at the env step in `<root_dir>/eval`, so
benchmarks/time_to_result.py reads both agents' evaluations alike.
`--stop_return` ends the run at the first evaluation that reaches it.
Without `--root_dir` nothing is evaluated: a timed window stays pure
collection and training.
"""

import os
import time

from absl import app
from absl import flags

import stock_agents  # benchmarks/stock_agents.py, next to this script.

_GIN_FILE = flags.DEFINE_string('gin_file', 'gin/r2d2/stateless_cartpole.gin',
                                'An R2D2 gin file.')
_NUM_ENV_STEPS = flags.DEFINE_integer('num_env_steps', 80_000,
                                      'Env steps to collect.')
_LOG_INTERVAL = flags.DEFINE_integer('log_interval', 10_000,
                                     'A progress line every this many.')
_TF_THREADS = flags.DEFINE_integer(
    'tf_threads', None, 'TF intra- and inter-op threads (default: TF\'s).')
_GIN_BINDINGS = flags.DEFINE_multi_string(
    'gin_bindings', [], "Gin bindings after the file, e.g. 'SEED=1'.")
_ROOT_DIR = flags.DEFINE_string(
    'root_dir', None, 'If set, greedy evaluations, written to <root_dir>/eval.')
_STOP_RETURN = flags.DEFINE_float(
    'stop_return', None, 'With --root_dir: stop after the first evaluation '
    'whose average return is at least this.')


def main(argv):
  del argv
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tf_agents.drivers import dynamic_step_driver  # pylint: disable=g-import-not-at-top
  from tf_agents.environments import batched_py_environment  # pylint: disable=g-import-not-at-top
  from tf_agents.environments import tf_py_environment  # pylint: disable=g-import-not-at-top
  from tf_agents.replay_buffers import tf_uniform_replay_buffer  # pylint: disable=g-import-not-at-top
  from tf_agents.utils import common as tfa_common  # pylint: disable=g-import-not-at-top
  from tfa_explore.environments import batched  # pylint: disable=g-import-not-at-top
  from tfa_explore.experiments import evaluation  # pylint: disable=g-import-not-at-top
  from tfa_explore.experiments import run_kit  # pylint: disable=g-import-not-at-top
  from tfa_explore import config  # pylint: disable=g-import-not-at-top
  from tfa_explore.experiments.r2d2 import settings as r2d2_settings  # pylint: disable=g-import-not-at-top

  run_kit.set_tf_threads(_TF_THREADS.value)
  config.parse_gin([_GIN_FILE.value], _GIN_BINDINGS.value)
  settings = r2d2_settings.settings_from_gin()

  sequence = stock_agents.agent_setting('sequence_config')
  sequence_length = sequence.burn_in_steps + sequence.trace_length
  num_envs = settings.num_actors * settings.envs_per_actor
  tf.random.set_seed(settings.seed)
  environment = tf_py_environment.TFPyEnvironment(
      batched_py_environment.BatchedPyEnvironment(
          [settings.env_loader(seed=s)
           for s in batched.env_seeds(settings.seed, num_envs)],
          multithreading=False))
  train_step = tf.Variable(0, dtype=tf.int64)
  agent = stock_agents.recurrent_dqn_agent(
      environment.time_step_spec(), environment.action_spec(), train_step)
  capacity_steps = settings.replay_capacity * sequence.replay_period
  replay_buffer = tf_uniform_replay_buffer.TFUniformReplayBuffer(
      agent.collect_data_spec, batch_size=num_envs,
      max_length=max(capacity_steps // num_envs, sequence_length))
  # One iteration: a sequence's worth of steps per env, then the learner
  # steps the gin file's replay ratio gives them.
  steps_per_iteration = num_envs * sequence.replay_period
  learner_steps = max(1, round(
      steps_per_iteration * settings.samples_per_insert /
      (settings.batch_size * sequence.replay_period)))
  driver = dynamic_step_driver.DynamicStepDriver(
      environment, agent.collect_policy, observers=[replay_buffer.add_batch],
      num_steps=steps_per_iteration)
  collect = tfa_common.function(driver.run, autograph=True)
  train = tfa_common.function(agent.train, autograph=False)
  dataset = replay_buffer.as_dataset(
      sample_batch_size=settings.batch_size, num_steps=sequence_length,
      num_parallel_calls=2).prefetch(2)
  iterator = iter(dataset)
  evaluator = last_eval = None
  if _ROOT_DIR.value:
    evaluator = evaluation.Evaluator(
        agent.policy, settings.env_loader, settings.num_eval_episodes,
        settings.seed, tf.summary.create_file_writer(
            os.path.join(_ROOT_DIR.value, run_kit.EVAL_DIR)))

  time_step = environment.reset()
  policy_state = agent.collect_policy.get_initial_state(num_envs)
  env_steps = 0
  warm_up = settings.min_size_to_sample * sequence.replay_period
  start = last_log_time = time.monotonic()
  last_log_steps = 0
  print(f'Stock recurrent DQN: {num_envs} envs, {learner_steps} learner '
        f'steps of {settings.batch_size} x {sequence_length} per '
        f'{steps_per_iteration} env steps (threads: '
        f'{_TF_THREADS.value or "TF default"}).', flush=True)
  # CPU seconds of this process in collection and in sampling + training
  # since the last progress line.
  collect_cpu = train_cpu = 0.0
  last_log_train_steps = 0
  while env_steps < _NUM_ENV_STEPS.value:
    cpu = time.process_time()
    time_step, policy_state = collect(time_step, policy_state)
    collect_cpu += time.process_time() - cpu
    previous = env_steps
    env_steps += steps_per_iteration
    if env_steps >= warm_up:
      cpu = time.process_time()
      for _ in range(learner_steps):
        experience, _ = next(iterator)
        train(experience)
      train_cpu += time.process_time() - cpu
    if env_steps // _LOG_INTERVAL.value > previous // _LOG_INTERVAL.value:
      now = time.monotonic()
      rate = (env_steps - last_log_steps) / max(now - last_log_time, 1e-9)
      new_train_steps = int(train_step) - last_log_train_steps
      print(f'env steps {env_steps:,}/{_NUM_ENV_STEPS.value:,} | '
            f'{rate:,.0f} env steps/s | learner steps {int(train_step):,} '
            f'| {now - start:.0f} s | CPU-ms per env step in collection '
            f'{1000 * collect_cpu / (env_steps - last_log_steps):.3f}, per '
            f'learner step in sampling + training '
            f'{1000 * train_cpu / max(new_train_steps, 1):.2f}', flush=True)
      last_log_time, last_log_steps = now, env_steps
      last_log_train_steps = int(train_step)
      collect_cpu = train_cpu = 0.0
    if evaluator is not None and run_kit.crossed(previous, env_steps,
                                                 settings.eval_interval):
      last_eval = evaluator(env_steps)
      if (_STOP_RETURN.value is not None and
          last_eval['AverageReturn'] >= _STOP_RETURN.value):
        break
  # As R2D2's learner: a last evaluation at the final env step.
  if evaluator is not None and (last_eval is None or
                                last_eval['EnvironmentSteps'] != env_steps):
    evaluator(env_steps)
  if evaluator is not None:
    evaluator.close()


if __name__ == '__main__':
  app.run(main)
