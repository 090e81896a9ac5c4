"""TensorBoard summaries of an intrinsic reward, the same for every agent.

Tags (scalars at the agent's `train_step_counter`, written by
`RndIntrinsicReward.write_summaries`):

Intrinsic/
  reward_raw_{mean,std,max}          prediction error before normalisation
  reward_normalized_{mean,std,max}   after dividing by the return std (with
                                     an episodic memory: NGU's reward,
                                     episodic novelty x modulator)
  return_std, return_mean            running stats of the filtered returns
  error_mean, error_std              with an episodic memory: the running
                                     stats of raw errors the modulator uses
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
                    predictor_update_fraction, **moments):
  """Intrinsic reward statistics over the rows with weight > 0.

  `moments`: the normaliser's running statistics, each written under its
  keyword (`return_std`, `return_mean`, or `error_mean`, `error_std`).
  """
  with tf.name_scope('Intrinsic/'):
    _weighted_stats('reward_raw', raw_rewards, weights, step)
    _weighted_stats('reward_normalized', normalized_rewards, weights, step)
    for tag, value in sorted(moments.items()):
      tf.summary.scalar(tag, value, step=step)
    tf.summary.scalar('predictor_update_fraction', predictor_update_fraction,
                      step=step)


def write_observation_normalizer(step, mean, std, count):
  with tf.name_scope('Normalizers/'):
    tf.summary.scalar('rnd_observation_mean', tf.reduce_mean(mean), step=step)
    tf.summary.scalar('rnd_observation_std', tf.reduce_mean(std), step=step)
    tf.summary.scalar('rnd_observation_count', tf.reduce_mean(count),
                      step=step)
