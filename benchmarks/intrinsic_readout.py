"""What a trained RND-PPO MiniGrid run's policy does and what its RND pays.

Restores the newest checkpoint of a run (its gin file and bindings rebuild
the agent), then steps one env for `--num_steps` under the run's collect
policy and under a uniform random policy. For each action it prints how
often it is taken, how often it changes the observation, how often its next observation was
already seen earlier in the episode (a repeat), and the mean normalised
intrinsic reward of the next observation (the reward the agent was trained
on, with the run's final normalisers); per episode the distinct cells
visited and the successes; the share of r_i paid on repeats.

Last, `--refit_steps` predictor steps on the collect policy's next
observations (one update's worth: epochs x minibatches, at the run's
proportion), and their mean r_i before and after: whether the predictor
learns the views the policy dwells on once it trains on them. The agent
collects a whole rollout with the predictor fixed, so a view it dwells on
pays for the rollout's length whatever the predictor does next.

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

from tfa_explore import config
from tfa_explore.environments import minigrid
from tfa_explore.experiments import ppo

ACTIONS = ('left', 'right', 'forward', 'pickup', 'drop', 'toggle', 'done')


def restore_agent(root_dir, env):
  train_step = tf.Variable(0, dtype=tf.int64)
  agent = ppo.ppo_clip_agent(env.time_step_spec(), env.action_spec(),
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
  repeats = collections.Counter()
  repeat_rewards = collections.Counter()
  seen, visited = set(), []
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
    r_i = float(novelty(agent.intrinsic_reward,
                        time_step.observation[:, None]).numpy()[0, 0])
    rewards[a].append(r_i)
    key = time_step.observation.numpy().tobytes()
    repeats[a] += int(key in seen)
    repeat_rewards[a] += r_i * (key in seen)
    seen.add(key)
    visited.append(time_step.observation)
    episode_cells.add(tuple(py_env.last_info.get('agent_pos', ())))
    if time_step.is_last():
      successes += int(float(time_step.reward.numpy()[0]) > 0)
      cells.append(len(episode_cells))
      episode_cells, seen = set(), set()
  repeat_share = sum(repeat_rewards.values()) / max(
      sum(sum(r) for r in rewards.values()), 1e-12)
  return (taken, changed, repeats, rewards, cells, successes, visited,
          repeat_share)


def novelty(component, observations):
  """RND's normalised reward of `[B, T]` observations, with no gate."""
  return component.normalized(component.raw_rewards(observations))


def refit(agent, observations, num_steps):
  """Mean normalised r_i of `observations` before and after predictor steps."""
  component = agent.intrinsic_reward
  batch = tf.concat(observations, axis=0)[None]
  before = float(tf.reduce_mean(novelty(component, batch)))
  inputs = component.training_inputs(batch)
  step = tf.function(component.train_step)
  for _ in range(num_steps):
    step(inputs)
  after = float(tf.reduce_mean(novelty(component, batch)))
  return before, after


def main():
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--root_dir', required=True)
  parser.add_argument('--gin_file', required=True)
  parser.add_argument('--gin_bindings', action='append', default=[])
  parser.add_argument('--num_steps', type=int, default=3200)
  parser.add_argument('--seed', type=int, default=11)
  parser.add_argument('--refit_steps', type=int, default=16,
                      help='predictor steps of one update (4 epochs x 4 '
                      'minibatches in the MiniGrid gin files)')
  args = parser.parse_args()
  tf.random.set_seed(args.seed)  # the collect policy's sampling
  config.parse_gin([args.gin_file], args.gin_bindings)
  py_env = minigrid.load(seed=args.seed)
  env = tf_py_environment.TFPyEnvironment(py_env)
  agent, path, train_step = restore_agent(args.root_dir, env)
  print(f'{path}: train step {train_step}, {args.num_steps} env steps each')
  collected = {}
  for name, policy in (('collect policy', agent.collect_policy),
                       ('uniform random', None)):
    (taken, changed, repeats, rewards, cells, successes, collected[name],
     repeat_paid) = readout(agent, py_env, env, args.num_steps, policy,
                                args.seed)
    total = sum(taken.values())
    print(f'\n{name}: {len(cells)} episodes ended, {successes} at the goal, '
          f'{np.mean(cells) if cells else float("nan"):.1f} cells per episode')
    print('| action | share | observation changed | repeat | '
          'mean normalised r_i |')
    print('|---|---|---|---|---|')
    for a in sorted(taken):
      print(f'| {ACTIONS[a]} | {taken[a] / total:.2f} | '
            f'{changed[a] / taken[a]:.2f} | {repeats[a] / taken[a]:.2f} | '
            f'{np.mean(rewards[a]):.4f} |')
    paid = sum(sum(r) for r in rewards.values())
    repeat_share = sum(repeats.values()) / total
    print(f'repeats: {repeat_share:.2f} of the steps, paid '
          f'{repeat_paid:.2f} of the r_i; r_i per step {paid / total:.4f}')
  if args.refit_steps:
    # Changes the predictor: last, after both readouts.
    before, after = refit(agent, collected['collect policy'],
                          args.refit_steps)
    control = float(tf.reduce_mean(novelty(
        agent.intrinsic_reward,
        tf.concat(collected['uniform random'], axis=0)[None])))
    print(f'\nrefit, {args.refit_steps} predictor steps on the collect '
          f'policy\'s next observations: their mean r_i {before:.4f} -> '
          f'{after:.4f}; the uniform policy\'s afterwards {control:.4f}')


if __name__ == '__main__':
  main()
