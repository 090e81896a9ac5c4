"""Pure maths of RND-PPO (Burda et al. 2018, arXiv 1810.12894).

Stateless functions on batch-major tensors laid out like a TF-Agents
`Trajectory` of `T + 1` contiguous rows per environment: row `t` holds
observation `o_t`, the action taken on it, and the reward, discount and
step type of the NEXT time step (`o_{t+1}`). Row `t` with `step_type ==
LAST` is the "boundary" row `o_LAST -> o_FIRST` of the next episode; the
loss masks it (`ppo_utils.make_trajectory_mask`). Transitions are the
first `T` rows; the value of the last row is only the bootstrap.
"""

import collections

import tensorflow as tf
from tf_agents.trajectories import time_step as ts
from tf_agents.utils import common

StreamDiscounts = collections.namedtuple('StreamDiscounts',
                                         ('bootstrap', 'trace'))


def episodic_discounts(next_step_types, next_discounts, gamma):
  """Discounts of an episodic stream, shapes `[B, T]`.

  * bootstrap: `gamma * discount_{t+1}`. The environment's discount is 0 on
    a terminated LAST step and 1 on a truncated one, so truncation
    bootstraps from `V(o_LAST)` (the truncated episode's final observation,
    which TF-Agents keeps as its own row) and termination does not.
    `PPOAgent.compute_return_and_advantage` also multiplies by
    `get_episode_mask`, which treats truncation as termination; we do not.
  * trace: the GAE trace never flows from a boundary row back into the
    episode that ended: it is cut on rows whose next step is LAST.

  Args:
    next_step_types: `[B, T]` step types of the next rows.
    next_discounts: `[B, T]` environment discounts of the next time steps.
    gamma: Discount factor of the stream.

  Returns:
    A `StreamDiscounts` of `[B, T]` float32 tensors.
  """
  bootstrap = gamma * tf.cast(next_discounts, tf.float32)
  next_not_last = tf.cast(
      tf.not_equal(next_step_types, ts.StepType.LAST), tf.float32)
  return StreamDiscounts(bootstrap=bootstrap, trace=bootstrap * next_not_last)


def non_episodic_discounts(next_step_types, gamma):
  """Discounts of a non-episodic stream: episode ends are ordinary steps.

  The boundary row `o_LAST -> o_FIRST` is kept as one more step of the
  agent's lifelong stream (Burda et al. 2018, section 2.3), so the intrinsic
  return of the last steps of an episode includes the novelty of the next
  episode's start.

  Args:
    next_step_types: `[B, T]` step types, only used for the shape.
    gamma: Discount factor of the stream.

  Returns:
    A `StreamDiscounts` of `[B, T]` float32 tensors.
  """
  ones = tf.ones_like(next_step_types, dtype=tf.float32)
  return StreamDiscounts(bootstrap=gamma * ones, trace=gamma * ones)


def generalized_advantages(rewards, values, discounts, td_lambda):
  """GAE with separate bootstrap and trace discounts.

  `delta_t = r_t + bootstrap_t * V_{t+1} - V_t`,
  `A_t = delta_t + td_lambda * trace_t * A_{t+1}`, `A_T = 0`.

  Args:
    rewards: `[B, T]` rewards of the transitions.
    values: `[B, T + 1]` values of every row's observation; the last column
      is the bootstrap value of the rollout.
    discounts: `StreamDiscounts` of `[B, T]` tensors.
    td_lambda: GAE lambda.

  Returns:
    `[B, T]` advantages, without gradient.
  """
  rewards = tf.cast(rewards, tf.float32)
  values = tf.cast(values, tf.float32)
  deltas = rewards + discounts.bootstrap * values[:, 1:] - values[:, :-1]
  weights = td_lambda * discounts.trace

  def _backward(next_advantage, delta_and_weight):
    delta, weight = delta_and_weight
    return delta + weight * next_advantage

  advantages = tf.scan(
      _backward,
      (tf.transpose(deltas), tf.transpose(weights)),
      initializer=tf.zeros_like(deltas[:, 0]),
      reverse=True)
  return tf.stop_gradient(tf.transpose(advantages))


def explained_variance(predictions, targets, weights):
  """`1 - Var[targets - predictions] / Var[targets]` over weighted samples.

  Returns 0 when the targets have no variance (nothing to explain).
  """
  weights = tf.cast(weights, tf.float32)
  total = tf.maximum(tf.reduce_sum(weights), 1.0)

  def _variance(x):
    mean = tf.reduce_sum(weights * x) / total
    return tf.reduce_sum(weights * tf.square(x - mean)) / total

  target_variance = _variance(targets)
  residual_variance = _variance(targets - predictions)
  return tf.where(target_variance > 0.0,
                  1.0 - residual_variance / tf.maximum(target_variance, 1e-12),
                  tf.zeros_like(target_variance))


def value_loss(returns, values, weights, old_values=None, clipping=0.0):
  """Weighted mean squared error of one value head.

  `PPOAgent.value_estimation_loss` on values the caller already has (it
  runs the value network itself, which would run a shared torso twice):
  with `clipping` > 0 the error is the larger of the plain and the clipped
  one, the clipped value moving at most `clipping` from `old_values`.

  Args:
    returns: `[B, T]` targets.
    values: `[B, T]` predictions.
    weights: `[B, T]` weights.
    old_values: `[B, T]` values before the update; needed when clipping.
    clipping: Value clip (0 for none).

  Returns:
    The scalar loss, averaged over every element like
    `common.aggregate_losses`.
  """
  error = tf.math.squared_difference(returns, values)
  if clipping > 0.0:
    if old_values is None:
      raise ValueError('Value clipping needs old_values.')
    clipped = old_values + tf.clip_by_value(values - old_values, -clipping,
                                            clipping)
    error = tf.maximum(error, tf.math.squared_difference(returns, clipped))
  return common.aggregate_losses(per_example_loss=error,
                                 sample_weight=weights).total_loss
