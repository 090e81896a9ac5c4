"""A value network with an extrinsic and an intrinsic head on one torso.

RND-PPO (Burda et al. 2018, section 2.3) fits the two return streams with
separate heads because they differ in discount and episodicity.
"""

import tensorflow as tf
from tf_agents.networks import encoding_network
from tf_agents.networks import network

EXTRINSIC = 'extrinsic'
INTRINSIC = 'intrinsic'


class DualValueNetwork(network.Network):
  """Emits `{'extrinsic': V_E, 'intrinsic': V_I}`, each shaped like the batch.

  Not a gin configurable: `ppo.ppo_clip_agent` builds it and passes every
  argument itself, so a binding of the class would be silently ignored.

  The output is a dict of two scalar values per observation, which TF-Agents'
  `nest_utils.assert_value_spec` accepts as a value network output.
  """

  def __init__(self,
               input_tensor_spec,
               preprocessing_layers=None,
               preprocessing_combiner=None,
               conv_layer_params=None,
               fc_layer_params=(75, 40),
               activation_fn=tf.keras.activations.relu,
               kernel_initializer=None,
               batch_squash=True,
               dtype=tf.float32,
               name='DualValueNetwork'):
    """Creates the network.

    Args:
      input_tensor_spec: Observation spec (nest allowed with preprocessing).
      preprocessing_layers: See `EncodingNetwork`.
      preprocessing_combiner: See `EncodingNetwork`.
      conv_layer_params: `(filters, kernel_size, stride)` tuples of the torso.
      fc_layer_params: Units of the torso's dense layers.
      activation_fn: Activation of the torso.
      kernel_initializer: Initializer of the torso's kernels.
      batch_squash: See `EncodingNetwork`.
      dtype: Layer dtype.
      name: Network name.
    """
    super().__init__(input_tensor_spec=input_tensor_spec, state_spec=(),
                     name=name)
    if not kernel_initializer:
      kernel_initializer = tf.compat.v1.keras.initializers.glorot_uniform()
    self._torso = encoding_network.EncodingNetwork(
        input_tensor_spec,
        preprocessing_layers=preprocessing_layers,
        preprocessing_combiner=preprocessing_combiner,
        conv_layer_params=conv_layer_params,
        fc_layer_params=fc_layer_params,
        activation_fn=activation_fn,
        kernel_initializer=kernel_initializer,
        batch_squash=batch_squash,
        dtype=dtype)

    def _head(head_name):
      return tf.keras.layers.Dense(
          1,
          activation=None,
          kernel_initializer=tf.random_uniform_initializer(-0.03, 0.03),
          name=head_name)

    self._extrinsic_head = _head('extrinsic_value')
    self._intrinsic_head = _head('intrinsic_value')

  def call(self, observation, step_type=None, network_state=(),
           training=False):
    features, network_state = self._torso(
        observation, step_type=step_type, network_state=network_state,
        training=training)
    values = {
        EXTRINSIC: tf.squeeze(self._extrinsic_head(features), -1),
        INTRINSIC: tf.squeeze(self._intrinsic_head(features), -1),
    }
    return values, network_state
