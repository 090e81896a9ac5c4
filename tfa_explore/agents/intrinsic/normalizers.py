"""Normalisers of the RND intrinsic reward (Burda et al. 2018, section 2.4).

Both are `tf.Module`s held by `RndIntrinsicReward`, so their variables are
tracked by the agent that holds it and carried by its checkpoints.
"""

import tensorflow as tf
from tf_agents.specs import tensor_spec
from tf_agents.utils import tensor_normalizer

from tfa_explore.agents.intrinsic import maths


def _update_unless_empty(normalizer, values):
  """`normalizer.update(values)`, skipped when `values` has no element.

  `StreamingTensorNormalizer` averages the new batch by dividing by its
  element count; an empty batch would make its statistics NaN for good.
  """
  return tf.cond(tf.size(values) > 0,
                 lambda: tf.group(normalizer.update(values)),
                 tf.no_op)


def _variance(normalizer):
  """`m2 / count`, 0 while the count is 0."""
  count, _, m2, _ = normalizer.variables
  return tf.math.divide_no_nan(m2, count)


class RndObservationNormalizer(tf.Module):
  """Whitens and clips the inputs of the RND target and predictor only.

  The policy keeps its own normaliser (TF-Agents' `normalize_observations`);
  sharing one, as the TF-Agents RND prototype did, would let the policy's
  statistics drift with the RND warm-up.
  """

  def __init__(self, input_spec, clip_value=5.0, enabled=True,
               variance_epsilon=1e-8, name='rnd_observation_normalizer'):
    super().__init__(name=name)
    self._input_spec = input_spec
    self._clip_value = clip_value
    self._enabled = enabled
    self._variance_epsilon = variance_epsilon
    self._normalizer = tensor_normalizer.StreamingTensorNormalizer(
        input_spec, scope=name)

  @property
  def enabled(self):
    return self._enabled

  def update(self, inputs):
    """Adds a batch (any outer dims) of RND inputs to the statistics."""
    if self._enabled:
      return _update_unless_empty(self._normalizer, inputs)
    return tf.no_op()

  def normalize(self, inputs):
    """`clip((x - mean) / std, -clip, clip)`; identity when disabled."""
    if not self._enabled:
      return tf.cast(inputs, tf.float32)
    return self._normalizer.normalize(
        inputs, clip_value=self._clip_value, center_mean=True,
        variance_epsilon=self._variance_epsilon)

  def mean_and_std(self):
    """Current per-feature running mean and std."""
    return self._normalizer.variables[1], tf.sqrt(_variance(self._normalizer))

  def count(self):
    return self._normalizer.variables[0]


class IntrinsicReturnNormalizer(tf.Module):
  """Divides intrinsic rewards by a running std of intrinsic RETURNS.

  Each environment's rewards run through the forward filter
  `R_t = gamma_I * R_{t-1} + r_t` (never reset: the stream is
  non-episodic); the running mean/variance of every filtered `R_t` is kept
  by a `StreamingTensorNormalizer`, and rewards are divided by its std
  without centring. The filter state has one entry per environment; its
  length follows the batch (a batch of another size restarts it at zero).
  """

  def __init__(self, gamma, variance_epsilon=1e-8,
               name='intrinsic_return_normalizer'):
    super().__init__(name=name)
    self._gamma = gamma
    self._variance_epsilon = variance_epsilon
    self._return_moments = tensor_normalizer.StreamingTensorNormalizer(
        tensor_spec.TensorSpec([], tf.float32), scope=name + '_moments')
    self.filter_state = tf.Variable(
        tf.zeros([0], tf.float32), shape=tf.TensorShape([None]),
        trainable=False, name='intrinsic_return_filter_state')
    self.filter_batch_size = tf.Variable(
        0, dtype=tf.int32, trainable=False,
        name='intrinsic_return_filter_batch_size')

  def update(self, rewards, mask=None):
    """Runs `[B, T]` rewards through the filter and updates the moments.

    Args:
      rewards: `[B, T]` intrinsic rewards, each row in time order.
      mask: Optional `[B, T]` bool: steps that are transitions. Others (a
        replayed sequence's padding) add no reward to the filter and no
        return to the moments.

    Returns:
      The filtered returns `[B, T]`.
    """
    if mask is not None:
      rewards = tf.where(mask, rewards, tf.zeros_like(rewards))
    batch_size = tf.shape(rewards)[0]
    stored = self.filter_state.read_value()
    # A batch of another size (or the first batch) restarts the filter.
    state = tf.cond(
        tf.equal(self.filter_batch_size, batch_size),
        lambda: tf.reshape(stored, [batch_size]),
        lambda: tf.zeros([batch_size], tf.float32))
    filtered, final_state = maths.intrinsic_return_filter(
        rewards, state, self._gamma)
    # The state is written only once the scan has consumed the old value.
    with tf.control_dependencies([filtered]):
      updates = [
          self.filter_state.assign(final_state),
          self.filter_batch_size.assign(batch_size),
          _update_unless_empty(
              self._return_moments,
              filtered if mask is None else tf.boolean_mask(filtered, mask)),
      ]
    with tf.control_dependencies(updates):
      return tf.identity(filtered)

  def normalize(self, rewards):
    """`r / sqrt(Var[R] + eps)`."""
    return self._return_moments.normalize(
        rewards, clip_value=0.0, center_mean=False,
        variance_epsilon=self._variance_epsilon)

  def std(self):
    return tf.sqrt(_variance(self._return_moments))

  def mean(self):
    return self._return_moments.variables[1]

  def count(self):
    """Filtered returns seen so far."""
    return self._return_moments.variables[0]


class ErrorMoments(tf.Module):
  """Running mean and std of RND prediction errors (NGU's modulator).

  Never Give Up (Badia et al. 2020, section 2) normalises each error by
  the running mean and std of all errors seen; `update` adds the masked
  errors of a batch.
  """

  def __init__(self, name='rnd_error_moments'):
    super().__init__(name=name)
    self._moments = tensor_normalizer.StreamingTensorNormalizer(
        tensor_spec.TensorSpec([], tf.float32), scope=name)

  def update(self, errors, mask=None):
    """Adds `errors` (any shape; only where `mask`, if given)."""
    if mask is not None:
      errors = tf.boolean_mask(errors, mask)
    return _update_unless_empty(self._moments, tf.reshape(errors, [-1]))

  def mean(self):
    return self._moments.variables[1]

  def std(self):
    return tf.sqrt(_variance(self._moments))

  def count(self):
    return self._moments.variables[0]
