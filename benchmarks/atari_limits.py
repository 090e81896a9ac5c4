"""RND-PPO on Atari: the environment limit and the compute limit of this CPU.

    .venv/bin/python benchmarks/atari_limits.py   # about 3 minutes

* Environment limit: 8 ALE envs as `gin/ppo/montezuma.gin` makes them
  (`atari.load`: Montezuma's Revenge, sticky actions 0.25, 4-frame skip
  with max-pool, 84x84 grey, stack of 4), stepped with uniform random
  actions, in one process (`GymnasiumBatch`) and one subprocess per env
  (`ParallelPyEnvironment`, what the gin file runs). Agent steps per
  second and per CPU-second of the whole process tree (env subprocesses
  included).
* Compute limit: the floating-point operations one agent step costs
  `gin/rnd_ppo/montezuma.gin`'s networks in our loop, counted by
  TensorFlow's profiler on each network's forward graph (a backward pass
  counted as twice its forward, the usual estimate):
    collection: the policy, forward;
    preprocessing: both value heads (their torso again), RND target +
      predictor forward (the reward), target forward once more (the
      predictor's training targets);
    training: `num_epochs` x (policy and heads forward + backward,
      predictor forward + backward on the whole minibatch: the 25% mask
      is a weight on its loss).
  divided into this CPU's measured throughput on the same networks
  (forward + backward of policy and heads on 256 frames, TensorFlow's own
  thread pools as the gin file): the agent steps per second the networks
  allow with the CPU doing nothing else.
"""

import argparse
import functools
import os
import time

import numpy as np

import common  # benchmarks/common.py, next to this script.

REPO_ROOT = common.REPO_ROOT
RND_GIN = os.path.join(REPO_ROOT, 'gin', 'rnd_ppo', 'montezuma.gin')


def environment_limit(num_envs, num_batched_steps, parallel):
  """(agent steps / s, agent steps / CPU-s) of random actions."""
  from tfa_explore.environments import atari  # pylint: disable=g-import-not-at-top
  from tfa_explore.environments import batched  # pylint: disable=g-import-not-at-top
  environment = batched.make_batched_env(
      functools.partial(atari.load, 'ALE/MontezumaRevenge-v5'), num_envs,
      seed=0, parallel=parallel)
  rng = np.random.default_rng(0)
  num_actions = int(environment.action_spec().maximum) + 1
  environment.reset()
  for _ in range(20):  # subprocesses started, first resets done
    environment.step(rng.integers(num_actions, size=num_envs))
  cpu, wall = common.tree_cpu_seconds(), time.monotonic()
  for _ in range(num_batched_steps):
    environment.step(rng.integers(num_actions, size=num_envs))
  cpu, wall = common.tree_cpu_seconds() - cpu, time.monotonic() - wall
  environment.close()
  steps = num_batched_steps * num_envs
  return steps / wall, steps / cpu


def forward_flops(function, *specs):
  """Float operations of one call of `function` on inputs of `specs`."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  concrete = tf.function(function).get_concrete_function(*specs)
  options = tf.compat.v1.profiler.ProfileOptionBuilder.float_operation()
  options['output'] = 'none'
  return tf.compat.v1.profiler.profile(
      graph=concrete.graph, options=options).total_float_ops


def compute_limit(batch_size, repeats):
  """FLOPs per agent step, measured FLOP/s, and their ratio."""
  import gin  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tf_agents.specs import tensor_spec  # pylint: disable=g-import-not-at-top
  from tfa_explore.environments import atari  # pylint: disable=g-import-not-at-top
  from tfa_explore.experiments import ppo  # pylint: disable=g-import-not-at-top
  from tfa_explore.networks import shared_torso  # pylint: disable=g-import-not-at-top
  from tfa_explore import config  # pylint: disable=g-import-not-at-top

  config.parse_gin([RND_GIN], [])
  environment = atari.load('ALE/MontezumaRevenge-v5', seed=0)
  agent = ppo.ppo_clip_agent(
      time_step_spec=tensor_spec.from_spec(environment.time_step_spec()),
      action_spec=tensor_spec.from_spec(environment.action_spec()),
      train_step_counter=tf.Variable(0, dtype=tf.int64))
  num_epochs = gin.query_parameter('ppo.ppo_clip_agent.num_epochs')
  observation_spec = agent.time_step_spec.observation
  frames = tf.TensorSpec([1] + observation_spec.shape.as_list(),
                         observation_spec.dtype)
  step_types = tf.TensorSpec([1], tf.int32)
  component = agent.intrinsic_reward
  actor_net, value_net = agent.actor_net, agent._value_net  # pylint: disable=protected-access

  def policy_and_heads_of(observations, step_types, training=False):
    return shared_torso.actor_and_value(actor_net, value_net, observations,
                                        step_types, training=training)

  policy_and_heads = forward_flops(
      lambda o, s: policy_and_heads_of(o, s)[1], frames, step_types)
  policy_only = forward_flops(lambda o, s: actor_net(o, s)[0].logits, frames,
                              step_types)
  heads_only = forward_flops(lambda o, s: value_net(o, s)[0], frames,
                             step_types)
  inputs = tf.TensorSpec([1] + component.inputs(
      tf.zeros(frames.shape, frames.dtype)).shape.as_list()[1:], tf.float32)
  target = forward_flops(lambda x: component.target_net(x)[0], inputs)
  predictor = forward_flops(lambda x: component.predictor_net(x)[0], inputs)
  per_step = {
      'collection: policy forward': policy_only,
      'preprocessing: value heads forward, RND target + predictor '
      'forward, target again': heads_only + 2 * target + predictor,
      f'training: {num_epochs} epochs x 3 x (policy and heads + predictor)':
          num_epochs * 3 * (policy_and_heads + predictor),
  }
  total = sum(per_step.values())

  # This CPU's throughput on the policy network's forward + backward.
  batch = tf.constant(np.random.default_rng(0).integers(
      0, 255, size=[batch_size] + observation_spec.shape.as_list(),
      dtype=np.uint8))
  batch_step_types = tf.zeros([batch_size], tf.int32)
  variables = agent._variables_to_train()  # pylint: disable=protected-access

  @tf.function
  def forward_backward():
    with tf.GradientTape() as tape:
      distribution, values = policy_and_heads_of(batch, batch_step_types,
                                                 training=True)
      loss = (tf.reduce_sum(distribution.logits) +
              tf.reduce_sum(values['extrinsic']) +
              tf.reduce_sum(values['intrinsic']))
    return tape.gradient(loss, variables)

  forward_backward()
  seconds = []
  for _ in range(repeats):
    start = time.monotonic()
    forward_backward()
    seconds.append(time.monotonic() - start)
  flops_per_second = 3 * policy_and_heads * batch_size / min(seconds)
  return per_step, total, flops_per_second


def main():
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--num_envs', type=int, default=8)
  parser.add_argument('--batched_steps', type=int, default=500)
  parser.add_argument('--batch_size', type=int, default=256)
  parser.add_argument('--repeats', type=int, default=10)
  args = parser.parse_args()
  from tfa_explore.environments import batched  # pylint: disable=g-import-not-at-top
  batched.enable_multiprocessing()
  print(f'CPU: {common.cpu_description()}', flush=True)
  print(f'load average before: {os.getloadavg()}; {os.cpu_count()} CPUs\n',
        flush=True)

  print(f'Environment limit: {args.num_envs} Montezuma envs (gin/ppo/'
        f'montezuma.gin protocol), random actions, {args.batched_steps} '
        'batched steps')
  print('| envs stepped | agent steps / s | agent steps / CPU-s (process '
        'tree) |')
  print('|---|---|---|')
  for label, parallel in (('in one process (GymnasiumBatch)', False),
                          ('one subprocess each (the gin file)', True)):
    per_second, per_cpu_second = environment_limit(
        args.num_envs, args.batched_steps, parallel)
    print(f'| {label} | {per_second:,.0f} | {per_cpu_second:,.0f} |',
          flush=True)

  per_step, total, flops_per_second = compute_limit(args.batch_size,
                                                    args.repeats)
  print('\nCompute limit: gin/rnd_ppo/montezuma.gin networks, FLOPs per '
        'agent step')
  print('| part | MFLOPs per agent step |')
  print('|---|---|')
  for part, flops in per_step.items():
    print(f'| {part} | {flops / 1e6:,.1f} |')
  print(f'| total | {total / 1e6:,.1f} |')
  print(f'\nmeasured: {flops_per_second / 1e9:,.1f} GFLOP/s (policy and '
        f'heads forward + backward, batch {args.batch_size}, best of '
        f'{args.repeats})')
  print(f'compute limit: {flops_per_second / total:,.0f} agent steps per '
        'second with both cores on the networks alone')
  print(f'\nload average after: {os.getloadavg()}', flush=True)


if __name__ == '__main__':
  main()
