"""R2D2's Q network with an ensemble of Q heads and random prior functions.

`EnsembleQNetwork` is a `RecurrentDuelingQNetwork` whose core (torso and
LSTM) also feeds K Q heads, each with an additive prior function that is
never trained (Osband et al. 2018, "Randomized Prior Functions for Deep
Reinforcement Learning", Section 4):

    Q_k(s, a) = f_k(core(s), a) + prior_scale * p_k(o, a)

* f_k: a head of its own (an MLP over the core's output), trained;
* p_k: a random MLP over the flattened observation o, fixed at
  initialisation (non-trainable variables, copied to the target network
  with the rest and published to the actors with the Q network).

The heads share the core, as Bootstrapped DQN's heads share their torso
(Osband et al. 2016, Section 5); bsuite's `boot_dqn` gives every member
a network of its own, which costs K times the torso. Where the data says
nothing (an action not yet taken in a state), Q_k is its prior's guess,
which differs from head to head: an agent that follows one head for a
whole episode (`agents.bootstrap`) acts on one consistent guess and walks
on into the unknown, where epsilon-greedy dithers.

`q_heads` returns `ENSEMBLE`: `[..., K, A]` beside Q_E (`call`, the
dueling head the greedy policy acts on).
"""

import numpy as np
import tensorflow as tf
from tf_agents.networks import utils as network_utils

from tfa_explore.networks import recurrent_dueling_q_network as rdqn

ENSEMBLE = 'ensemble'


class EnsembleDense(tf.keras.layers.Layer):
  """K dense layers applied at once: `[N, D]` or `[N, K, D]` -> `[N, K, U]`.

  Each member has its own weights, Glorot-uniform initialised as a
  `Dense(units)` of the same fan-in would be.
  """

  def __init__(self, num_members, units, activation=None, **kwargs):
    super().__init__(**kwargs)
    self._num_members = int(num_members)
    self._units = int(units)
    self._activation = tf.keras.activations.get(activation)

  def build(self, input_shape):
    fan_in = int(input_shape[-1])
    limit = np.sqrt(6.0 / (fan_in + self._units))
    self.kernel = self.add_weight(
        'kernel', shape=(self._num_members, fan_in, self._units),
        initializer=tf.keras.initializers.RandomUniform(-limit, limit),
        trainable=self.trainable)
    self.bias = self.add_weight(
        'bias', shape=(self._num_members, self._units),
        initializer='zeros', trainable=self.trainable)
    super().build(input_shape)

  def call(self, inputs):
    if inputs.shape.rank == 2:  # one input shared by every member
      outputs = tf.einsum('nd,kdu->nku', inputs, self.kernel)
    else:
      outputs = tf.einsum('nkd,kdu->nku', inputs, self.kernel)
    return self._activation(outputs + self.bias)


def _ensemble_mlp(num_members, fc_layer_params, num_outputs, trainable,
                  prefix):
  layers = [
      EnsembleDense(num_members, units, activation='relu',
                    trainable=trainable, name=f'{prefix}_fc_{i}')
      for i, units in enumerate(fc_layer_params)
  ]
  return layers + [EnsembleDense(num_members, num_outputs,
                                 trainable=trainable, name=f'{prefix}_out')]


class EnsembleQNetwork(rdqn.RecurrentDuelingQNetwork):
  """`RecurrentDuelingQNetwork` plus K prior-carrying Q heads (module doc)."""

  def __init__(self,
               input_tensor_spec,
               action_spec,
               torso_fc_layer_params,
               lstm_size,
               dueling_fc_layer_params,
               num_heads,
               prior_scale,
               head_fc_layer_params=(64,),
               prior_fc_layer_params=(64,),
               conv_layer_params=None,
               image_scale=None,
               static_unroll=True,
               name='EnsembleQNetwork'):
    """Creates the network.

    Args:
      input_tensor_spec, action_spec, torso_fc_layer_params, lstm_size,
        dueling_fc_layer_params, conv_layer_params, image_scale,
        static_unroll: as `RecurrentDuelingQNetwork` (no intrinsic head).
      num_heads: K, heads of the ensemble (Osband et al. 2016: 10;
        bsuite's boot_dqn: 20).
      prior_scale: beta, the weight of each head's prior (Osband et al.
        2018; bsuite's boot_dqn: 3). Values are in the Q network's units
        (with R2D2's value rescaling, those of h(returns)).
      head_fc_layer_params: hidden units of each head's MLP on the core.
      prior_fc_layer_params: hidden units of each prior MLP on the flattened
        observation (its cost grows with the observation's size: meant for
        vector observations).
      name: network name.

    Raises:
      ValueError: bad sizes, or what `RecurrentDuelingQNetwork` refuses.
    """
    if int(num_heads) < 2:
      raise ValueError(f'num_heads must be >= 2, got {num_heads}.')
    if not np.isfinite(prior_scale) or prior_scale < 0:
      raise ValueError(
          f'prior_scale must be finite and >= 0, got {prior_scale}.')
    for label, params in (('head_fc_layer_params', head_fc_layer_params),
                          ('prior_fc_layer_params', prior_fc_layer_params)):
      if any(int(units) < 1 for units in params):
        raise ValueError(f'{label} must hold positive sizes, got {params}.')
    super().__init__(
        input_tensor_spec, action_spec,
        torso_fc_layer_params=torso_fc_layer_params,
        lstm_size=lstm_size,
        dueling_fc_layer_params=dueling_fc_layer_params,
        conv_layer_params=conv_layer_params,
        image_scale=image_scale,
        intrinsic_head=False,
        static_unroll=static_unroll,
        name=name)
    self._num_heads = int(num_heads)
    self._prior_scale = float(prior_scale)
    self._head_layers = _ensemble_mlp(self._num_heads, head_fc_layer_params,
                                      self.num_actions, trainable=True,
                                      prefix='ensemble_head')
    self._prior_layers = _ensemble_mlp(self._num_heads, prior_fc_layer_params,
                                       self.num_actions, trainable=False,
                                       prefix='ensemble_prior')

  @property
  def num_heads(self):
    return self._num_heads

  @property
  def prior_scale(self):
    return self._prior_scale

  def _extra_heads(self, core_outputs, inputs, training):
    batch_squash = network_utils.BatchSquash(2)
    hidden = batch_squash.flatten(core_outputs)  # [B * T, H]
    for layer in self._head_layers:
      hidden = layer(hidden, training=training)
    prior = self._scaled(batch_squash.flatten(inputs[rdqn.OBSERVATION_KEY]))
    prior = tf.reshape(prior, [tf.shape(prior)[0], -1])
    for layer in self._prior_layers:
      prior = layer(prior, training=training)
    q_values = hidden + self._prior_scale * tf.stop_gradient(prior)
    return {ENSEMBLE: batch_squash.unflatten(q_values)}  # [B, T, K, A]
