"""Pure maths of intrinsic rewards (Burda et al. 2018, arXiv 1810.12894).

Stateless functions shared by every agent that holds an intrinsic reward
(RND-PPO, R2D2 and R2D3): the RND prediction error, the predictor's
sample mask, the intrinsic return filter and masked statistics.
"""

import tensorflow as tf


def intrinsic_return_filter(rewards, initial_state, gamma):
  """Discounted return filter `R_t = gamma * R_{t-1} + r_t` per environment.

  The paper normalises intrinsic rewards by a running std of these filtered
  returns, not of the rewards. The filter never resets at episode ends: the
  intrinsic stream is non-episodic.

  Args:
    rewards: `[B, T]` intrinsic rewards in time order.
    initial_state: `[B]` filter value before the first column.
    gamma: gamma_I.

  Returns:
    `(filtered [B, T], final_state [B])`.
  """
  rewards = tf.cast(rewards, tf.float32)

  def _forward(previous, reward):
    return gamma * previous + reward

  filtered = tf.scan(_forward, tf.transpose(rewards),
                     initializer=tf.cast(initial_state, tf.float32))
  filtered = tf.transpose(filtered)
  return filtered, filtered[:, -1]

def prediction_error(predicted_features, target_features):
  """RND intrinsic reward: mean squared error over the feature axis."""
  return tf.reduce_mean(
      tf.math.squared_difference(predicted_features,
                                 tf.stop_gradient(target_features)),
      axis=-1)

def predictor_update_mask(shape, proportion, seed=None):
  """Random 0/1 mask keeping each sample with probability `proportion`."""
  if proportion >= 1.0:
    return tf.ones(shape, tf.float32)
  return tf.cast(
      tf.random.uniform(shape, seed=seed) < proportion, tf.float32)

def masked_mean(values, mask):
  """`sum(mask * values) / max(sum(mask), 1)`: 0 when nothing is kept."""
  mask = tf.cast(mask, values.dtype)
  return tf.reduce_sum(mask * values) / tf.maximum(tf.reduce_sum(mask), 1.0)

def masked_moments(values, weights):
  """Weighted mean and variance of `values`."""
  weights = tf.cast(weights, values.dtype)
  total = tf.maximum(tf.reduce_sum(weights), 1.0)
  mean = tf.reduce_sum(weights * values) / total
  variance = tf.reduce_sum(weights * tf.square(values - mean)) / total
  return mean, variance
