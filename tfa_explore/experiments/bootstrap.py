"""Bootstrapped heads with random priors for the R2D2 family, from gin.

Two bindings go together (gin/r2d2_bootstrap/bsuite_deep_sea.gin):

    r2d2.r2d2_agent_fn.q_network_fn = @bootstrap.ensemble_q_network
    r2d2.r2d2_agent_fn.exploration = @bootstrap.bootstrapped_heads

The first builds the agent's `EnsembleQNetwork` (K heads with priors on
R2D2's core), the second the `BootstrappedHeads` that act on one head per
episode and train every head (`tfa_explore.agents.bootstrap`). Every
setting that changes results is `gin.REQUIRED`.
"""

import gin

from tfa_explore.agents import bootstrap
from tfa_explore.networks import ensemble_q_network as ensemble_lib

REQUIRED = gin.REQUIRED


@gin.configurable(module='bootstrap',
                  denylist=['input_tensor_spec', 'action_spec'])
def ensemble_q_network(input_tensor_spec, action_spec,
                       num_heads: int = REQUIRED,
                       prior_scale: float = REQUIRED,
                       head_fc_layer_params=REQUIRED,
                       prior_fc_layer_params=REQUIRED,
                       **network_kwargs):
  """An `EnsembleQNetwork`; `network_kwargs` come from `r2d2.r2d2_agent_fn`.

  Args:
    input_tensor_spec, action_spec: passed by `r2d2.r2d2_agent_fn`.
    num_heads: K.
    prior_scale: beta of each head's random prior.
    head_fc_layer_params: hidden units of each head on R2D2's core.
    prior_fc_layer_params: hidden units of each prior over the observation.
    **network_kwargs: the torso, LSTM and dueling sizes of the factory.
  """
  return ensemble_lib.EnsembleQNetwork(
      input_tensor_spec, action_spec, num_heads=num_heads,
      prior_scale=prior_scale,
      head_fc_layer_params=tuple(head_fc_layer_params),
      prior_fc_layer_params=tuple(prior_fc_layer_params), **network_kwargs)


@gin.configurable(module='bootstrap',
                  denylist=['observation_spec', 'action_spec'])
def bootstrapped_heads(observation_spec, action_spec,
                       mask_probability: float = REQUIRED,
                       epsilon: float = REQUIRED,
                       n_step: int = REQUIRED):
  """R2D2's exploration by one ensemble head per episode.

  Args:
    observation_spec, action_spec: passed by `r2d2.r2d2_agent_fn`.
    mask_probability: chance that a head trains on a step (1: all).
    epsilon: every actor env's epsilon (not Ape-X's schedule).
    n_step: n of the heads' targets (Q_E keeps the agent's).
  """
  del observation_spec, action_spec
  return bootstrap.BootstrappedHeads(mask_probability=mask_probability,
                                     epsilon=epsilon, n_step=n_step)
