"""R2D3 demonstration losses against hand-computed numbers."""

import numpy as np
import tensorflow as tf

from tfa_explore.agents.r2d3 import losses
from tfa_explore.testing import r2d3 as support


class LargeMarginTest(support.TestCase):

  def test_per_step_hand_computed(self):
    q = tf.constant([[1.0, 2.0, 0.5],
                     [1.0, 2.0, 0.5],
                     [1.0, 1.5, 0.2]])
    # Row 0, a_E = 0: max(1.0 + 0, 2.0 + 0.8, 0.5 + 0.8) - 1.0 = 2.8 - 1.0.
    # Row 1, a_E = 1: max(1.0 + 0.8, 2.0 + 0, 0.5 + 0.8) - 2.0 = 2.0 - 2.0.
    # Row 2, a_E = 1: max(1.8, 1.5, 1.0) - 1.5 = 0.3 (inside the margin).
    per_step = losses.large_margin_per_step(q, [0, 1, 1], margin=0.8)
    self.assertAllClose(per_step, [1.8, 0.0, 0.3])

  def test_batch_loss_counts_demo_sequences_only(self):
    q = tf.constant([[[1.0, 2.0, 0.5], [1.0, 1.5, 0.2], [9.0, 0.0, 0.0]],
                     [[1.0, 2.0, 0.5], [1.0, 2.0, 0.5], [1.0, 2.0, 0.5]]])
    actions = tf.constant([[0, 1, 2], [0, 0, 0]])
    mask = tf.constant([[True, True, False], [True, True, True]])
    # Sequence 0 (demo): steps 1.8 and 0.3, third masked -> mean 1.05.
    # Sequence 1 (agent): 0 whatever its values. Batch mean (1.05 + 0) / 2.
    loss = losses.large_margin_loss(q, actions, mask, is_demo=[True, False],
                                    margin=0.8)
    self.assertAllClose(loss, 0.525)
    # Importance weights scale each sequence: 0.5 * 1.05 / 2.
    weighted = losses.large_margin_loss(q, actions, mask, [True, False], 0.8,
                                        weights=[0.5, 1.0])
    self.assertAllClose(weighted, 0.2625)

  def test_zero_loss_and_gradient_on_agent_samples(self):
    q = tf.Variable(np.random.default_rng(0).normal(size=(3, 4, 5)),
                    dtype=tf.float32)
    actions = tf.zeros([3, 4], tf.int32)
    with tf.GradientTape() as tape:
      loss = losses.large_margin_loss(q, actions, tf.ones([3, 4], tf.bool),
                                      is_demo=[False, False, False])
    self.assertEqual(float(loss), 0.0)
    self.assertAllEqual(tape.gradient(loss, q), tf.zeros_like(q))

  def test_masked_nan_does_not_leak(self):
    q = tf.constant([[[np.nan, 0.0], [1.0, 0.0]]])
    loss = losses.large_margin_loss(q, [[0, 0]], [[False, True]], [True])
    # Step 1: max(1.0, 0.0 + 0.8) - 1.0 = 0.
    self.assertAllClose(loss, 0.0)

  def test_l2_regularization(self):
    # 0.5 * (1 + 4 + 9) = 7.
    value = losses.l2_regularization(
        [tf.constant([1.0, 2.0]), tf.constant([[3.0]])])
    self.assertAllClose(value, 7.0)


if __name__ == '__main__':
  tf.test.main()
