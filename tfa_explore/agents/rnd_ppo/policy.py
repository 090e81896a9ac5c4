"""RND-PPO policy: a PPO actor policy whose info carries both value heads.

TF-Agents' `PPOPolicy` fixes its info spec to `{'dist_params',
'value_prediction'}` inside its constructor, with no hook to add a field, so
this policy derives from `ActorPolicy`. Like `PPOPolicy` it offers
`apply_value_network` and `get_initial_value_state`; `apply_networks`
gives the agent's loss the distributions and both values with
`training=True`, running a torso the two networks share
(`tfa_explore.networks.shared_torso`) once.
"""

import tensorflow as tf
from tf_agents.agents.ppo import ppo_utils
from tf_agents.distributions import utils as distribution_utils
from tf_agents.networks import network
from tf_agents.policies import actor_policy
from tf_agents.specs import tensor_spec
from tf_agents.trajectories import policy_step
from tf_agents.utils import nest_utils
from tf_agents.utils import object_identity

from tfa_explore.networks import dual_value_network
from tfa_explore.networks import shared_torso

VALUE_PREDICTION = 'value_prediction'
INTRINSIC_VALUE_PREDICTION = 'intrinsic_value_prediction'
DIST_PARAMS = 'dist_params'


def _dist_params_spec(actor_network, actor_output_spec):
  if isinstance(actor_network, network.DistributionNetwork):
    return tf.nest.map_structure(lambda spec: spec.input_params_spec,
                                 actor_network.output_spec)

  def _params(spec):
    if not isinstance(spec, distribution_utils.DistributionSpecV2):
      raise ValueError('actor_network must emit distributions, got output '
                       f'spec {actor_output_spec}.')
    return distribution_utils.parameters_to_dict(spec.parameters,
                                                 tensors_only=True)

  return tf.nest.map_structure(_params, actor_output_spec)


class RndPPOPolicy(actor_policy.ActorPolicy):
  """Samples (or, wrapped in `GreedyPolicy`, picks) actions for RND-PPO.

  Collect mode info: `{'dist_params': ..., 'value_prediction': V_E,
  'intrinsic_value_prediction': V_I}` (float32 scalars per step), so the
  stock collect path (drivers, Reverb observers) records both values.
  """

  def __init__(self,
               time_step_spec,
               action_spec,
               actor_network,
               value_network,
               observation_normalizer=None,
               clip=False,
               collect=True,
               name=None):
    """Creates the policy.

    Args:
      time_step_spec: Environment `TimeStep` spec.
      action_spec: Action spec.
      actor_network: A stateless network emitting action distributions.
      value_network: A stateless network emitting `{'extrinsic',
        'intrinsic'}` values, e.g. `tfa_explore.networks.DualValueNetwork`.
      observation_normalizer: The policy's own observation normaliser (not
        the RND one).
      clip: Whether to clip actions to the spec (PPO trains on unclipped).
      collect: Whether to emit the training info.
      name: Policy name.
    """
    if not isinstance(actor_network, network.Network):
      raise TypeError('actor_network must be a tf_agents Network.')
    if not isinstance(value_network, network.Network):
      raise TypeError('value_network must be a tf_agents Network.')
    if actor_network.state_spec or value_network.state_spec:
      raise ValueError('RndPPOPolicy supports stateless networks only.')
    actor_output_spec = actor_network.create_variables(
        time_step_spec.observation)
    value_output_spec = value_network.create_variables(
        time_step_spec.observation)
    expected_keys = {dual_value_network.EXTRINSIC,
                     dual_value_network.INTRINSIC}
    if (not isinstance(value_output_spec, dict) or
        set(value_output_spec) != expected_keys or
        any(spec.shape not in ((), (1,))
            for spec in value_output_spec.values())):
      raise ValueError(
          "value_network must emit {'extrinsic': V_E, 'intrinsic': V_I} "
          f'scalars per observation, got {value_output_spec}.')
    if collect:
      info_spec = {
          DIST_PARAMS: _dist_params_spec(actor_network, actor_output_spec),
          VALUE_PREDICTION: tensor_spec.TensorSpec(
              [], tf.float32, name=VALUE_PREDICTION),
          INTRINSIC_VALUE_PREDICTION: tensor_spec.TensorSpec(
              [], tf.float32, name=INTRINSIC_VALUE_PREDICTION),
      }
    else:
      info_spec = ()
    super().__init__(
        time_step_spec=time_step_spec,
        action_spec=action_spec,
        actor_network=actor_network,
        info_spec=info_spec,
        observation_normalizer=observation_normalizer,
        clip=clip,
        name=name)
    self._collect = collect
    self._value_network = value_network
    self._shared_torso = shared_torso.shared_torso(actor_network,
                                                   value_network)

  def _normalize(self, observations):
    if self._observation_normalizer:
      return self._observation_normalizer.normalize(observations)
    return observations

  def get_initial_value_state(self, batch_size):
    del batch_size
    return ()

  def apply_value_network(self, observations, step_types, value_state=None,
                          training=False):
    """Both heads' values, with the policy's observation normalisation.

    Returns:
      `({'extrinsic': V_E, 'intrinsic': V_I}, value_state)`.
    """
    return self._value_network(self._normalize(observations), step_types,
                               value_state or (), training=training)

  def apply_networks(self, observations, step_types, training=False):
    """Action distributions and both values, with the policy's normaliser.

    A torso the actor and value networks share runs once for both.

    Returns:
      `(distributions, {'extrinsic': V_E, 'intrinsic': V_I})`.
    """
    observations = self._normalize(observations)
    if self._shared_torso is None:
      distributions, _ = self._actor_network(
          observations, step_type=step_types, network_state=(),
          training=training)
      values, _ = self._value_network(observations, step_types, (),
                                      training=training)
      return distributions, values
    outer_rank = nest_utils.get_outer_rank(
        observations, self._actor_network.input_tensor_spec)
    features = self._actor_network.features(observations, step_types,
                                            training)
    return (self._actor_network.from_features(features, outer_rank,
                                              training=training),
            self._value_network.from_features(features, training=training))

  def _variables(self):
    variables = list(self._actor_network.variables)
    variables += list(self._value_network.variables)
    if self._observation_normalizer:
      variables += list(tf.nest.flatten(
          self._observation_normalizer.variables))
    # A shared torso's variables are in both networks: listed once, in
    # order (weights travel to actors in this order).
    seen = object_identity.ObjectIdentitySet()
    unique = []
    for variable in variables:
      if variable not in seen:
        seen.add(variable)
        unique.append(variable)
    return unique

  def _distribution(self, time_step, policy_state, training=False):
    if not self._collect:
      distributions, _ = self._actor_network(
          self._normalize(time_step.observation),
          step_type=time_step.step_type, network_state=(), training=training)
      return policy_step.PolicyStep(distributions, policy_state, ())
    distributions, values = self.apply_networks(
        time_step.observation, time_step.step_type, training=training)
    info = {
        DIST_PARAMS: ppo_utils.get_distribution_params(
            distributions,
            legacy_distribution_network=isinstance(
                self._actor_network, network.DistributionNetwork)),
        VALUE_PREDICTION: values[dual_value_network.EXTRINSIC],
        INTRINSIC_VALUE_PREDICTION: values[dual_value_network.INTRINSIC],
    }
    return policy_step.PolicyStep(distributions, policy_state, info)
