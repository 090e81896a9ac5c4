r"""A stock TF-Agents recurrent DQN on an R2D2 gin file's task: the peer.

  .venv/bin/python benchmarks/stock_recurrent_dqn.py \
      [--gin_file=gin/r2d2/stateless_cartpole.gin] [--num_env_steps=80000] \
      [--tf_threads=1]

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
"""

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


def main(argv):
  del argv
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tf_agents.drivers import dynamic_step_driver  # pylint: disable=g-import-not-at-top
  from tf_agents.environments import batched_py_environment  # pylint: disable=g-import-not-at-top
  from tf_agents.environments import tf_py_environment  # pylint: disable=g-import-not-at-top
  from tf_agents.replay_buffers import tf_uniform_replay_buffer  # pylint: disable=g-import-not-at-top
  from tf_agents.utils import common as tfa_common  # pylint: disable=g-import-not-at-top
  from tfa_explore.environments import batched  # pylint: disable=g-import-not-at-top
  from tfa_explore.experiments import run_kit  # pylint: disable=g-import-not-at-top
  from tfa_explore.experiments import runner  # pylint: disable=g-import-not-at-top
  from tfa_explore.experiments.r2d2 import settings as settings_lib  # pylint: disable=g-import-not-at-top

  run_kit.set_tf_threads(_TF_THREADS.value)
  runner.parse_gin([_GIN_FILE.value], [])
  settings = settings_lib.from_gin()

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


if __name__ == '__main__':
  app.run(main)
