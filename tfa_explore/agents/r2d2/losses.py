"""Pure TensorFlow maths of the R2D2 learner (Kapturowski et al. 2019).

Every function works on plain tensors and has no state, so each can be tested
against numbers computed by hand.

Time layout. Sequences are batch major, `[B, T]`, and follow the TF-Agents
`Trajectory` convention: at index `t` the sequence holds the observation
`s_t`, the action `a_t` taken there, the reward `r_t` received for that action
and the continuation discount `d_t` of the transition `s_t -> s_{t+1}` (0 when
`s_{t+1}` is terminal, 1 otherwise; it does NOT include gamma). Q values are
`[B, T, num_actions]`, where `q[:, t]` is evaluated at `s_t`.

A `step_mask` `[B, T]` marks real steps (1) against padding (0). Sequences are
expected not to cross episode boundaries (R2D2 stores them that way and
TF-Agents' `ReverbAddTrajectoryObserver` ends its items at episode ends); if a
sequence does cross one, the caller must mask everything after the boundary.
"""

import collections

import tensorflow as tf


def value_rescale(x, eps=1e-3):
  """Value rescaling h of Pohlen et al. (2018), elementwise.

  h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x.

  Args:
    x: Tensor of any shape, e.g. `[B, T]` returns.
    eps: The linear term's coefficient; it keeps h^-1 Lipschitz. The R2D2
      paper uses 1e-3.

  Returns:
    Tensor shaped like `x`.
  """
  x = tf.convert_to_tensor(x)
  # sign(x)(sqrt(|x|+1) - 1) == x / (sqrt(|x|+1) + 1); the second form avoids
  # the cancellation of sqrt(|x|+1) - 1, which in float32 is ~10% off at
  # |x| = 1e-6.
  return x / (tf.sqrt(tf.abs(x) + 1.0) + 1.0) + eps * x


def inverse_value_rescale(x, eps=1e-3):
  """Exact inverse of `value_rescale` (Pohlen et al. 2018, Proposition A.2).

  h^-1(x) = sign(x) (((sqrt(1 + 4 eps (|x| + 1 + eps)) - 1) / (2 eps))^2 - 1).

  Args:
    x: Tensor of any shape, e.g. `[B, T]` rescaled Q values.
    eps: Must equal the `eps` used by `value_rescale`.

  Returns:
    Tensor shaped like `x`.
  """
  x = tf.convert_to_tensor(x)
  abs_x_plus_one = tf.abs(x) + 1.0
  # (sqrt(1 + z) - 1) / (2 eps) with z = 4 eps (|x| + 1 + eps), rewritten as
  # 2 (|x| + 1 + eps) / (sqrt(1 + z) + 1) to avoid cancelling sqrt(1+z) - 1,
  # which is ~2 eps in magnitude: in float32 the textbook form is off by
  # ~1e-4 near 0 after a round trip, this one by ~1e-6.
  sqrt_term = tf.sqrt(1.0 + 4.0 * eps * (abs_x_plus_one + eps))
  root = 2.0 * (abs_x_plus_one + eps) / (sqrt_term + 1.0)
  return tf.sign(x) * (tf.square(root) - 1.0)


class NStepTargets(
    collections.namedtuple('NStepTargets',
                           ['targets', 'valid', 'window_lengths'])):
  """Result of `n_step_double_q_targets`, every field `[B, T]`.

  Fields:
    targets: y_t (rescaled if rescaling is on); 0 where `valid` is False.
    valid: bool, True where y_t uses at least one reward and bootstraps from a
      real step: both `s_t` and `s_{t+1}` are unmasked.
    window_lengths: int32 m_t, the number of rewards summed (<= num_steps).
      m_t < num_steps where the window was cut by the sequence end or by
      padding (NOT by a termination, which zeroes the discount instead).
  """
  __slots__ = ()


def n_step_double_q_targets(rewards,
                            discounts,
                            online_q_values,
                            target_q_values,
                            num_steps,
                            gamma,
                            step_mask=None,
                            rescale_values=True,
                            rescale_epsilon=1e-3):
  """Rescaled n-step double-Q targets of R2D2 (Kapturowski et al. 2019, 2.3).

  With m = m_t the window length, D_k = prod_{j<k} d_{t+j} and
  a* = argmax_a online_q(s_{t+m}, a):

    y_t = h( sum_{k<m} gamma^k D_k r_{t+k}
             + gamma^m D_m h^-1( target_q(s_{t+m}, a*) ) )

  D_k makes a termination inside the window cut both the rewards after it and
  the bootstrap. m_t = num_steps unless the window runs past the last real
  step; then it is truncated to bootstrap from the last real step reachable
  from t without crossing a masked step (as rlax's n-step returns do). The
  final real step of a sequence has m_t = 0 and no target (`valid` False).

  Targets carry no gradient.

  Args:
    rewards: float `[B, T]`, r_t.
    discounts: float `[B, T]`, d_t in [0, 1], without gamma.
    online_q_values: float `[B, T, A]`, online-network Q values; pick a*.
    target_q_values: float `[B, T, A]`, target-network Q values; evaluate a*.
      Both are in rescaled space when `rescale_values` is True.
    num_steps: Python int n >= 1 (R2D2: 5).
    gamma: Python float or scalar tensor (R2D2: 0.997).
    step_mask: optional `[B, T]` bool or 0/1, False/0 on padding. Values at
      masked steps (including NaN or inf) never reach a valid target.
    rescale_values: apply h / h^-1. False gives plain n-step double Q, for
      ablations and for agents that clip rewards instead.
    rescale_epsilon: eps of h.

  Returns:
    `NStepTargets` of `[B, T]` tensors.
  """
  if num_steps < 1:
    raise ValueError(f'num_steps must be >= 1, got {num_steps}.')
  rewards = tf.convert_to_tensor(rewards)
  dtype = rewards.dtype
  discounts = tf.cast(discounts, dtype)
  online_q_values = tf.cast(online_q_values, dtype)
  target_q_values = tf.cast(target_q_values, dtype)
  gamma = tf.cast(gamma, dtype)
  if step_mask is None:
    step_mask = tf.ones_like(rewards, dtype=tf.bool)
  step_mask = tf.cast(step_mask, tf.bool)

  # Bootstrap value of every step as a potential window end: double Q picks
  # the action with the online net and evaluates it with the target net.
  greedy_actions = tf.argmax(online_q_values, axis=-1, output_type=tf.int32)
  bootstrap_values = tf.gather(
      target_q_values, greedy_actions, axis=-1, batch_dims=2)
  if rescale_values:
    bootstrap_values = inverse_value_rescale(bootstrap_values, rescale_epsilon)

  def shifted(x, k, fill):
    """x[:, t + k], filled with `fill` past the end of the sequence."""
    if k == 0:
      return x
    tail = x[:, k:]
    padding = tf.fill(tf.shape(x[:, :k]), tf.constant(fill, x.dtype))
    return tf.concat([tail, padding], axis=1)

  zeros = tf.zeros_like(rewards)
  returns = zeros
  bootstrap = zeros
  window_lengths = tf.zeros_like(rewards, dtype=tf.int32)
  # discount_weight = gamma^k D_k; reach = s_t .. s_{t+k} all real.
  discount_weight = tf.ones_like(rewards)
  reach = step_mask
  for k in range(num_steps):
    reach_next = tf.logical_and(reach, shifted(step_mask, k + 1, False))
    # tf.where, not multiplication, so NaN/inf at masked steps cannot leak.
    returns += tf.where(reach_next,
                        discount_weight * shifted(rewards, k, 0.0), zeros)
    discount_weight = discount_weight * gamma * shifted(discounts, k, 0.0)
    window_lengths += tf.cast(reach_next, tf.int32)
    if k + 1 < num_steps:
      reach_after = tf.logical_and(reach_next,
                                   shifted(step_mask, k + 2, False))
    else:
      reach_after = tf.zeros_like(reach_next)
    # The window ends at s_{t+k+1} when that step is reachable but the next
    # one is not (or n is reached).
    window_ends_here = tf.logical_and(reach_next, tf.logical_not(reach_after))
    bootstrap += tf.where(
        window_ends_here,
        discount_weight * shifted(bootstrap_values, k + 1, 0.0), zeros)
    reach = reach_next

  valid = window_lengths > 0
  targets = returns + bootstrap
  if rescale_values:
    targets = value_rescale(targets, rescale_epsilon)
  targets = tf.where(valid, targets, zeros)
  return NStepTargets(
      targets=tf.stop_gradient(targets),
      valid=valid,
      window_lengths=window_lengths)


def sequence_priorities(abs_td_errors, mask, eta=0.9):
  """Replay priority of each sequence (Kapturowski et al. 2019, 2.3).

  p = eta * max_t |delta_t| + (1 - eta) * mean_t |delta_t|, both over the
  unmasked steps only. A sequence with no unmasked step gets priority 0.

  Args:
    abs_td_errors: float `[B, T]`, |delta_t|. The absolute value is taken
      again, so signed errors give the same result.
    mask: `[B, T]` bool or 0/1; False/0 steps (padding, steps without a
      target) never count, whatever their value.
    eta: weight of the max (R2D2: 0.9).

  Returns:
    float `[B]` priorities. Reverb's prioritized selector raises them to its
    `priority_exponent` (R2D2: 0.9), so they are not exponentiated here.
  """
  abs_td_errors = tf.abs(tf.convert_to_tensor(abs_td_errors))
  mask = tf.cast(mask, tf.bool)
  masked = tf.where(mask, abs_td_errors, tf.zeros_like(abs_td_errors))
  # 0 is a safe floor for the max: every |delta| is >= 0.
  max_error = tf.reduce_max(masked, axis=1)
  count = tf.reduce_sum(tf.cast(mask, abs_td_errors.dtype), axis=1)
  mean_error = tf.math.divide_no_nan(tf.reduce_sum(masked, axis=1), count)
  return eta * max_error + (1.0 - eta) * mean_error


def importance_weights(sampling_probabilities, table_size, exponent=0.6):
  """Prioritized-replay importance weights (Schaul et al. 2016).

  w_i = (N * P(i))^-beta / max_j (N * P(j))^-beta over the batch.

  Because of the max normalisation N cancels, (w_i = (P(i) / min_j P(j))^-beta),
  but it is kept in the formula so the code reads like the paper.

  Args:
    sampling_probabilities: float `[B]`, P(i) as reported by Reverb
      (`SampleInfo.probability`).
    table_size: scalar or `[B]`, N (`SampleInfo.table_size`), any number type.
    exponent: beta (R2D2: 0.6).

  Returns:
    float `[B]` weights in (0, 1], with the same dtype as the probabilities;
    no gradient.
  """
  probabilities = tf.convert_to_tensor(sampling_probabilities)
  table_size = tf.cast(table_size, probabilities.dtype)
  weights = tf.pow(table_size * probabilities, -exponent)
  weights = weights / tf.reduce_max(weights)
  return tf.stop_gradient(weights)


def masked_td_loss(td_errors, mask, weights=None, huber_delta=None):
  """Importance-weighted TD loss over the unmasked steps of each sequence.

  Per sequence: L_i = mean over unmasked t of 0.5 delta_t^2; the loss is
  mean_i w_i L_i over the batch. Sequences without unmasked steps add 0 but
  still count in the batch mean, so the loss scale does not depend on how
  many sequences were fully padded.

  Squared loss by default: the R2D2 paper names no loss, and with value
  rescaling the targets are already compressed, so the Huber clip that DQN
  uses to tame unclipped-reward errors is not needed. `huber_delta` switches
  to Huber(delta) for ablations.

  Args:
    td_errors: float `[B, T]`, delta_t = y_t - Q(s_t, a_t). Masked steps may
      hold anything, including NaN or inf: they get neither loss nor gradient.
    mask: `[B, T]` bool or 0/1 of steps that have a valid target.
    weights: optional float `[B]` importance weights (see
      `importance_weights`); None means all ones.
    huber_delta: None for 0.5 delta^2, or a positive float for Huber loss.

  Returns:
    Scalar loss.
  """
  td_errors = tf.convert_to_tensor(td_errors)
  mask = tf.cast(mask, tf.bool)
  # Select before squaring: tf.where's gradient to the unselected branch is
  # exactly 0, whereas multiplying by a 0 mask would turn NaN into NaN.
  errors = tf.where(mask, td_errors, tf.zeros_like(td_errors))
  if huber_delta is None:
    step_losses = 0.5 * tf.square(errors)
  else:
    abs_errors = tf.abs(errors)
    quadratic = tf.minimum(abs_errors, huber_delta)
    step_losses = 0.5 * tf.square(quadratic) + huber_delta * (
        abs_errors - quadratic)
  count = tf.reduce_sum(tf.cast(mask, td_errors.dtype), axis=1)
  sequence_losses = tf.math.divide_no_nan(
      tf.reduce_sum(step_losses, axis=1), count)
  if weights is not None:
    sequence_losses *= tf.cast(weights, td_errors.dtype)
  return tf.reduce_mean(sequence_losses)
