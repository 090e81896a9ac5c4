"""Tests of tfa_explore.networks.recurrent_dueling_q_network."""

from absl.testing import parameterized
import numpy as np
import tensorflow as tf
from tf_agents.policies import q_policy
from tf_agents.specs import array_spec
from tf_agents.specs import tensor_spec
from tf_agents.trajectories import time_step as ts

from tfa_explore.networks import recurrent_dueling_q_network as rdqn

FIRST = ts.StepType.FIRST
MID = ts.StepType.MID
LAST = ts.StepType.LAST

NUM_ACTIONS = 3
ACTION_SPEC = tensor_spec.BoundedTensorSpec((), tf.int64, 0, NUM_ACTIONS - 1)
VECTOR_SPEC = tf.TensorSpec((4,), tf.float32)


class _TestCase(tf.test.TestCase, parameterized.TestCase):
  # tf.test.TestCase's deprecated `test_session` context manager is not a
  # test, but pytest collects it by name and reports it as skipped.
  test_session = None

  def setUp(self):
    super().setUp()
    tf.random.set_seed(0)
    self.rng = np.random.default_rng(0)


def _vector_network(lstm_size=8):
  return rdqn.RecurrentDuelingQNetwork(
      rdqn.make_input_spec(VECTOR_SPEC, ACTION_SPEC), ACTION_SPEC,
      torso_fc_layer_params=(16,), lstm_size=lstm_size,
      dueling_fc_layer_params=(16,))


def _vector_inputs(rng, outer_shape):
  return {
      'observation': tf.constant(
          rng.normal(size=outer_shape + (4,)), tf.float32),
      'prev_action': tf.constant(
          rng.integers(0, NUM_ACTIONS, size=outer_shape), tf.int64),
      'prev_reward': tf.constant(rng.normal(size=outer_shape), tf.float32),
  }


def _at_time(inputs, t):
  return tf.nest.map_structure(lambda x: x[:, t], inputs)


def _replace(inputs, key, batch, time, value):
  """Copy of `inputs` with inputs[key][batch, time] = value."""
  changed = dict(inputs)
  array = inputs[key].numpy().copy()
  array[batch, time] = value
  changed[key] = tf.constant(array)
  return changed


class ShapesTest(_TestCase):

  def test_vector_single_step_and_sequence(self):
    network = _vector_network(lstm_size=8)
    state = network.get_initial_state(batch_size=2)
    q_values, next_state = network(
        _vector_inputs(self.rng, (2,)), step_type=tf.constant([FIRST, MID]),
        network_state=state)
    self.assertEqual(q_values.shape, (2, NUM_ACTIONS))
    self.assertEqual([s.shape for s in next_state], [(2, 8), (2, 8)])

    q_values, next_state = network(
        _vector_inputs(self.rng, (2, 5)),
        step_type=tf.fill((2, 5), tf.constant(MID)), network_state=state)
    self.assertEqual(q_values.shape, (2, 5, NUM_ACTIONS))
    self.assertEqual([s.shape for s in next_state], [(2, 8), (2, 8)])

  def test_paper_atari_configuration(self):
    # R2D2 on Atari: 84x84x4 uint8 frames, conv stack + 512 dense, LSTM 512,
    # dueling streams of 512.
    observation_spec = tf.TensorSpec((84, 84, 4), tf.uint8)
    network = rdqn.RecurrentDuelingQNetwork(
        rdqn.make_input_spec(observation_spec, ACTION_SPEC), ACTION_SPEC,
        conv_layer_params=rdqn.ATARI_CONV_LAYER_PARAMS,
        torso_fc_layer_params=(512,), lstm_size=512,
        dueling_fc_layer_params=(512,))
    self.assertEqual([s.shape for s in network.state_spec],
                     [(512,), (512,)])
    inputs = {
        'observation': tf.constant(
            self.rng.integers(0, 256, size=(2, 3, 84, 84, 4)), tf.uint8),
        'prev_action': tf.zeros((2, 3), tf.int64),
        'prev_reward': tf.zeros((2, 3)),
    }
    q_values, next_state = network(
        inputs, step_type=tf.fill((2, 3), tf.constant(MID)),
        network_state=network.get_initial_state(2))
    self.assertEqual(q_values.shape, (2, 3, NUM_ACTIONS))
    self.assertEqual([s.shape for s in next_state], [(2, 512), (2, 512)])
    # conv output 7x7x64 = 3136 feeds the 512 dense layer.
    torso_dense = network._torso_dense_layers[0]
    self.assertEqual(torso_dense.kernel.shape, (3136, 512))
    # The LSTM input is torso 512 + one-hot action 3 + reward 1 = 516.
    lstm_kernel = network._lstm.cell.kernel
    self.assertEqual(lstm_kernel.shape, (516, 4 * 512))

  def test_uint8_images_are_scaled_to_unit_range(self):
    def make(dtype):
      return rdqn.RecurrentDuelingQNetwork(
          rdqn.make_input_spec(tf.TensorSpec((12, 12, 2), dtype), ACTION_SPEC),
          ACTION_SPEC, conv_layer_params=((4, 3, 2),),
          torso_fc_layer_params=(8,), lstm_size=4,
          dueling_fc_layer_params=(8,))
    pixels = self.rng.integers(0, 256, size=(2, 12, 12, 2))
    self._assert_same_q_values(make(tf.uint8), tf.constant(pixels, tf.uint8),
                               make(tf.float32),
                               tf.constant(pixels / 255.0, tf.float32))

  def test_image_scale_one_keeps_one_hot_planes(self):
    # MiniGrid's one-hot planes are uint8 0/1: image_scale=1 feeds them as
    # 0.0/1.0, like the same planes given as float32.
    def make(dtype, image_scale):
      return rdqn.RecurrentDuelingQNetwork(
          rdqn.make_input_spec(tf.TensorSpec((5, 5, 3), dtype), ACTION_SPEC),
          ACTION_SPEC, conv_layer_params=((4, 2, 1),),
          torso_fc_layer_params=(8,), lstm_size=4,
          dueling_fc_layer_params=(8,), image_scale=image_scale)
    planes = self.rng.integers(0, 2, size=(2, 5, 5, 3))
    self._assert_same_q_values(make(tf.uint8, 1.0),
                               tf.constant(planes, tf.uint8),
                               make(tf.float32, None),
                               tf.constant(planes, tf.float32))

  def _assert_same_q_values(self, uint8_network, uint8_observation,
                            float_network, float_observation):
    """Same weights in both networks; equal Q on the two observations."""
    uint8_network.create_variables()
    float_network.create_variables()
    float_network.set_weights(uint8_network.get_weights())
    common = {'prev_action': tf.constant([0, 1], tf.int64),
              'prev_reward': tf.constant([0.0, 1.0])}
    q_uint8, _ = uint8_network(dict(common, observation=uint8_observation),
                               step_type=tf.constant([MID, MID]))
    q_float, _ = float_network(dict(common, observation=float_observation),
                               step_type=tf.constant([MID, MID]))
    self.assertAllClose(q_uint8, q_float, rtol=1e-5, atol=1e-6)

  def test_state_specs(self):
    self.assertEqual(
        [(s.shape, s.dtype) for s in _vector_network(lstm_size=8).state_spec],
        [((8,), tf.float32), ((8,), tf.float32)])
    feed_forward = _vector_network(lstm_size=None)
    self.assertEqual(feed_forward.state_spec, ())
    self.assertEqual(feed_forward.get_initial_state(3), ())

  def test_input_spec_from_array_specs(self):
    # A PyEnvironment's numpy specs work as well as tensor specs.
    input_spec = rdqn.make_input_spec(
        array_spec.ArraySpec((4,), np.float32),
        array_spec.BoundedArraySpec((), np.int64, 0, NUM_ACTIONS - 1))
    self.assertEqual(input_spec['observation'],
                     tf.TensorSpec((4,), tf.float32))
    self.assertEqual(input_spec['prev_action'], ACTION_SPEC)
    self.assertEqual(input_spec['prev_reward'], tf.TensorSpec((), tf.float32))

  def test_copy_builds_an_independent_target_network(self):
    network = _vector_network()
    target = network.copy(name='target')
    self.assertEqual(network.create_variables(), target.create_variables())
    self.assertEqual(target.state_spec, network.state_spec)
    self.assertNotEmpty(network.variables)
    self.assertEmpty({id(v) for v in network.variables} &
                     {id(v) for v in target.variables})


class RecurrenceTest(_TestCase):

  @parameterized.named_parameters(('lstm', 8), ('feed_forward', None))
  def test_step_by_step_equals_sequence(self, lstm_size):
    network = _vector_network(lstm_size)
    inputs = _vector_inputs(self.rng, (3, 6))
    # Row 1 starts a new episode at t = 3, so the reset must match too.
    step_types = tf.constant([[FIRST, MID, MID, MID, MID, LAST],
                              [MID, MID, LAST, FIRST, MID, MID],
                              [MID] * 6])
    if lstm_size is None:
      initial_state = ()
    else:
      initial_state = [
          tf.constant(self.rng.normal(size=(3, lstm_size)), tf.float32)
          for _ in range(2)
      ]
    sequence_q, sequence_state = network(
        inputs, step_type=step_types, network_state=initial_state)

    state = initial_state
    step_q = []
    for t in range(6):
      q_values, state = network(
          _at_time(inputs, t), step_type=step_types[:, t],
          network_state=state)
      step_q.append(q_values)
    self.assertAllClose(tf.stack(step_q, axis=1), sequence_q,
                        rtol=1e-5, atol=1e-5)
    self.assertAllClose(state, sequence_state, rtol=1e-5, atol=1e-5)

  @parameterized.named_parameters(('resets', True), ('no_step_types', False))
  def test_static_unroll_equals_while_loop(self, with_step_types):
    static = _vector_network()
    loop = rdqn.RecurrentDuelingQNetwork(
        rdqn.make_input_spec(VECTOR_SPEC, ACTION_SPEC), ACTION_SPEC,
        torso_fc_layer_params=(16,), lstm_size=8,
        dueling_fc_layer_params=(16,), static_unroll=False)
    static.create_variables()
    loop.create_variables()
    for a, b in zip(static.variables, loop.variables):
      b.assign(a + 0.0)
    inputs = _vector_inputs(self.rng, (3, 6))
    step_types = (tf.constant([[FIRST, MID, MID, MID, MID, LAST],
                               [MID, MID, LAST, FIRST, MID, MID],
                               [MID] * 6]) if with_step_types else None)
    state = [tf.constant(self.rng.normal(size=(3, 8)), tf.float32)
             for _ in range(2)]

    def q_and_gradients(network):
      # In a graph, where the sequence length is static: the unrolled path.
      @tf.function(autograph=False)
      def run():
        with tf.GradientTape() as tape:
          q_values, next_state = network(inputs, step_type=step_types,
                                         network_state=state)
          loss = tf.reduce_sum(q_values ** 2)
        return (q_values, next_state,
                tape.gradient(loss, network.trainable_weights))
      return run()

    self.assertAllClose(q_and_gradients(static), q_and_gradients(loop),
                        rtol=1e-5, atol=1e-5)
    # The two paths differ in the graph: one while loop, or none.
    def has_while_loop(network):
      graph = tf.function(lambda: network(
          inputs, step_type=step_types, network_state=state)
                          ).get_concrete_function().graph
      return any(op.type in ('While', 'StatelessWhile')
                 for op in graph.get_operations())
    self.assertFalse(has_while_loop(static))
    self.assertTrue(has_while_loop(loop))
    # For XLA (`R2D2Agent(jit_compile=True)`), one graph at a time.
    with rdqn.while_loop_unroll():
      self.assertTrue(has_while_loop(static))
    self.assertFalse(has_while_loop(static))

  def test_lstm_remembers_and_feed_forward_does_not(self):
    step_types = tf.fill((1, 4), tf.constant(MID))
    inputs = _vector_inputs(self.rng, (1, 4))
    changed = _replace(inputs, 'observation', 0, 0, [5.0, -5.0, 5.0, -5.0])
    for lstm_size, remembers in ((8, True), (None, False)):
      network = _vector_network(lstm_size)
      q_values, _ = network(inputs, step_type=step_types)
      q_changed, _ = network(changed, step_type=step_types)
      later_difference = np.abs(q_values[0, 3] - q_changed[0, 3]).max()
      if remembers:
        self.assertGreater(later_difference, 1e-4)
      else:
        self.assertEqual(later_difference, 0.0)

  def test_first_step_resets_state(self):
    network = _vector_network()
    inputs = _vector_inputs(self.rng, (2,))
    random_state = [tf.constant(self.rng.normal(size=(2, 8)), tf.float32)
                    for _ in range(2)]
    first = tf.constant([FIRST, FIRST])
    q_from_random, _ = network(inputs, step_type=first,
                               network_state=random_state)
    q_from_zero, _ = network(inputs, step_type=first,
                             network_state=network.get_initial_state(2))
    self.assertAllClose(q_from_random, q_from_zero)
    # Without step types nothing is reset, so the stored state matters.
    q_no_reset, _ = network(inputs, step_type=None,
                            network_state=random_state)
    self.assertGreater(np.abs(q_no_reset - q_from_zero).max(), 1e-4)


class PreviousActionAndRewardTest(_TestCase):

  @parameterized.named_parameters(
      ('action_lstm', 'prev_action', 8), ('reward_lstm', 'prev_reward', 8),
      ('action_feed_forward', 'prev_action', None),
      ('reward_feed_forward', 'prev_reward', None))
  def test_influence_on_mid_steps_not_on_first_steps(self, key, lstm_size):
    network = _vector_network(lstm_size)
    inputs = _vector_inputs(self.rng, (2, 3))
    inputs['prev_action'] = tf.zeros((2, 3), tf.int64)
    inputs['prev_reward'] = tf.zeros((2, 3))
    step_types = tf.constant([[MID, MID, MID], [FIRST, MID, MID]])
    new_value = 2 if key == 'prev_action' else 10.0
    q_values, _ = network(inputs, step_type=step_types)
    q_mid_changed, _ = network(_replace(inputs, key, 0, 1, new_value),
                               step_type=step_types)
    self.assertGreater(np.abs(q_values[0, 1] - q_mid_changed[0, 1]).max(),
                       1e-4)
    # On FIRST steps they are zeroed: a value carried over from the previous
    # episode changes nothing.
    q_first_changed, _ = network(_replace(inputs, key, 1, 0, new_value),
                                 step_type=step_types)
    self.assertAllEqual(q_values, q_first_changed)


class DuelingTest(_TestCase):

  @parameterized.named_parameters(('lstm', 8), ('feed_forward', None))
  def test_q_is_value_plus_centred_advantage(self, lstm_size):
    network = _vector_network(lstm_size)
    inputs = _vector_inputs(self.rng, (2, 5))
    step_types = tf.fill((2, 5), tf.constant(MID))
    outputs, _ = network.dueling_outputs(inputs, step_type=step_types)
    q_values, _ = network(inputs, step_type=step_types)
    self.assertEqual(outputs.value.shape, (2, 5))
    self.assertAllClose(outputs.q_values, q_values)
    q_minus_value = outputs.q_values - outputs.value[..., None]
    # mean_a (Q - V) = mean_a (A - mean A) = 0 ...
    self.assertAllClose(tf.reduce_mean(q_minus_value, -1),
                        tf.zeros((2, 5)), atol=1e-6)
    # ... and Q - V is the advantage stream shifted by its mean. Both fail
    # for e.g. a max-centred or uncentred combination, since the raw
    # advantages are not centred:
    centred = outputs.advantages - tf.reduce_mean(
        outputs.advantages, -1, keepdims=True)
    self.assertAllClose(q_minus_value, centred, atol=1e-6)
    self.assertGreater(
        np.abs(tf.reduce_mean(outputs.advantages, -1)).max(), 1e-4)


class PolicyIntegrationTest(_TestCase):

  def test_q_policy_acts_and_carries_state(self):
    network = _vector_network(lstm_size=8)
    time_step_spec = ts.time_step_spec(network.input_tensor_spec)
    policy = q_policy.QPolicy(time_step_spec, ACTION_SPEC, network)
    self.assertEqual(
        [s.shape for s in tf.nest.flatten(policy.policy_state_spec)],
        [(8,), (8,)])
    time_step = ts.restart(_vector_inputs(self.rng, (2,)), batch_size=2)
    policy_step = policy.action(time_step, policy.get_initial_state(2))
    self.assertEqual(policy_step.action.shape, (2,))
    self.assertEqual(policy_step.action.dtype, tf.int64)
    self.assertEqual([s.shape for s in policy_step.state], [(2, 8), (2, 8)])
    self.assertGreater(np.abs(policy_step.state[0]).max(), 0.0)


class SpecValidationTest(_TestCase):

  def test_observation_only_input_is_rejected(self):
    with self.assertRaisesRegex(ValueError, 'prev_action'):
      rdqn.RecurrentDuelingQNetwork(
          VECTOR_SPEC, ACTION_SPEC, torso_fc_layer_params=(4,), lstm_size=4,
          dueling_fc_layer_params=(4,))

  def test_image_needs_conv_and_vector_refuses_it(self):
    image_spec = tf.TensorSpec((8, 8, 1), tf.uint8)
    with self.assertRaisesRegex(ValueError, 'conv_layer_params'):
      rdqn.RecurrentDuelingQNetwork(
          rdqn.make_input_spec(image_spec, ACTION_SPEC), ACTION_SPEC,
          torso_fc_layer_params=(4,), lstm_size=4,
          dueling_fc_layer_params=(4,))
    with self.assertRaisesRegex(ValueError, 'vector'):
      rdqn.RecurrentDuelingQNetwork(
          rdqn.make_input_spec(VECTOR_SPEC, ACTION_SPEC), ACTION_SPEC,
          conv_layer_params=((4, 3, 1),), torso_fc_layer_params=(4,),
          lstm_size=4, dueling_fc_layer_params=(4,))

  def test_continuous_actions_are_rejected(self):
    continuous = tensor_spec.BoundedTensorSpec((), tf.float32, -1.0, 1.0)
    with self.assertRaisesRegex(ValueError, 'action_spec'):
      rdqn.RecurrentDuelingQNetwork(
          rdqn.make_input_spec(VECTOR_SPEC, continuous), continuous,
          torso_fc_layer_params=(4,), lstm_size=4,
          dueling_fc_layer_params=(4,))


if __name__ == '__main__':
  tf.test.main()
