"""The shared Adam factory: constant or linearly decaying learning rate."""

from absl.testing import absltest
import numpy as np
import tensorflow as tf

from tfa_explore.utils import optimizers


def _updates(optimizer, steps):
  """Size of each of `steps` Adam updates of one variable, gradient 1."""
  var = tf.Variable(0.0)
  sizes = []
  for _ in range(steps):
    before = float(var.numpy())
    optimizer.apply_gradients([(tf.constant(1.0), var)])
    sizes.append(abs(float(var.numpy()) - before))
  return sizes


class AdamOptimizerTest(absltest.TestCase):

  def test_constant_rate(self):
    # Adam's first steps with a constant gradient move by ~lr each.
    sizes = _updates(optimizers.adam_optimizer(0.1, None, 1e-8), 3)
    np.testing.assert_allclose(sizes, [0.1, 0.1, 0.1], rtol=1e-4)

  def test_linear_decay_to_zero_then_frozen(self):
    # Step k (0-based) uses lr * (1 - k / 2): 0.1, 0.05, then 0 for good.
    sizes = _updates(optimizers.adam_optimizer(0.1, 2, 1e-8), 4)
    np.testing.assert_allclose(sizes, [0.1, 0.05, 0.0, 0.0], rtol=1e-4,
                               atol=1e-7)

  def test_bad_decay_steps_is_named(self):
    with self.assertRaisesRegex(ValueError, 'learning_rate_decay_steps.*0'):
      optimizers.adam_optimizer(0.1, 0, 1e-8)


if __name__ == '__main__':
  absltest.main()
