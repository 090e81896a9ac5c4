"""A policy and its value heads on one torso (Burda et al. 2018's networks).

RND-PPO's paper and code (`cnn_policy_param_matched.py`), like CleanRL's
`ppo_atari` and `ppo_rnd_envpool`, run one conv torso and feed its features
to the policy and to both value heads. TF-Agents' PPO takes an `actor_net`
and a `value_net`; here they are two small networks that hold the same
torso object:

    torso = shared_torso.make_torso(observation_spec, conv_layer_params=...)
    actor_net = shared_torso.ActorHeadNetwork(torso, action_spec, ...)
    value_net = shared_torso.ValueHeadNetwork(torso, heads=(...), ...)

Each is a complete TF-Agents network (stock `PPOClipAgent` and `PPOPolicy`
call them one at a time, so there the torso runs twice on the same input,
with one set of weights). The torso's weights get the gradients of every
loss that reaches either head: the agent's optimizer sees them once, as
its variables are deduplicated. `features` and `from_features` let a
caller that needs both outputs run the torso once (`actor_and_value`,
which RND-PPO's loss calls once per minibatch).
"""

from typing import Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
from tf_agents.networks import categorical_projection_network
from tf_agents.networks import encoding_network
from tf_agents.networks import network
from tf_agents.networks import normal_projection_network
from tf_agents.specs import tensor_spec
from tf_agents.utils import nest_utils


def make_torso(observation_spec,
               preprocessing_layers=None,
               conv_layer_params: Optional[Sequence[Tuple[int, int, int]]] = None,
               fc_layer_params: Sequence[int] = (),
               activation_fn=tf.keras.activations.relu,
               name: str = 'SharedTorso') -> encoding_network.EncodingNetwork:
  """The torso both heads read: (preprocessing), convs, flatten, dense layers.

  Args:
    observation_spec: Observation spec (a single array unless
      `preprocessing_layers` combine a nest).
    preprocessing_layers: See `EncodingNetwork`, e.g. a cast of uint8 frames.
    conv_layer_params: `(filters, kernel, stride)` per conv layer.
    fc_layer_params: Units of the dense layers after the convs.
    activation_fn: Activation of every torso layer.
    name: Network name.

  Returns:
    A stateless `EncodingNetwork` (outer dims `[B]` or `[B, T]` kept).
  """
  return encoding_network.EncodingNetwork(
      observation_spec,
      preprocessing_layers=preprocessing_layers,
      conv_layer_params=conv_layer_params,
      fc_layer_params=tuple(fc_layer_params),
      activation_fn=activation_fn,
      kernel_initializer=tf.compat.v1.keras.initializers.glorot_uniform(),
      batch_squash=True,
      name=name)


def _dense_stack(units, activation_fn, prefix):
  return [tf.keras.layers.Dense(
      n, activation=activation_fn,
      kernel_initializer=tf.compat.v1.keras.initializers.glorot_uniform(),
      name=f'{prefix}_{i}') for i, n in enumerate(units)]


class _HeadNetwork(network.Network):
  """A network whose body is someone else's torso plus its own layers."""

  def __init__(self, torso, fc_layer_params, activation_fn, name,
               **base_kwargs):
    if not isinstance(torso, network.Network) or torso.state_spec:
      raise ValueError('torso must be a stateless tf_agents Network, got '
                       f'{torso}.')
    super().__init__(input_tensor_spec=torso.input_tensor_spec, state_spec=(),
                     name=name, **base_kwargs)
    self._torso = torso
    self._head_layers = _dense_stack(fc_layer_params, activation_fn, name)

  @property
  def torso(self) -> network.Network:
    return self._torso

  def features(self, observations, step_type=None, training=False):
    """The torso's features of `observations` (`[B, ...]` or `[B, T, ...]`)."""
    features, _ = self._torso(observations, step_type=step_type,
                              network_state=(), training=training)
    return features

  def _head(self, features, training):
    for layer in self._head_layers:
      features = layer(features, training=training)
    return features

  def call(self, observations, step_type=None, network_state=(),
           training=False, **kwargs):
    outer_rank = nest_utils.get_outer_rank(observations,
                                           self.input_tensor_spec)
    features = self.features(observations, step_type, training)
    return self.from_features(features, outer_rank, training=training,
                              **kwargs), network_state


class ActorHeadNetwork(_HeadNetwork, network.DistributionNetwork):
  """Action distributions from a shared torso (a `DistributionNetwork`).

  Projections as `ActorDistributionNetwork`'s defaults: categorical logits
  for discrete actions, a normal for continuous ones.
  """

  def __init__(self,
               torso: network.Network,
               action_spec,
               fc_layer_params: Sequence[int] = (),
               activation_fn=tf.keras.activations.relu,
               discrete_projection_net=None,
               name: str = 'ActorHeadNetwork'):
    """Creates the actor head.

    Args:
      torso: The shared torso (`make_torso`).
      action_spec: The action spec (nest allowed).
      fc_layer_params: Units of the policy's own dense layers on the torso.
      activation_fn: Their activation.
      discrete_projection_net: Called with a discrete action spec to build
        its head; None: TF-Agents' categorical head.
      name: Network name.
    """

    def projection(spec):
      if tensor_spec.is_discrete(spec) and discrete_projection_net:
        return discrete_projection_net(spec)
      if tensor_spec.is_discrete(spec):
        return categorical_projection_network.CategoricalProjectionNetwork(
            spec, logits_init_output_factor=0.1)
      return normal_projection_network.NormalProjectionNetwork(
          spec, init_means_output_factor=0.1,
          std_bias_initializer_value=float(np.log(np.exp(0.35) - 1)),
          scale_distribution=False)

    projections = tf.nest.map_structure(projection, action_spec)
    output_spec = tf.nest.map_structure(lambda p: p.output_spec, projections)
    super().__init__(torso, fc_layer_params, activation_fn, name,
                     output_spec=output_spec)
    self._projections = projections

  def from_features(self, features, outer_rank, training=False, mask=None):
    """Distributions from the torso's features."""
    hidden = self._head(features, training)
    return tf.nest.map_structure(
        lambda p: p(hidden, outer_rank, training=training, mask=mask)[0],
        self._projections)


class ValueHeadNetwork(_HeadNetwork):
  """Scalar values from a shared torso: one, or a dict of named heads.

  `heads=None` gives one value per observation (a `ValueNetwork`'s output,
  for stock `PPOClipAgent`); `heads=('extrinsic', 'intrinsic')` gives
  `{'extrinsic': V_E, 'intrinsic': V_I}`, what `RndPPOAgent` needs.
  """

  def __init__(self,
               torso: network.Network,
               heads: Optional[Sequence[str]] = None,
               fc_layer_params: Sequence[int] = (),
               activation_fn=tf.keras.activations.relu,
               name: str = 'ValueHeadNetwork'):
    """Creates the value head(s).

    Args:
      torso: The shared torso (`make_torso`).
      heads: Names of the value heads, or None for a single value.
      fc_layer_params: Units of the value branch's dense layers.
      activation_fn: Their activation.
      name: Network name.
    """
    names = tuple(heads) if heads else (None,)
    super().__init__(torso, fc_layer_params, activation_fn, name)
    self._names = names
    self._outputs = [tf.keras.layers.Dense(
        1, kernel_initializer=tf.random_uniform_initializer(-0.03, 0.03),
        name=f'{n or "value"}_value') for n in names]

  def from_features(self, features, outer_rank=None, training=False):
    """Values from the torso's features (`outer_rank` is not needed)."""
    del outer_rank
    hidden = self._head(features, training)
    values = [tf.squeeze(output(hidden), -1) for output in self._outputs]
    if self._names == (None,):
      return values[0]
    return dict(zip(self._names, values))


def shared_torso(actor_net, value_net) -> Optional[network.Network]:
  """The torso both networks hold, or None if they do not share one."""
  torso = getattr(actor_net, 'torso', None)
  if (torso is not None and torso is getattr(value_net, 'torso', None) and
      hasattr(actor_net, 'from_features') and
      hasattr(value_net, 'from_features')):
    return torso
  return None


def actor_and_value(actor_net, value_net, observations, step_types,
                    training=False):
  """`(distributions, values)` of both networks on the same observations.

  A torso the two share (`shared_torso`) runs once; otherwise each network
  runs on its own. Observations are `[B, ...]` or `[B, T, ...]`, already
  normalised as the policy would.
  """
  torso = shared_torso(actor_net, value_net)
  if torso is None:
    distributions, _ = actor_net(observations, step_type=step_types,
                                 network_state=(), training=training)
    values, _ = value_net(observations, step_type=step_types,
                          network_state=(), training=training)
    return distributions, values
  outer_rank = nest_utils.get_outer_rank(observations,
                                         actor_net.input_tensor_spec)
  features = actor_net.features(observations, step_types, training)
  return (actor_net.from_features(features, outer_rank, training=training),
          value_net.from_features(features, training=training))
