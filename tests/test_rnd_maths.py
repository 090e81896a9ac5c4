"""Hand-computed tests of RND-PPO's pure maths and normalisers."""

import numpy as np
import tensorflow as tf
from tf_agents.specs import tensor_spec
from tf_agents.trajectories import time_step as ts

from tfa_explore.agents.intrinsic import maths as intrinsic_maths
from tfa_explore.agents.intrinsic import normalizers
from tfa_explore.agents.rnd_ppo import maths

FIRST, MID, LAST = ts.StepType.FIRST, ts.StepType.MID, ts.StepType.LAST


class _TestCase(tf.test.TestCase):
  # tf.test.TestCase.test_session is a deprecated helper, not a test; hide it
  # from pytest's collection.
  test_session = None


class StreamGaeTest(_TestCase):
  # One env, 5 rows (4 transitions + the bootstrap row):
  #   row 0: FIRST -> MID,  r 1, discount 1
  #   row 1: MID   -> LAST, r 2, discount 0 (termination)
  #   row 2: LAST  -> FIRST (boundary row, masked in the loss), r 0
  #   row 3: FIRST -> MID,  r 3, discount 1
  #   row 4: MID (bootstrap only)
  NEXT_STEP_TYPES = tf.constant([[MID, LAST, FIRST, MID]])
  NEXT_DISCOUNTS = tf.constant([[1., 0., 1., 1.]])

  def test_episodic_stream_cuts_at_the_episode_end(self):
    discounts = maths.episodic_discounts(self.NEXT_STEP_TYPES,
                                         self.NEXT_DISCOUNTS, gamma=0.5)
    advantages = maths.generalized_advantages(
        tf.constant([[1., 2., 0., 3.]]), tf.constant([[1., 1., 4., 6., 8.]]),
        discounts, td_lambda=0.5)
    # gamma = lambda = 0.5, so the trace weight is 0.25 (0 into LAST):
    #   delta_3 = 3 + 0.5 * 8 - 6 = 1;  A_3 = 1
    #   delta_2 = 0 + 0.5 * 6 - 4 = -1; A_2 = -1 + 0.25 * 1 = -0.75
    #   delta_1 = 2 + 0 - 1 = 1;        A_1 = 1 (trace cut at LAST)
    #   delta_0 = 1 + 0.5 * 1 - 1 = 0.5; A_0 = 0.5 + 0.25 * 1 = 0.75
    self.assertAllClose(advantages, [[0.75, 1., -0.75, 1.]])

  def test_non_episodic_stream_runs_through_the_episode_end(self):
    discounts = maths.non_episodic_discounts(self.NEXT_STEP_TYPES, gamma=0.5)
    advantages = maths.generalized_advantages(
        tf.constant([[1., 1., 1., 1.]]), tf.constant([[2., 2., 2., 2., 4.]]),
        discounts, td_lambda=0.5)
    # Every bootstrap 0.5, every trace 0.25:
    #   delta_0 = delta_1 = delta_2 = 1 + 0.5 * 2 - 2 = 0
    #   delta_3 = 1 + 0.5 * 4 - 2 = 1
    #   A_3 = 1, A_2 = 0.25, A_1 = 0.0625, A_0 = 0.015625
    # A_1 (the terminal transition) still sees the next episode.
    self.assertAllClose(advantages, [[0.015625, 0.0625, 0.25, 1.]])

  def test_truncation_bootstraps_from_final_observation(self):
    # Env 0 terminates, env 1 is truncated (discount 1 on LAST).
    #   row 0: MID -> LAST, reward 1; row 1: boundary; row 2: next FIRST.
    # Values: V(o_0) = 0, V(o_LAST) = 10, V(o_FIRST') = 7.
    discounts = maths.episodic_discounts(
        next_step_types=tf.constant([[LAST, FIRST], [LAST, FIRST]]),
        next_discounts=tf.constant([[0., 1.], [1., 1.]]),
        gamma=0.5)
    advantages = maths.generalized_advantages(
        rewards=tf.constant([[1., 0.], [1., 0.]]),
        values=tf.constant([[0., 10., 7.], [0., 10., 7.]]),
        discounts=discounts,
        td_lambda=0.5)
    # Terminated: A_0 = 1 + 0.5 * 0 * 10 - 0 = 1.
    # Truncated: A_0 = 1 + 0.5 * 1 * V(o_LAST) - 0 = 1 + 5 = 6 (not
    #   1 + 0.5 * V(o_FIRST') = 4.5). Boundary rows: 0 + 0.5 * 7 - 10.
    self.assertAllClose(advantages, [[1., -6.5], [6., -6.5]])

  def test_rollout_end_bootstraps_from_last_row(self):
    # Two MID transitions, gamma 0.5, lambda 1: V = [0, 0, 4].
    #   delta_1 = 0 + 0.5 * 4 - 0 = 2; delta_0 = 0; A_0 = 0 + 0.5 * 2 = 1
    discounts = maths.episodic_discounts(
        tf.constant([[MID, MID]]), tf.constant([[1., 1.]]), gamma=0.5)
    advantages = maths.generalized_advantages(
        tf.constant([[0., 0.]]), tf.constant([[0., 0., 4.]]), discounts,
        td_lambda=1.0)
    self.assertAllClose(advantages, [[1., 2.]])


class PpoLossMathsTest(_TestCase):

  def test_value_loss(self):
    returns = tf.constant([[1., 2.]])
    values = tf.constant([[1.2, 2.5]])
    # (0.04 + 0.25) / 2 = 0.145; with the second row weighted 0: 0.02.
    self.assertAllClose(maths.value_loss(returns, values, tf.ones([1, 2])),
                        0.145)
    self.assertAllClose(
        maths.value_loss(returns, values, tf.constant([[1., 0.]])), 0.02)
    # Clip 0.5 around old values 0 and 2: row 0's clipped value is 0.5,
    # error (1 - 0.5)^2 = 0.25 > 0.04; row 1's is 2.5 (inside), 0.25.
    # (0.25 + 0.25) / 2 = 0.25.
    self.assertAllClose(
        maths.value_loss(returns, values, tf.ones([1, 2]),
                         old_values=tf.constant([[0., 2.]]), clipping=0.5),
        0.25)


class IntrinsicRewardMathsTest(_TestCase):

  def test_return_filter(self):
    # R_t = 0.5 * R_{t-1} + r_t from 0: env 0: 1, 0.5 + 1 = 1.5;
    # env 1: 2, 0.5 * 2 + 0 = 1.
    filtered, state = intrinsic_maths.intrinsic_return_filter(
        tf.constant([[1., 1.], [2., 0.]]), tf.zeros([2]), gamma=0.5)
    self.assertAllClose(filtered, [[1., 1.5], [2., 1.]])
    self.assertAllClose(state, [1.5, 1.])

  def test_running_intrinsic_return_std(self):
    normalizer = normalizers.IntrinsicReturnNormalizer(gamma=0.5)
    normalizer.update(tf.constant([[1., 1.], [2., 0.]]))
    # Filtered returns {1, 1.5, 2, 1}: mean 1.375,
    # var = (0.375^2 + 0.125^2 + 0.625^2 + 0.375^2) / 4 = 0.6875 / 4
    #     = 0.171875, std = 0.414578.
    self.assertAllClose(normalizer.std(), np.sqrt(0.171875), atol=1e-5)
    self.assertAllClose(normalizer.filter_state, [1.5, 1.])
    # Rewards are divided by the return std, not centred: 1 / 0.414578.
    self.assertAllClose(normalizer.normalize(tf.constant([1.])),
                        [1. / np.sqrt(0.171875)], atol=1e-4)
    # The filter continues across calls (and across episode ends):
    # env 0: 0.5 * 1.5 + 0 = 0.75; env 1: 0.5 * 1 + 1 = 1.5.
    normalizer.update(tf.constant([[0.], [1.]]))
    self.assertAllClose(normalizer.filter_state, [0.75, 1.5])
    # All six {1, 1.5, 2, 1, 0.75, 1.5}: mean 7.75 / 6 = 1.291667,
    # E[x^2] = 11.0625 / 6 = 1.84375, var = 1.84375 - 1.291667^2 = 0.175347.
    self.assertAllClose(normalizer.std(), np.sqrt(0.175347), atol=1e-5)

  def test_return_statistics_never_divide_by_a_zero_count(self):
    normalizer = normalizers.IntrinsicReturnNormalizer(gamma=0.5)
    normalizer.update(tf.constant([[1., 1.], [2., 0.]]))
    std = float(normalizer.std())
    # A batch without elements: its mean would be 0 / 0 and turn the
    # running statistics NaN for good; it leaves them unchanged.
    normalizer.update(tf.zeros([0, 2]))
    self.assertAllClose(normalizer.std(), std)
    self.assertAllClose(normalizer.normalize(tf.constant([1.])), [1. / std],
                        atol=1e-4)
    # With a count of 0 (a state built or restored by hand) the std is 0.
    count, = [v for v in normalizer.variables if 'count' in v.name]
    count.assign(tf.zeros_like(count))
    self.assertEqual(float(normalizer.std()), 0.0)

  def test_prediction_error_is_mean_over_features(self):
    # Row 0: ((1 - 0)^2 + (2 - 0)^2) / 2 = 2.5; row 1: (1 + 1) / 2 = 1.
    error = intrinsic_maths.prediction_error(tf.constant([[1., 2.], [0., 0.]]),
                                   tf.constant([[0., 0.], [1., 1.]]))
    self.assertAllClose(error, [2.5, 1.])

  def test_masked_mean(self):
    errors = tf.constant([1., 2., 3., 4.])
    # (1 + 3) / 2 = 2.
    self.assertAllClose(intrinsic_maths.masked_mean(errors, [1., 0., 1., 0.]), 2.)
    # Empty mask: 0 / max(0, 1) = 0.
    self.assertAllClose(intrinsic_maths.masked_mean(errors, [0., 0., 0., 0.]), 0.)

  def test_predictor_mask_proportion(self):
    mask = intrinsic_maths.predictor_update_mask([20000], 0.25, seed=3)
    self.assertAllInSet(mask.numpy(), [0., 1.])
    # Binomial std of the fraction: sqrt(0.25 * 0.75 / 20000) = 0.003.
    self.assertNear(float(tf.reduce_mean(mask)), 0.25, 0.015)
    self.assertAllEqual(intrinsic_maths.predictor_update_mask([5], 1.0), np.ones(5))

  def test_observation_keys_equal_exactly_for_equal_views(self):
    views = tf.constant([[[0., 1.], [1., 0.], [0., 1.], [0., 1.000001]]])
    keys = intrinsic_maths.observation_keys(views).numpy()[0]
    self.assertEqual(keys[0], keys[2])
    self.assertLen(set(keys[[0, 1, 3]]), 3)
    # The same view anywhere in a bigger batch gets the same key.
    tiled = tf.tile(views, [3, 5, 1])
    self.assertAllEqual(intrinsic_maths.observation_keys(tiled)[2, 14],
                        keys[2])

  def test_first_visits_within_each_episode_of_the_row(self):
    keys = tf.constant([[1, 2, 1, 1, 3, 2],
                        [5, 5, 5, 6, 5, 6]], tf.int64)
    step_types = tf.constant([[MID, MID, MID, FIRST, MID, MID],
                              [FIRST, MID, MID, MID, LAST, FIRST]])
    # Row 0: episodes {1, 2, 1} then {1, 3, 2}: the first 1 repeats.
    # Row 1: one episode {5, 5, 5, 6, 5}, then 6 starts a new one.
    self.assertAllEqual(
        intrinsic_maths.first_visits(keys, step_types),
        [[True, True, False, True, True, True],
         [True, False, False, True, False, True]])

  def test_explained_variance(self):
    targets = tf.constant([1., 2., 3.])
    weights = tf.ones([3])
    self.assertAllClose(
        maths.explained_variance(targets, targets, weights), 1.)
    # Predicting 0: residual variance = target variance -> 0.
    self.assertAllClose(
        maths.explained_variance(tf.zeros([3]), targets, weights), 0.)
    # Weights drop the last sample: targets {1, 2} predicted {1, 1}:
    # var(t) = 0.25, var(t - p) = var({0, 1}) = 0.25 -> 0.
    self.assertAllClose(
        maths.explained_variance(tf.constant([1., 1., 0.]), targets,
                                 tf.constant([1., 1., 0.])), 0.)


class RndObservationNormalizerTest(_TestCase):

  def test_whitens_and_clips_to_five(self):
    normalizer = normalizers.RndObservationNormalizer(
        tensor_spec.TensorSpec([2], tf.float32), clip_value=5.0)
    # Feature 0 sees {0, 2}: mean 1, var 1. Feature 1 sees {10, 10}: var 0.
    normalizer.update(tf.constant([[0., 10.], [2., 10.]]))
    out = normalizer.normalize(
        tf.constant([[100., 10.], [-100., 11.], [2., 10.]]))
    # (100 - 1) / 1 = 99 -> 5; (-100 - 1) -> -5; (2 - 1) / 1 = 1.
    # Feature 1: (10 - 10) = 0; (11 - 10) / sqrt(1e-8) = 1e4 -> 5.
    self.assertAllClose(out, [[5., 0.], [-5., 5.], [1., 0.]], atol=1e-4)

  def test_empty_batch_leaves_statistics_finite(self):
    normalizer = normalizers.RndObservationNormalizer(
        tensor_spec.TensorSpec([1], tf.float32))
    normalizer.update(tf.constant([[0.], [2.]]))
    normalizer.update(tf.zeros([0, 1]))
    mean, std = normalizer.mean_and_std()
    # {0, 2}: mean 1, std 1.
    self.assertAllClose(mean, [1.])
    self.assertAllClose(std, [1.])

  def test_disabled_is_identity(self):
    normalizer = normalizers.RndObservationNormalizer(
        tensor_spec.TensorSpec([1], tf.float32), enabled=False)
    normalizer.update(tf.constant([[0.], [2.]]))
    self.assertAllClose(normalizer.normalize(tf.constant([[100.]])),
                        [[100.]])


if __name__ == '__main__':
  tf.test.main()
