#!/usr/bin/env python3
r"""How much RND's reward of never-visited deep_sea cells differs by cell.

Builds the RND networks of `gin/rnd_ppo/bsuite_deep_sea.gin` (target and
predictor linear over the one-hot N x N grid, `rnd_mlp_networks` with no
hidden layers) with several feature sizes and prints, over every cell, the
untrained predictor's error (RND's raw reward for a first visit): its std
relative to its mean, and its smallest and largest relative to the mean.
A spread wider than the gap between visited and new cells would hide the
frontier from the policy.

    python benchmarks/rnd_initial_spread.py --size=20 --output_dims=64,512,2048

(benchmarks/results/bsuite/history_2026-11-27_deep_sea_rnd_ppo_passes_3-4.md,
RND-PPO's third pass).
"""

import argparse
import os

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')

# pylint: disable=g-import-not-at-top
import tensorflow as tf

from tfa_explore.networks import rnd_networks
# pylint: enable=g-import-not-at-top


def main():
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--size', type=int, default=20)
  parser.add_argument('--output_dims', default='64,512,2048')
  parser.add_argument('--seeds', default='0,1')
  args = parser.parse_args()
  cells = args.size * args.size
  print('| features | seed | std / mean | min / mean | max / mean |')
  print('|---|---|---|---|---|')
  for output_dim in (int(d) for d in args.output_dims.split(',')):
    for seed in (int(s) for s in args.seeds.split(',')):
      tf.random.set_seed(seed)
      target, predictor = rnd_networks.rnd_mlp_networks(
          tf.TensorSpec((cells,), tf.float32), torso_fc_layer_params=(),
          predictor_fc_layer_params=(), output_dim=output_dim)
      grid = tf.eye(cells)  # every cell's one-hot observation
      target_features, _ = target(grid)
      predicted, _ = predictor(grid)
      error = tf.reduce_mean(tf.square(target_features - predicted), -1)
      mean = float(tf.reduce_mean(error))
      print(f'| {output_dim} | {seed} | '
            f'{float(tf.math.reduce_std(error)) / mean:.3f} | '
            f'{float(tf.reduce_min(error)) / mean:.2f} | '
            f'{float(tf.reduce_max(error)) / mean:.2f} |')


if __name__ == '__main__':
  main()
