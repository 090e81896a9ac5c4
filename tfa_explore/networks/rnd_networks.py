"""Random Network Distillation target and predictor networks.

Burda et al. 2018, appendix: the target is a conv torso + 1 linear layer,
the predictor the same conv torso + 3 linear layers (two ReLU hidden layers
and a linear output), both with a 512-dimensional output; conv layers use
leaky ReLU. The target is fixed at its random initialisation: its layers are
built non-trainable, so it has no trainable variables at all.
"""

import math
from typing import Optional, Sequence, Tuple

import gin
import tensorflow as tf
from tf_agents.networks import network
from tf_agents.networks import utils
from tf_agents.utils import nest_utils

# The paper's conv torso: (filters, kernel_size, stride).
ATARI_CONV_LAYER_PARAMS = ((32, 8, 4), (64, 4, 2), (64, 3, 1))
PAPER_OUTPUT_DIM = 512


@gin.configurable(denylist=['observation'])
def last_frame(observation):
  """Keeps only the last channel of a `[..., H, W, C]` frame stack.

  The paper feeds the RND networks the latest frame only, so the novelty of
  a state does not depend on the frames that led to it.
  """
  return observation[..., -1:]


class RndNetwork(network.Network):
  """Feed-forward feature network: conv torso, dense layers, linear output."""

  def __init__(self,
               input_tensor_spec,
               conv_layer_params: Sequence[Tuple[int, int, int]] = (),
               torso_fc_layer_params: Sequence[int] = (),
               head_fc_layer_params: Sequence[int] = (),
               output_dim: int = PAPER_OUTPUT_DIM,
               trainable: bool = True,
               name: str = 'RndNetwork'):
    """Creates the network.

    Args:
      input_tensor_spec: Spec of one (normalised) RND input, a single tensor.
      conv_layer_params: Conv layers `(filters, kernel, stride)`, leaky ReLU.
      torso_fc_layer_params: Dense layers after the convs, leaky ReLU (the
        torso of the MLP variant).
      head_fc_layer_params: Dense ReLU layers before the output; the paper's
        predictor has two of 512, its target none.
      output_dim: Feature size (512 in the paper).
      trainable: False for the fixed random target.
      name: Network name.
    """
    super().__init__(input_tensor_spec=input_tensor_spec, state_spec=(),
                     name=name)
    if tf.nest.is_nested(input_tensor_spec):
      raise ValueError('RndNetwork takes a single tensor input, got '
                       f'{input_tensor_spec}.')
    # Orthogonal init with gain sqrt(2), as in the paper's code release. A
    # fresh initializer per layer: an unseeded Keras initializer instance
    # returns the same values on every call.
    def initializer():
      return tf.keras.initializers.Orthogonal(gain=math.sqrt(2.0))

    leaky_relu = tf.nn.leaky_relu
    layers = []
    for filters, kernel_size, stride in conv_layer_params:
      layers.append(tf.keras.layers.Conv2D(
          filters, kernel_size, strides=stride, activation=leaky_relu,
          kernel_initializer=initializer(), trainable=trainable))
    if conv_layer_params or len(input_tensor_spec.shape) > 1:
      layers.append(tf.keras.layers.Flatten())
    for units in torso_fc_layer_params:
      layers.append(tf.keras.layers.Dense(
          units, activation=leaky_relu, kernel_initializer=initializer(),
          trainable=trainable))
    for units in head_fc_layer_params:
      layers.append(tf.keras.layers.Dense(
          units, activation=tf.nn.relu, kernel_initializer=initializer(),
          trainable=trainable))
    layers.append(tf.keras.layers.Dense(
        output_dim, activation=None,
        kernel_initializer=tf.keras.initializers.Orthogonal(gain=1.0),
        trainable=trainable))
    self._feature_layers = layers
    self._output_dim = output_dim

  @property
  def output_dim(self):
    return self._output_dim

  def call(self, observation, step_type=None, network_state=(),
           training=False):
    del step_type
    outer_rank = nest_utils.get_outer_rank(observation,
                                           self.input_tensor_spec)
    batch_squash = utils.BatchSquash(outer_rank)
    features = batch_squash.flatten(tf.cast(observation, tf.float32))
    for layer in self._feature_layers:
      features = layer(features, training=training)
    return batch_squash.unflatten(features), network_state


@gin.configurable(denylist=['input_tensor_spec'])
def rnd_conv_networks(
    input_tensor_spec,
    conv_layer_params: Sequence[Tuple[int, int, int]] = (
        ATARI_CONV_LAYER_PARAMS),
    predictor_fc_layer_params: Sequence[int] = (512, 512),
    output_dim: int = PAPER_OUTPUT_DIM,
) -> Tuple[RndNetwork, RndNetwork]:
  """The paper's image pair: `(target, predictor)`.

  Args:
    input_tensor_spec: Spec of the RND input, e.g. `[84, 84, 1]` (the last
      frame, see `last_frame`).
    conv_layer_params: Shared conv architecture (paper: 32x8/4, 64x4/2,
      64x3/1).
    predictor_fc_layer_params: Hidden ReLU layers of the predictor (paper:
      two of 512), which make it deeper than the target.
    output_dim: Feature size (512).
  """
  target = RndNetwork(input_tensor_spec, conv_layer_params=conv_layer_params,
                      output_dim=output_dim, trainable=False,
                      name='RndTargetNetwork')
  predictor = RndNetwork(input_tensor_spec,
                         conv_layer_params=conv_layer_params,
                         head_fc_layer_params=predictor_fc_layer_params,
                         output_dim=output_dim, name='RndPredictorNetwork')
  return target, predictor


@gin.configurable(denylist=['input_tensor_spec'])
def rnd_mlp_networks(
    input_tensor_spec,
    torso_fc_layer_params: Sequence[int] = (64, 64),
    predictor_fc_layer_params: Sequence[int] = (512, 512),
    output_dim: int = PAPER_OUTPUT_DIM,
    name_prefix: Optional[str] = None,
) -> Tuple[RndNetwork, RndNetwork]:
  """The vector-observation pair: the paper's design with an MLP torso.

  Target: torso + 1 linear; predictor: torso + hidden ReLU layers + linear.
  The paper only gives the image architecture; the torso sizes here are ours.

  Args:
    input_tensor_spec: Spec of the RND input (a vector).
    torso_fc_layer_params: Leaky-ReLU dense torso of both networks.
    predictor_fc_layer_params: Extra hidden ReLU layers of the predictor.
    output_dim: Feature size (512).
    name_prefix: Optional prefix of the network names.
  """
  prefix = name_prefix or 'Rnd'
  target = RndNetwork(input_tensor_spec,
                      torso_fc_layer_params=torso_fc_layer_params,
                      output_dim=output_dim, trainable=False,
                      name=prefix + 'TargetNetwork')
  predictor = RndNetwork(input_tensor_spec,
                         torso_fc_layer_params=torso_fc_layer_params,
                         head_fc_layer_params=predictor_fc_layer_params,
                         output_dim=output_dim,
                         name=prefix + 'PredictorNetwork')
  return target, predictor
