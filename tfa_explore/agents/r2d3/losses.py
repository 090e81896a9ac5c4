"""Pure TensorFlow maths of the R2D3 demonstration losses.

R2D3 (Paine et al. 2019) trains a recurrent R2D2 learner with the losses of
DQfD (Hester et al. 2018, Section 3): n-step and 1-step TD losses (from
`agents.r2d2.losses`), the supervised large-margin loss below, on
demonstration steps only, and L2 regularisation of the network weights.

Layout as in `agents.r2d2.losses`: batch major `[B, T]`, Q values
`[B, T, A]` with action indices 0..A-1.
"""

import tensorflow as tf


def large_margin_per_step(q_values, expert_actions, margin=0.8):
  """J_E(Q) = max_a [Q(s, a) + l(a_E, a)] - Q(s, a_E) at every step.

  l(a_E, a) = `margin` for a != a_E and 0 for a = a_E (DQfD, Eq. 2; margin
  0.8 in DQfD's Table 1). J_E >= 0, and it is 0 exactly when Q(s, a_E)
  exceeds every other action's value by at least the margin.

  Args:
    q_values: float `[..., A]`.
    expert_actions: int `[...]` action indices in [0, A).
    margin: the margin for non-expert actions.

  Returns:
    float `[...]`; the gradient reaches Q through both terms.
  """
  q_values = tf.convert_to_tensor(q_values)
  expert_actions = tf.cast(expert_actions, tf.int32)
  num_actions = tf.shape(q_values)[-1]
  margins = margin * (1.0 - tf.one_hot(expert_actions, num_actions,
                                       dtype=q_values.dtype))
  expert_q = tf.reduce_sum(
      q_values * tf.one_hot(expert_actions, num_actions, dtype=q_values.dtype),
      axis=-1)
  return tf.reduce_max(q_values + margins, axis=-1) - expert_q


def large_margin_loss(q_values, expert_actions, mask, is_demo, margin=0.8,
                      weights=None):
  """Large-margin loss of `[B, T]` sequences, on demonstrations only.

  Per sequence: mean of J_E over its unmasked steps if it is a
  demonstration, else 0; the loss is the (weighted) mean over the whole
  batch, so agent sequences count as zeros (as DI-engine's
  `is_expert * J_E`) and the term's scale follows the demo ratio, the way
  DQfD's mixed batches weigh it.

  Args:
    q_values: float `[B, T, A]`.
    expert_actions: int `[B, T]` (any value where masked).
    mask: `[B, T]` bool of steps with a real action (padding excluded).
    is_demo: bool `[B]`, True for sequences from the demonstration table.
    margin: see `large_margin_per_step`.
    weights: optional float `[B]` importance weights.

  Returns:
    Scalar loss. Masked steps and agent sequences get neither loss nor
    gradient, whatever they hold.
  """
  q_values = tf.convert_to_tensor(q_values)
  num_actions = tf.shape(q_values)[-1]
  # Padding may hold any action; keep the gather in range (masked below).
  expert_actions = tf.clip_by_value(tf.cast(expert_actions, tf.int32), 0,
                                    num_actions - 1)
  per_step = large_margin_per_step(q_values, expert_actions, margin)
  mask = tf.logical_and(tf.cast(mask, tf.bool),
                        tf.cast(is_demo, tf.bool)[:, None])
  per_step = tf.where(mask, per_step, tf.zeros_like(per_step))
  count = tf.reduce_sum(tf.cast(mask, per_step.dtype), axis=1)
  per_sequence = tf.math.divide_no_nan(tf.reduce_sum(per_step, axis=1), count)
  if weights is not None:
    per_sequence *= tf.cast(weights, per_sequence.dtype)
  return tf.reduce_mean(per_sequence)


def l2_regularization(variables):
  """0.5 * sum of squared entries of `variables` (weights and biases).

  DQfD regularises "the weights and biases" with coefficient 1e-5.
  """
  variables = list(variables)
  if not variables:
    return tf.constant(0.0)
  return tf.add_n([tf.nn.l2_loss(tf.cast(v, tf.float32)) for v in variables])
