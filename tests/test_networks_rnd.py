"""DualValueNetwork and the RND target/predictor networks."""

import tensorflow as tf
from tf_agents.specs import tensor_spec

from tfa_explore import networks


class _TestCase(tf.test.TestCase):
  # tf.test.TestCase.test_session is a deprecated helper, not a test.
  test_session = None


class DualValueNetworkTest(_TestCase):

  def test_two_heads_share_a_torso(self):
    spec = tensor_spec.TensorSpec([3], tf.float32)
    net = networks.DualValueNetwork(spec, fc_layer_params=(8,))
    values, _ = net(tf.ones([2, 5, 3]))  # [batch, time] outer dims.
    self.assertEqual(set(values), {'extrinsic', 'intrinsic'})
    self.assertEqual(values['extrinsic'].shape, (2, 5))
    self.assertEqual(values['intrinsic'].shape, (2, 5))
    # Torso (kernel + bias) + two heads (kernel + bias each).
    self.assertLen(net.trainable_variables, 6)
    with tf.GradientTape() as tape:
      values, _ = net(tf.ones([2, 3]))
      loss = tf.reduce_sum(values['intrinsic'])
    grads = tape.gradient(loss, net.trainable_variables)
    # The intrinsic loss reaches the shared torso and its own head only.
    self.assertEqual(sum(g is not None for g in grads), 4)


class RndNetworksTest(_TestCase):

  def test_mlp_pair(self):
    spec = tensor_spec.TensorSpec([4], tf.float32)
    target, predictor = networks.rnd_mlp_networks(
        spec, torso_fc_layer_params=(16,), predictor_fc_layer_params=(32, 32),
        output_dim=8)
    target.create_variables()
    predictor.create_variables()
    self.assertEmpty(target.trainable_variables)
    # Target: torso + linear = 2 dense layers; predictor: torso + 3 linear.
    self.assertLen(target.variables, 4)
    self.assertLen(predictor.trainable_variables, 8)
    out, _ = predictor(tf.ones([3, 2, 4]))
    self.assertEqual(out.shape, (3, 2, 8))

  def test_paper_conv_pair_on_last_frame(self):
    frames = tf.random.uniform([2, 84, 84, 4])
    last = networks.last_frame(frames)
    self.assertEqual(last.shape, (2, 84, 84, 1))
    self.assertAllEqual(last[..., 0], frames[..., 3])
    spec = tensor_spec.TensorSpec([84, 84, 1], tf.float32)
    target, predictor = networks.rnd_conv_networks(spec)
    target_out, _ = target(last)
    predictor_out, _ = predictor(last)
    self.assertEqual(target_out.shape, (2, 512))
    self.assertEqual(predictor_out.shape, (2, 512))
    self.assertEmpty(target.trainable_variables)
    # 3 convs + 1 linear vs 3 convs + 3 linear (kernel + bias each).
    self.assertLen(target.variables, 8)
    self.assertLen(predictor.trainable_variables, 12)


if __name__ == '__main__':
  tf.test.main()
