"""Hand-computed tests of tfa_explore.agents.r2d2.losses."""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf

from tfa_explore.agents.r2d2 import losses

NAN = float('nan')
INF = float('inf')


class _TestCase(tf.test.TestCase):
  # tf.test.TestCase's deprecated `test_session` context manager is not a
  # test, but pytest collects it by name and reports it as skipped.
  test_session = None


def _wide_range(dtype):
  """-1e4..1e4 densely, plus magnitudes 1e-8..1e6 of both signs."""
  magnitudes = np.logspace(-8, 6, 300)
  return np.concatenate([
      np.linspace(-1e4, 1e4, 200001), np.linspace(-1.0, 1.0, 20001),
      magnitudes, -magnitudes, [0.0]
  ]).astype(dtype)


class ValueRescaleTest(_TestCase, parameterized.TestCase):

  def test_hand_computed_values(self):
    # h(x) = sign(x)(sqrt(|x|+1) - 1) + 0.001 x
    # h(3)  = sqrt(4) - 1 + 0.003   = 1.003
    # h(-3) = -(sqrt(4) - 1) - 0.003 = -1.003
    # h(8)  = sqrt(9) - 1 + 0.008   = 2.008
    # h(99) = sqrt(100) - 1 + 0.099 = 9.099
    # h(0)  = 0
    x = tf.constant([3.0, -3.0, 8.0, 99.0, 0.0])
    self.assertAllClose(
        losses.value_rescale(x), [1.003, -1.003, 2.008, 9.099, 0.0],
        rtol=1e-6, atol=1e-6)

  def test_small_values_keep_relative_precision_in_float32(self):
    # h(1e-6) = 1e-6 / (sqrt(1 + 1e-6) + 1) + 1e-9
    #         = 1e-6 / 2.0000005 + 1e-9 = 5.00999875e-7.
    # The textbook form sqrt(1 + x) - 1 cancels to a multiple of float32's
    # 1.2e-7 spacing near 1 and would be ~10% off here.
    self.assertAllClose(
        losses.value_rescale(tf.constant([1e-6, -1e-6], tf.float32)),
        [5.00999875e-7, -5.00999875e-7], rtol=1e-5, atol=0)

  def test_other_epsilon(self):
    # eps = 0.1: h(3) = 2 - 1 + 0.3 = 1.3; h^-1(1.3) = 3.
    self.assertAllClose(losses.value_rescale(3.0, eps=0.1), 1.3)
    self.assertAllClose(losses.inverse_value_rescale(1.3, eps=0.1), 3.0)

  def test_inverse_hand_computed_values(self):
    # h^-1 undoes the values above: h^-1(1.003) = 3, h^-1(-2.008) = -8.
    self.assertAllClose(
        losses.inverse_value_rescale(tf.constant([1.003, -2.008, 9.099, 0.0])),
        [3.0, -8.0, 99.0, 0.0], rtol=1e-5, atol=1e-6)

  # Achieved: float64 ~1e-15 relative; float32 <= 6e-7 relative for |x| >= 1
  # and <= 9e-7 absolute for |x| < 1, thanks to the cancellation-free forms.
  @parameterized.named_parameters(
      ('float64', np.float64, 1e-12, 1e-12),
      ('float32', np.float32, 1e-6, 1e-6))
  def test_inverse_round_trip(self, dtype, rtol, atol):
    x = _wide_range(dtype)
    round_trip = losses.inverse_value_rescale(losses.value_rescale(x))
    self.assertEqual(round_trip.dtype, dtype)
    self.assertAllClose(round_trip, x, rtol=rtol, atol=atol)

  def test_rescale_of_inverse_round_trip(self):
    x = np.linspace(-300.0, 300.0, 60001)
    self.assertAllClose(
        losses.value_rescale(losses.inverse_value_rescale(x)), x,
        rtol=1e-12, atol=1e-12)

  def test_rescale_is_odd_and_increasing(self):
    x = _wide_range(np.float64)
    x.sort()
    h = losses.value_rescale(x).numpy()
    self.assertTrue(np.all(np.diff(h) >= 0.0))
    self.assertAllClose(losses.value_rescale(-x), -h)


def _q_values(bootstrap_values, num_actions=2):
  """Online and target Q values [B, T, A] for a known double-Q bootstrap.

  The online net prefers action 0 everywhere, the target net values action 0
  at `bootstrap_values` and action 1 at 1000: a max over the target net (plain
  Q-learning instead of double Q) would give 1000, which the tests would see.
  """
  bootstrap_values = np.asarray(bootstrap_values, np.float64)
  online = np.zeros(bootstrap_values.shape + (num_actions,))
  online[..., 0] = 1.0
  target = np.full(bootstrap_values.shape + (num_actions,), 1000.0)
  target[..., 0] = bootstrap_values
  return online, target


class NStepDoubleQTargetsTest(_TestCase):

  def test_termination_inside_window_and_truncation_at_end(self):
    # n = 3, gamma = 0.5, no rescaling. d_1 = 0: s_2 is terminal, so r_2,
    # r_3 and any bootstrap after it are cut from windows containing it.
    rewards = [[1.0, 2.0, 4.0, 8.0, 16.0]]
    discounts = [[1.0, 0.0, 1.0, 1.0, 1.0]]
    online, target = _q_values([[10.0, 20.0, 30.0, 40.0, 50.0]])  # v_t
    result = losses.n_step_double_q_targets(
        rewards, discounts, online, target, num_steps=3, gamma=0.5,
        rescale_values=False)
    # y_0 = 1 + 0.5*2 + 0.25*(1*0)*4 + 0.125*(1*0*1)*v_3 = 1 + 1 = 2
    #       (without the cut: 1 + 1 + 1 + 0.125*40 = 8)
    # y_1 = 2 + 0.5*0*4 + ... = 2
    # y_2 = window truncated at the last step s_4, m = 2:
    #       4 + 0.5*8 + 0.25*v_4 = 4 + 4 + 12.5 = 20.5
    # y_3 = m = 1: 8 + 0.5*v_4 = 8 + 25 = 33
    # y_4 = no next step: invalid, reported as 0
    self.assertAllClose(result.targets, [[2.0, 2.0, 20.5, 33.0, 0.0]])
    self.assertAllEqual(result.valid, [[True, True, True, True, False]])
    self.assertAllEqual(result.window_lengths, [[3, 3, 2, 1, 0]])

  def test_full_windows_without_termination(self):
    # n = 2, gamma = 0.5, d = 1: y_t = r_t + 0.5 r_{t+1} + 0.25 v_{t+2}.
    rewards = [[1.0, 2.0, 4.0, 8.0]]
    discounts = [[1.0, 1.0, 1.0, 1.0]]
    online, target = _q_values([[10.0, 20.0, 40.0, 80.0]])
    result = losses.n_step_double_q_targets(
        rewards, discounts, online, target, num_steps=2, gamma=0.5,
        rescale_values=False)
    # y_0 = 1 + 0.5*2 + 0.25*40 = 12
    # y_1 = 2 + 0.5*4 + 0.25*80 = 24
    # y_2 = m = 1 (truncated): 4 + 0.5*80 = 44
    self.assertAllClose(result.targets, [[12.0, 24.0, 44.0, 0.0]])
    self.assertAllEqual(result.window_lengths, [[2, 2, 1, 0]])

  def test_padding_is_never_read(self):
    # Steps 3 and 4 are padding full of NaN; windows stop at s_2.
    rewards = [[1.0, 2.0, 4.0, NAN, NAN]]
    discounts = [[1.0, 1.0, 1.0, NAN, NAN]]
    online, target = _q_values([[10.0, 20.0, 30.0, NAN, NAN]])
    online[0, 3:] = NAN
    mask = [[True, True, True, False, False]]
    result = losses.n_step_double_q_targets(
        rewards, discounts, online, target, num_steps=3, gamma=0.5,
        step_mask=mask, rescale_values=False)
    # y_0 = m = 2: 1 + 0.5*2 + 0.25*v_2 = 1 + 1 + 7.5 = 9.5
    # y_1 = m = 1: 2 + 0.5*v_2 = 2 + 15 = 17
    # y_2 = last real step: invalid; y_3, y_4 padding: invalid.
    self.assertAllClose(result.targets, [[9.5, 17.0, 0.0, 0.0, 0.0]])
    self.assertAllEqual(result.valid, [[True, True, False, False, False]])
    self.assertAllEqual(result.window_lengths, [[2, 1, 0, 0, 0]])

  def test_rescaled_targets(self):
    # n = 2, gamma = 0.5, eps = 1e-3. Target Q values live in h-space:
    # h^-1(2.008) = 8 (since h(8) = 2.008).
    rewards = [[1.0, 0.0, 123.0]]
    discounts = [[1.0, 1.0, 1.0]]
    online, target = _q_values([[0.0, 0.0, 2.008]])
    result = losses.n_step_double_q_targets(
        rewards, discounts, online, target, num_steps=2, gamma=0.5)
    # y_0 = h(1 + 0.5*0 + 0.25*8) = h(3) = 2 - 1 + 0.003 = 1.003
    # y_1 = h(0 + 0.5*8) = h(4) = sqrt(5) - 1 + 0.004 = 1.2400680
    self.assertAllClose(
        result.targets, [[1.003, np.sqrt(5.0) - 1.0 + 0.004, 0.0]],
        rtol=1e-6, atol=1e-6)

  def test_rescaling_switch_changes_only_the_transform(self):
    rewards = np.array([[1.0, 0.0, 123.0]])
    online, target = _q_values([[0.0, 0.0, 8.0]])
    plain = losses.n_step_double_q_targets(
        rewards, np.ones_like(rewards), online, target, num_steps=2,
        gamma=0.5, rescale_values=False)
    # y_0 = 1 + 0.25*8 = 3, y_1 = 0.5*8 = 4: exactly the insides above.
    self.assertAllClose(plain.targets, [[3.0, 4.0, 0.0]])

  def test_batch_rows_are_independent(self):
    rewards = [[1.0, 2.0, 4.0, 8.0, 16.0], [1.0, 2.0, 4.0, NAN, NAN]]
    discounts = [[1.0, 0.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, NAN, NAN]]
    online, target = _q_values([[10.0, 20.0, 30.0, 40.0, 50.0],
                                [10.0, 20.0, 30.0, NAN, NAN]])
    mask = [[True] * 5, [True, True, True, False, False]]
    result = losses.n_step_double_q_targets(
        rewards, discounts, online, target, num_steps=3, gamma=0.5,
        step_mask=mask, rescale_values=False)
    # Same numbers as the two single-row tests above.
    self.assertAllClose(result.targets,
                        [[2.0, 2.0, 20.5, 33.0, 0.0],
                         [9.5, 17.0, 0.0, 0.0, 0.0]])

  def test_targets_carry_no_gradient(self):
    online = tf.Variable([[[1.0, 0.0], [0.0, 1.0]]])
    target = tf.Variable([[[5.0, 6.0], [7.0, 8.0]]])
    with tf.GradientTape() as tape:
      result = losses.n_step_double_q_targets(
          [[1.0, 1.0]], [[1.0, 1.0]], online, target, num_steps=1, gamma=0.9)
      total = tf.reduce_sum(result.targets)
    self.assertEqual(tape.gradient(total, [online, target]), [None, None])

  def test_rejects_zero_steps(self):
    with self.assertRaisesRegex(ValueError, 'num_steps'):
      losses.n_step_double_q_targets([[1.0]], [[1.0]], [[[0.0]]], [[[0.0]]],
                                     num_steps=0, gamma=0.9)


class SequencePrioritiesTest(_TestCase):

  def test_max_mean_mix_ignores_padding(self):
    abs_td_errors = [[1.0, 2.0, 3.0, 100.0],   # 100 is padding
                     [4.0, NAN, INF, 7.0],     # only the first step is real
                     [5.0, 5.0, 5.0, 5.0]]     # nothing real
    mask = [[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]]
    priorities = losses.sequence_priorities(abs_td_errors, mask, eta=0.9)
    # row 0: max 3, mean (1+2+3)/3 = 2 -> 0.9*3 + 0.1*2 = 2.9
    # row 1: max 4, mean 4            -> 0.9*4 + 0.1*4 = 4.0
    # row 2: no valid step            -> 0
    self.assertAllClose(priorities, [2.9, 4.0, 0.0])

  def test_signed_errors_and_other_eta(self):
    # eta = 0.5: |[-1, 3]| -> max 3, mean 2 -> 0.5*3 + 0.5*2 = 2.5
    self.assertAllClose(
        losses.sequence_priorities([[-1.0, 3.0]], [[True, True]], eta=0.5),
        [2.5])


class ImportanceWeightsTest(_TestCase):

  def test_hand_computed(self):
    # N = 10, beta = 0.5: N*P = [1, 2, 4] -> (N*P)^-0.5 = [1, 1/sqrt2, 1/2],
    # max 1 -> [1, 0.70710678, 0.5]
    self.assertAllClose(
        losses.importance_weights([0.1, 0.2, 0.4], 10, exponent=0.5),
        [1.0, 1.0 / np.sqrt(2.0), 0.5])

  def test_normalised_by_batch_max(self):
    # N = 8, beta = 1: N*P = [2, 4] -> [0.5, 0.25], max 0.5 -> [1, 0.5]
    self.assertAllClose(
        losses.importance_weights(
            [0.25, 0.5], tf.constant(8, tf.int64), exponent=1.0),
        [1.0, 0.5])

  def test_paper_exponent_default(self):
    # beta = 0.6: N*P = [1, 32] -> 32^-0.6 = 2^-3 = 0.125
    self.assertAllClose(
        losses.importance_weights([1.0 / 64, 0.5], 64), [1.0, 0.125])


class MaskedTdLossTest(_TestCase):

  def test_hand_computed_squared(self):
    td_errors = [[1.0, 2.0, NAN], [3.0, INF, 0.0]]
    mask = [[1, 1, 0], [1, 0, 0]]
    loss = losses.masked_td_loss(td_errors, mask, weights=[1.0, 0.5])
    # row 0: 0.5*(1 + 4)/2 = 1.25; row 1: 0.5*9 = 4.5, weighted 2.25
    # mean over batch: (1.25 + 2.25)/2 = 1.75
    self.assertAllClose(loss, 1.75)

  def test_hand_computed_huber(self):
    td_errors = [[1.0, 2.0, NAN], [3.0, INF, 0.0]]
    mask = [[1, 1, 0], [1, 0, 0]]
    loss = losses.masked_td_loss(
        td_errors, mask, weights=[1.0, 0.5], huber_delta=1.0)
    # huber_1(1) = 0.5; huber_1(2) = 0.5 + 1 = 1.5; huber_1(3) = 0.5 + 2 = 2.5
    # row 0: (0.5 + 1.5)/2 = 1.0; row 1: 2.5*0.5 = 1.25; mean 1.125
    self.assertAllClose(loss, 1.125)

  def test_unweighted_and_fully_masked_row(self):
    # row 0: 0.5*4 = 2; row 1 fully masked adds 0 but counts: (2 + 0)/2 = 1
    loss = losses.masked_td_loss([[2.0, 7.0], [5.0, 5.0]],
                                 [[True, False], [False, False]])
    self.assertAllClose(loss, 1.0)

  def test_padded_steps_never_affect_loss_or_gradient(self):
    rng = np.random.default_rng(0)
    mask = np.array([[1, 1, 1, 0, 0], [1, 0, 0, 0, 0], [1, 1, 1, 1, 1]], bool)
    base = rng.normal(size=mask.shape)
    other = np.where(mask, base, rng.normal(size=mask.shape) * 1e6)
    poisoned = np.where(mask, base, NAN)
    weights = [0.3, 1.0, 0.7]
    losses_seen = []
    for values in (base, other, poisoned):
      td_errors = tf.Variable(values)
      with tf.GradientTape() as tape:
        loss = losses.masked_td_loss(td_errors, mask, weights)
      gradient = tape.gradient(loss, td_errors).numpy()
      losses_seen.append(loss.numpy())
      self.assertTrue(np.all(np.isfinite(gradient)))
      self.assertAllEqual(gradient[~mask], np.zeros((~mask).sum()))
    self.assertAllClose(losses_seen, [losses_seen[0]] * 3, rtol=0, atol=0)
    self.assertTrue(np.isfinite(losses_seen[0]))


if __name__ == '__main__':
  tf.test.main()
