"""Pure maths of RND-PPO (Burda et al. 2018, arXiv 1810.12894).

Every function here is stateless and works on batch-major tensors laid out
like a TF-Agents `Trajectory` of `T + 1` contiguous rows per environment:
row `t` holds observation `o_t`, the action taken on it and the reward and
discount of the NEXT time step (`o_{t+1}`). Row `t` with `step_type == LAST`
is the "boundary" row `o_LAST -> o_FIRST` of the next episode; its action is
ignored by the environment.

Transitions are the first `T` rows; the value of the last row is only the
bootstrap of the rollout.
"""

import collections

import tensorflow as tf
from tf_agents.trajectories import time_step as ts
from tf_agents.utils import common

from tfa_explore.agents.intrinsic import maths as intrinsic_maths

DualAdvantages = collections.namedtuple(
    'DualAdvantages',
    (
        'extrinsic_advantages',
        'extrinsic_returns',
        'intrinsic_advantages',
        'intrinsic_returns',
        'advantages',
    ),
)

StreamDiscounts = collections.namedtuple(
    'StreamDiscounts', ('bootstrap', 'trace', 'row_mask')
)


def episodic_stream_discounts(step_types, next_step_types, next_discounts,
                              gamma):
  """Discounts of an episodic stream, shapes `[B, T]`.

  * bootstrap: `gamma * discount_{t+1}`. The environment's discount is 0 on a
    terminated LAST step and 1 on a truncated one, so truncation bootstraps
    from `V(o_LAST)` (the value of the truncated episode's final observation,
    which TF-Agents keeps as its own row) and termination does not.
    TF-Agents' `PPOAgent.compute_return_and_advantage` multiplies by
    `get_episode_mask`, which zeroes the discount of every LAST step and so
    treats truncation as termination; we do not.
  * trace: the GAE trace never flows from a boundary row back into the
    episode that ended: it is cut on rows whose next step is LAST.
  * row_mask: boundary rows (`step_type == LAST`) get no advantage.

  Args:
    step_types: `[B, T]` step types of the rows.
    next_step_types: `[B, T]` step types of the next rows.
    next_discounts: `[B, T]` environment discounts of the next time steps.
    gamma: Discount factor of the stream.

  Returns:
    A `StreamDiscounts` of `[B, T]` float32 tensors.
  """
  next_discounts = tf.cast(next_discounts, tf.float32)
  next_not_last = tf.cast(
      tf.not_equal(next_step_types, ts.StepType.LAST), tf.float32)
  not_boundary = tf.cast(tf.not_equal(step_types, ts.StepType.LAST),
                         tf.float32)
  bootstrap = gamma * next_discounts
  return StreamDiscounts(
      bootstrap=bootstrap,
      trace=bootstrap * next_not_last,
      row_mask=not_boundary)


def non_episodic_stream_discounts(step_types, gamma):
  """Discounts of a non-episodic stream: episode ends are ordinary steps.

  The boundary row `o_LAST -> o_FIRST` is kept as one more step of the
  agent's lifelong stream (Burda et al. 2018, section 2.3), so the intrinsic
  return of the last steps of an episode includes the novelty of the next
  episode's start.

  Args:
    step_types: `[B, T]` step types, only used for the shape.
    gamma: Discount factor of the stream.

  Returns:
    A `StreamDiscounts` of `[B, T]` float32 tensors.
  """
  ones = tf.ones_like(step_types, dtype=tf.float32)
  return StreamDiscounts(bootstrap=gamma * ones, trace=gamma * ones,
                         row_mask=ones)


def generalized_advantages(rewards, values, discounts, td_lambda):
  """GAE with separate bootstrap and trace discounts.

  `delta_t = (r_t + bootstrap_t * V_{t+1} - V_t) * row_mask_t`
  `A_t = delta_t + td_lambda * trace_t * A_{t+1}`, `A_T = 0`.

  Args:
    rewards: `[B, T]` rewards of the transitions.
    values: `[B, T + 1]` values of every row's observation; the last column
      is the bootstrap value of the rollout.
    discounts: `StreamDiscounts` of `[B, T]` tensors.
    td_lambda: GAE lambda.

  Returns:
    `[B, T]` advantages (zero where `row_mask` is zero).
  """
  rewards = tf.cast(rewards, tf.float32)
  values = tf.cast(values, tf.float32)
  deltas = (rewards + discounts.bootstrap * values[:, 1:] - values[:, :-1])
  deltas *= discounts.row_mask
  weights = td_lambda * discounts.trace

  def _backward(next_advantage, delta_and_weight):
    delta, weight = delta_and_weight
    return delta + weight * next_advantage

  advantages = tf.scan(
      _backward,
      (tf.transpose(deltas), tf.transpose(weights)),
      initializer=tf.zeros_like(deltas[:, 0]),
      reverse=True)
  return tf.stop_gradient(tf.transpose(advantages) * discounts.row_mask)


def dual_gae(extrinsic_rewards,
             intrinsic_rewards,
             extrinsic_values,
             intrinsic_values,
             step_types,
             next_step_types,
             next_discounts,
             extrinsic_discount,
             intrinsic_discount,
             td_lambda,
             extrinsic_coef,
             intrinsic_coef,
             non_episodic_intrinsic=True):
  """Advantages and TD(lambda) returns of both streams (paper section 2.3).

  Args:
    extrinsic_rewards: `[B, T]`.
    intrinsic_rewards: `[B, T]` (already normalised).
    extrinsic_values: `[B, T + 1]` extrinsic head values.
    intrinsic_values: `[B, T + 1]` intrinsic head values.
    step_types: `[B, T]` step types of the rows.
    next_step_types: `[B, T]`.
    next_discounts: `[B, T]` environment discounts of the next steps.
    extrinsic_discount: gamma_E (0.999 in the paper).
    intrinsic_discount: gamma_I (0.99 in the paper).
    td_lambda: GAE lambda of both streams (0.95 in the paper).
    extrinsic_coef: Weight of the extrinsic advantage (2 in the paper).
    intrinsic_coef: Weight of the intrinsic advantage (1 in the paper).
    non_episodic_intrinsic: If False the intrinsic stream is episodic like
      the extrinsic one (ablation).

  Returns:
    `DualAdvantages` of `[B, T]` tensors; returns are advantage + value.
  """
  extrinsic_discounts = episodic_stream_discounts(
      step_types, next_step_types, next_discounts, extrinsic_discount)
  if non_episodic_intrinsic:
    intrinsic_discounts = non_episodic_stream_discounts(
        step_types, intrinsic_discount)
  else:
    intrinsic_discounts = episodic_stream_discounts(
        step_types, next_step_types, next_discounts, intrinsic_discount)
  extrinsic_advantages = generalized_advantages(
      extrinsic_rewards, extrinsic_values, extrinsic_discounts, td_lambda)
  intrinsic_advantages = generalized_advantages(
      intrinsic_rewards, intrinsic_values, intrinsic_discounts, td_lambda)
  return DualAdvantages(
      extrinsic_advantages=extrinsic_advantages,
      extrinsic_returns=extrinsic_advantages + extrinsic_values[:, :-1],
      intrinsic_advantages=intrinsic_advantages,
      intrinsic_returns=intrinsic_advantages + intrinsic_values[:, :-1],
      advantages=(extrinsic_coef * extrinsic_advantages +
                  intrinsic_coef * intrinsic_advantages))


def extrinsic_gae(extrinsic_rewards,
                  extrinsic_values,
                  step_types,
                  next_step_types,
                  next_discounts,
                  extrinsic_discount,
                  td_lambda,
                  extrinsic_coef):
  """`dual_gae` without an intrinsic stream (the PPO twin's advantages).

  The extrinsic stream is `dual_gae`'s; the intrinsic advantages and
  returns are zeros and the advantage is `extrinsic_coef * A_E`.

  Args:
    extrinsic_rewards: `[B, T]`.
    extrinsic_values: `[B, T + 1]` extrinsic head values.
    step_types: `[B, T]` step types of the rows.
    next_step_types: `[B, T]`.
    next_discounts: `[B, T]` environment discounts of the next steps.
    extrinsic_discount: gamma_E.
    td_lambda: GAE lambda.
    extrinsic_coef: Weight of the extrinsic advantage.

  Returns:
    `DualAdvantages` of `[B, T]` tensors.
  """
  discounts = episodic_stream_discounts(
      step_types, next_step_types, next_discounts, extrinsic_discount)
  advantages = generalized_advantages(
      extrinsic_rewards, extrinsic_values, discounts, td_lambda)
  zeros = tf.zeros_like(advantages)
  return DualAdvantages(
      extrinsic_advantages=advantages,
      extrinsic_returns=advantages + extrinsic_values[:, :-1],
      intrinsic_advantages=zeros,
      intrinsic_returns=zeros,
      advantages=extrinsic_coef * advantages)










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




def clipped_surrogate_loss(log_probs, old_log_probs, advantages, weights,
                           clipping):
  """PPO's clipped surrogate loss (Schulman et al. 2017, eq. 7).

  `ratio = exp(log_pi - log_pi_old)`; the loss is the weighted mean of
  `-min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A)` over every element
  (`common.aggregate_losses`, as TF-Agents' `PPOAgent`), or of
  `-ratio * A` when `clipping` is 0.

  Args:
    log_probs: `[B, T]` log-probabilities of the actions now.
    old_log_probs: `[B, T]` log-probabilities under the collect policy.
    advantages: `[B, T]` (normalised) advantages.
    weights: `[B, T]` weights (0 on rows that do not train).
    clipping: epsilon (0 for no clipping).

  Returns:
    `(loss, clip_fraction)`: the scalar loss and the share of rows with
    weight > 0 whose ratio is outside `[1 - eps, 1 + eps]`.
  """
  log_probs = tf.cast(log_probs, tf.float32)
  ratio = tf.exp(log_probs - tf.stop_gradient(old_log_probs))
  objective = ratio * advantages
  if clipping > 0.0:
    clipped_ratio = tf.clip_by_value(ratio, 1 - clipping, 1 + clipping)
    objective = tf.minimum(objective, clipped_ratio * advantages)
  loss = common.aggregate_losses(per_example_loss=-objective,
                                 sample_weight=weights).total_loss
  clipped = tf.cast(tf.greater(tf.abs(ratio - 1.0), clipping), tf.float32)
  clip_fraction = intrinsic_maths.masked_mean(clipped, tf.cast(weights > 0, tf.float32))
  return loss, clip_fraction


def value_loss(returns, values, weights, old_values=None, clipping=0.0):
  """Weighted mean squared error of one value head.

  With `clipping` > 0 the error is the larger of the plain and the clipped
  one, the clipped value moving at most `clipping` away from `old_values`
  (TF-Agents' `PPOAgent.value_estimation_loss`).

  Args:
    returns: `[B, T]` targets.
    values: `[B, T]` predictions.
    weights: `[B, T]` weights.
    old_values: `[B, T]` predictions of the collect policy; needed when
      clipping.
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
