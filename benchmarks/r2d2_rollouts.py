r"""What an R2D2/R2D3 checkpoint does when it acts: success, actions, Q values.

  python benchmarks/r2d2_rollouts.py --run_dir=runs/r2d3_benchmark/r2d3_seed0 \
      [--checkpoint=ckpt-300035] [--episodes=20] [--epsilons=0,0.01,0.05] \
      [--q_steps=0,1,2,10,50,200,600] [--q_episodes=3]

Rebuilds the run's agent from its `operative_config.gin`, restores the
latest (or the given) checkpoint and acts in the run's environment, seeded
like train_eval's eval envs (seed + 1000003):

* per epsilon: `--episodes` epsilon-greedy episodes (the greedy action,
  replaced by a uniform one with probability epsilon; the network's
  previous-action input is the action taken), printing the success rate
  (return > 0) and mean episode length;
* for the first `--q_episodes` greedy episodes: the action counts, the
  last observation (how the episode ended) and the online Q values
  (rescaled, and the max after h^-1; with an intrinsic head also Q_I
  after h^-1) at the `--q_steps` steps, which
  shows whether a failing episode repeats one action and what the network
  thinks that is worth.

benchmarks/results/r2d3/history_2026-11-23_doorkey8x8.md uses it on the
benchmark's seed 0.
"""

import collections
import os

from absl import app
from absl import flags
import gin
import numpy as np
import tensorflow as tf
# Registers the distribution TypeSpecs the agent's policies refer to.
import tensorflow_probability  # pylint: disable=unused-import
from tf_agents.specs import tensor_spec

from tfa_explore.agents.r2d2 import inputs as r2d2_inputs
from tfa_explore.agents.r2d2 import losses
from tfa_explore.experiments import evaluation
from tfa_explore.experiments import checkpointing
from tfa_explore.experiments import run_kit
from tfa_explore import config  # pylint: disable=unused-import
from tfa_explore.networks import recurrent_dueling_q_network as rdqn

RUN_DIR = flags.DEFINE_string('run_dir', None, 'A train_eval root_dir.',
                               required=True)
CHECKPOINT = flags.DEFINE_string(
    'checkpoint', None, 'Checkpoint name in run_dir/checkpoints (default: '
    'the latest).')
_EPISODES = flags.DEFINE_integer('episodes', 20, 'Episodes per epsilon.')
_EPSILONS = flags.DEFINE_list('epsilons', ['0', '0.01', '0.05'],
                              'Exploration rates to act with.')
_Q_STEPS = flags.DEFINE_list('q_steps', ['0', '1', '2', '10', '50', '200',
                                         '600'], 'Steps whose Q to print.')
_Q_EPISODES = flags.DEFINE_integer('q_episodes', 3,
                                   'Greedy episodes with Q values printed.')


def restore_run(run_dir, checkpoint_name, with_optimizer=False):
  """(agent, env) of the run, weights (and Adam's slots) from the checkpoint."""
  gin.parse_config_file(os.path.join(run_dir, run_kit.OPERATIVE_CONFIG),
                        skip_unknown=True)
  env_loader = gin.query_parameter('r2d2.Settings.env_loader')
  seed = gin.query_parameter('r2d2.Settings.seed')
  if isinstance(seed, gin.config.ConfigurableReference):  # %SEED
    seed = seed.scoped_configurable_fn()
  env = env_loader.scoped_configurable_fn(
      seed=seed + evaluation.EVAL_SEED_OFFSET)
  agent_fn = gin.query_parameter('r2d2.Settings.agent_fn')
  agent = agent_fn.scoped_configurable_fn(
      time_step_spec=tensor_spec.from_spec(env.time_step_spec()),
      action_spec=tensor_spec.from_spec(env.action_spec()),
      train_step_counter=tf.Variable(0, dtype=tf.int64))
  directory = os.path.join(run_dir, checkpointing.CHECKPOINT_DIR)
  path = (os.path.join(directory, checkpoint_name) if checkpoint_name
          else tf.train.latest_checkpoint(directory))
  if path is None:
    raise app.UsageError(f'No checkpoint in {directory}.')
  tf.train.Checkpoint(agent=agent).restore(path).expect_partial()
  if with_optimizer:
    # Adam's slots are restored when they are created, in the order the
    # learner creates them: the Q network's trainable variables.
    agent.optimizer.build(agent.q_network.trainable_variables)
  print(f'Restored {path}.')
  return agent, env


def network_step(network, time_step, prev_action, state):
  """(Q heads, next state) of the network on one env step, batch and time
  of 1, with the previous action and reward as the agent's inputs."""
  info = {r2d2_inputs.PREV_ACTION: np.array([[prev_action]]),
          r2d2_inputs.PREV_REWARD: np.array([[float(time_step.reward)]])}
  observation = tf.nest.map_structure(lambda x: np.asarray(x)[None, None],
                                      time_step.observation)
  inputs = tf.nest.map_structure(
      lambda x, spec: tf.cast(x, spec.dtype),
      r2d2_inputs.network_inputs(observation, info),
      network.input_tensor_spec)
  return network.q_heads(
      inputs, step_type=tf.constant([[int(time_step.step_type)]]),
      network_state=state)


def _episode(agent, env, epsilon, rng, q_steps=()):
  """(return, actions, {step: Q}) of one episode."""
  network = agent.q_network
  action_spec = env.action_spec()
  num_actions = int(action_spec.maximum - action_spec.minimum + 1)
  time_step = env.reset()
  state = network.get_initial_state(1)
  prev_action, episode_return, actions, q_at = 0, 0.0, [], {}
  while not time_step.is_last():
    heads, state = network_step(network, time_step, prev_action, state)
    q_values = heads[rdqn.EXTRINSIC].numpy()[0, 0]
    intrinsic_q = (heads[rdqn.INTRINSIC].numpy()[0, 0]
                   if rdqn.INTRINSIC in heads else None)
    if len(actions) in q_steps:
      q_at[len(actions)] = (q_values, intrinsic_q)
    action = int(np.argmax(q_values))
    if rng.random() < epsilon:
      action = int(rng.integers(num_actions))
    time_step = env.step(np.asarray(action + action_spec.minimum,
                                    action_spec.dtype))
    episode_return += float(time_step.reward)
    actions.append(action)
    prev_action = action
  return episode_return, actions, q_at


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  agent, env = restore_run(RUN_DIR.value, CHECKPOINT.value)
  rng = np.random.default_rng(0)
  q_steps = {int(step) for step in _Q_STEPS.value}
  for episode in range(_Q_EPISODES.value):
    episode_return, actions, q_at = _episode(agent, env, 0.0, rng, q_steps)
    final_observation = np.round(
        np.asarray(env.current_time_step().observation, np.float64), 3)
    print(f'greedy episode {episode}: length {len(actions)}, return '
          f'{episode_return:.2f}, actions '
          f'{dict(sorted(collections.Counter(actions).items()))}, final '
          f'observation {final_observation.tolist()}')
    for step, (q_values, intrinsic_q) in sorted(q_at.items()):
      raw_max = float(losses.inverse_value_rescale(
          tf.constant(q_values.max())))
      print(f'  step {step}: Q (rescaled) '
            f'{" ".join(f"{value:.3f}" for value in q_values)}, '
            f'max after h^-1 {raw_max:.3f}')
      if intrinsic_q is not None:
        raw = losses.inverse_value_rescale(tf.constant(intrinsic_q)).numpy()
        print(f'  step {step}: Q_I after h^-1 '
              f'{" ".join(f"{value:.2f}" for value in raw)} (max - min '
              f'{raw.max() - raw.min():.2f})')
  for epsilon in (float(value) for value in _EPSILONS.value):
    results = [_episode(agent, env, epsilon, rng)
               for _ in range(_EPISODES.value)]
    print(f'epsilon {epsilon}: success rate '
          f'{np.mean([r > 0 for r, _, _ in results]):.2f}, mean length '
          f'{np.mean([len(a) for _, a, _ in results]):.0f} over '
          f'{_EPISODES.value} episodes')


if __name__ == '__main__':
  app.run(main)
