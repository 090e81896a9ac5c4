"""What a trained RND-PPO MiniGrid run's policy does and what its RND pays.

Restores the newest checkpoint of a run (its gin file and bindings rebuild
the agent), then steps one env for `--num_steps` under the run's collect
policy and under a uniform random policy. For each action it prints how
often it is taken, how often it changes the observation, and the mean
normalised intrinsic reward of the next observation (the reward the agent
was trained on, with the run's final normalisers); per episode the
distinct cells visited and the successes.

    .venv/bin/python benchmarks/intrinsic_readout.py \\
        --root_dir=runs/scout/doorkey8x8/rnd_ppo/seed0 \\
        --gin_file=gin/rnd_ppo/minigrid_doorkey5x5.gin \\
        --gin_bindings="minigrid.load.env_id='MiniGrid-DoorKey-8x8-v0'"
"""

import argparse
import collections

import numpy as np
import tensorflow as tf
from tf_agents.environments import tf_py_environment

from tfa_explore.environments import minigrid
from tfa_explore.experiments import rnd_ppo
from tfa_explore.experiments import runner

ACTIONS = ('left', 'right', 'forward', 'pickup', 'drop', 'toggle', 'done')


def restore_agent(root_dir, env):
  train_step = tf.Variable(0, dtype=tf.int64)
  agent = rnd_ppo.rnd_ppo_agent(env.time_step_spec(), env.action_spec(),
                                train_step_counter=train_step)
  path = tf.train.latest_checkpoint(f'{root_dir}/checkpoints')
  if path is None:
    raise SystemExit(f'No checkpoint under {root_dir}/checkpoints.')
  tf.train.Checkpoint(agent=agent).restore(path).expect_partial()
  return agent, path, int(train_step)


def readout(agent, py_env, env, num_steps, policy, seed):
  """Per-action counts, observation changes and r_i; per-episode cells."""
  rng = np.random.default_rng(seed)
  taken = collections.Counter()
  changed = collections.Counter()
  rewards = collections.defaultdict(list)
  cells, episode_cells, successes = [], set(), 0
  time_step = env.reset()
  state = agent.collect_policy.get_initial_state(1)
  for _ in range(num_steps):
    if policy is None:
      action = tf.constant([rng.integers(len(ACTIONS))], tf.int64)
    else:
      policy_step = policy.action(time_step, state)
      action, state = policy_step.action, policy_step.state
    previous = time_step.observation
    time_step = env.step(action)
    a = int(action.numpy()[0])
    taken[a] += 1
    changed[a] += int(tf.reduce_any(previous != time_step.observation))
    reward = agent.intrinsic_reward.rewards(time_step.observation[:, None])
    rewards[a].append(float(reward.normalized.numpy()[0, 0]))
    episode_cells.add(tuple(py_env.last_info.get('agent_pos', ())))
    if time_step.is_last():
      successes += int(float(time_step.reward.numpy()[0]) > 0)
      cells.append(len(episode_cells))
      episode_cells = set()
  return taken, changed, rewards, cells, successes


def main():
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--root_dir', required=True)
  parser.add_argument('--gin_file', required=True)
  parser.add_argument('--gin_bindings', action='append', default=[])
  parser.add_argument('--num_steps', type=int, default=3200)
  parser.add_argument('--seed', type=int, default=11)
  args = parser.parse_args()
  tf.random.set_seed(args.seed)  # the collect policy's sampling
  runner.parse_gin([args.gin_file], args.gin_bindings)
  py_env = minigrid.load(seed=args.seed)
  env = tf_py_environment.TFPyEnvironment(py_env)
  agent, path, train_step = restore_agent(args.root_dir, env)
  print(f'{path}: train step {train_step}, {args.num_steps} env steps each')
  for name, policy in (('collect policy', agent.collect_policy),
                       ('uniform random', None)):
    taken, changed, rewards, cells, successes = readout(
        agent, py_env, env, args.num_steps, policy, args.seed)
    total = sum(taken.values())
    print(f'\n{name}: {len(cells)} episodes ended, {successes} at the goal, '
          f'{np.mean(cells) if cells else float("nan"):.1f} cells per episode')
    print('| action | share | observation changed | mean normalised r_i |')
    print('|---|---|---|---|')
    for a in sorted(taken):
      print(f'| {ACTIONS[a]} | {taken[a] / total:.2f} | '
            f'{changed[a] / taken[a]:.2f} | {np.mean(rewards[a]):.4f} |')


if __name__ == '__main__':
  main()
