"""TensorBoard summaries of an intrinsic reward, the same for every agent.

Tags (scalars at the agent's `train_step_counter`, written by
`RndIntrinsicReward.write_summaries`):

Intrinsic/
  reward_raw_{mean,std,max}          prediction error before normalisation
  reward_normalized_{mean,std,max}   after dividing by the return std
  return_std, return_mean            running stats of the filtered returns
  predictor_update_fraction          share of samples the predictor saw
Normalizers/
  rnd_observation_mean, rnd_observation_std  (averaged over features)
  rnd_observation_count
"""

import tensorflow as tf

from tfa_explore.agents.intrinsic import maths


def _weighted_stats(prefix, values, weights, step):
  mean, variance = maths.masked_moments(values, weights)
  masked_max = tf.reduce_max(
      tf.where(weights > 0, values, tf.fill(tf.shape(values), -float('inf'))))
  tf.summary.scalar(prefix + '_mean', mean, step=step)
  tf.summary.scalar(prefix + '_std', tf.sqrt(variance), step=step)
  tf.summary.scalar(prefix + '_max', masked_max, step=step)


def write_intrinsic(step, raw_rewards, normalized_rewards, weights,
                    return_std, return_mean, predictor_update_fraction):
  """Intrinsic reward statistics over the rows with weight > 0."""
  with tf.name_scope('Intrinsic/'):
    _weighted_stats('reward_raw', raw_rewards, weights, step)
    _weighted_stats('reward_normalized', normalized_rewards, weights, step)
    tf.summary.scalar('return_std', return_std, step=step)
    tf.summary.scalar('return_mean', return_mean, step=step)
    tf.summary.scalar('predictor_update_fraction', predictor_update_fraction,
                      step=step)


def write_observation_normalizer(step, mean, std, count):
  with tf.name_scope('Normalizers/'):
    tf.summary.scalar('rnd_observation_mean', tf.reduce_mean(mean), step=step)
    tf.summary.scalar('rnd_observation_std', tf.reduce_mean(std), step=step)
    tf.summary.scalar('rnd_observation_count', tf.reduce_mean(count),
                      step=step)
