#!/usr/bin/env python3
r"""How fast RND's reward separates new deep_sea cells from known ones.

Trains the deep_sea gin file's RND networks (`rnd_mlp_networks` with a
(64, 64) torso, a (64,) predictor head, 64 features, no input whitening)
on the cells a uniform random walk visits in a size-N deep_sea grid,
batched as the file's RND-PPO trains its predictor (128 samples per
update, 4 epochs x 2 minibatches of 64), and prints the raw reward of a
few cells after 0-1,000 episodes: one visited every episode, ones visited
in a share of the episodes, ones never visited. "never/every" is the
novelty contrast a policy can follow.

    python benchmarks/rnd_novelty_decay.py --learning_rate=1e-4 \
        --update_proportion=0.25

(benchmarks/results/bsuite/history_2026-11-27_deep_sea_rnd_ppo_pass_1.md).
"""

import argparse
import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')

# pylint: disable=g-import-not-at-top
import numpy as np
import tensorflow as tf

from tfa_explore.agents.intrinsic import reward as intrinsic
from tfa_explore.networks import rnd_networks
# pylint: enable=g-import-not-at-top

SAMPLES_PER_UPDATE = 128
EPOCHS = 4
MINIBATCH = 64
CHECKPOINTS = (0, 10, 30, 100, 300, 1000)  # episodes


def main():
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--learning_rate', type=float, default=1e-4)
  parser.add_argument('--update_proportion', type=float, default=0.25)
  parser.add_argument('--size', type=int, default=20)
  parser.add_argument('--seed', type=int, default=0)
  args = parser.parse_args()
  size = args.size
  tf.random.set_seed(args.seed)
  rng = np.random.default_rng(args.seed)
  rnd = intrinsic.RndIntrinsicReward(
      tf.TensorSpec((size, size), tf.float32),
      networks_fn=lambda spec: rnd_networks.rnd_mlp_networks(
          spec, torso_fc_layer_params=(64, 64),
          predictor_fc_layer_params=(64,), output_dim=64),
      optimizer=tf.keras.optimizers.Adam(args.learning_rate, epsilon=1e-5),
      normalize_observations=False,
      predictor_update_proportion=args.update_proportion)

  def one_hot(cells):
    grid = np.zeros((len(cells), size, size), np.float32)
    for i, (row, column) in enumerate(cells):
      grid[i, row, column] = 1.0
    return tf.constant(grid)

  half = size // 2
  probes = {
      'row 1 (every episode)': (1, 0),
      f'({half}, {half // 2})': (half, half // 2),
      f'({half}, {half - 2})': (half, half - 2),
      f'({half}, {half}) (never)': (half, half),
      f'({size - 1}, {size - 1}) (never)': (size - 1, size - 1),
  }
  step = tf.function(lambda x: rnd.train_step(rnd.training_inputs(x)))
  pending, episodes = [], 0
  print('| episodes | ' + ' | '.join(probes) + ' | never/every |')
  print('|---' * (len(probes) + 2) + '|')
  for checkpoint in CHECKPOINTS:
    while episodes < checkpoint:
      column = 0
      for row in range(size):
        pending.append((row, column))
        column += int(rng.integers(2))
      episodes += 1
      while len(pending) >= SAMPLES_PER_UPDATE:
        batch, pending = (pending[:SAMPLES_PER_UPDATE],
                          pending[SAMPLES_PER_UPDATE:])
        for _ in range(EPOCHS):
          order = rng.permutation(SAMPLES_PER_UPDATE)
          for start in range(0, SAMPLES_PER_UPDATE, MINIBATCH):
            step(one_hot([batch[i] for i in order[start:start + MINIBATCH]]))
    errors = rnd.raw_rewards(one_hot(list(probes.values()))).numpy()
    print(f'| {checkpoint:,} | ' + ' | '.join(f'{e:.2e}' for e in errors) +
          f' | {errors[3] / errors[0]:.1f} |')


if __name__ == '__main__':
  main()
