"""RND-PPO (Burda et al. 2018) and its PPO twin built from gin.

`rnd_ppo_agent` is an `agent_fn` for `on_policy.train_eval`. One factory
builds both agents of a comparison: with `use_intrinsic_reward=True` the
`RndPPOAgent` with its RND pair; with `use_intrinsic_reward=False` the same
agent class, networks, optimizer and PPO settings without any RND part (see
`RndPPOAgent`). The intrinsic settings are then unbound, so a twin gin file
is its RND file minus the intrinsic lines (tests/test_gin_files.py diffs
them).

Hyperparameters shared by both agents are `gin.REQUIRED`. The intrinsic
ones default to None and are checked here: all of them must be bound for
RND-PPO and none of them for the twin, so neither file can silently fall
back to a default.
"""

from typing import Callable, Optional, Sequence, Tuple

import gin
import tensorflow as tf
from tf_agents.networks import actor_distribution_network

from tfa_explore.agents.rnd_ppo import agent as rnd_agent
from tfa_explore.experiments import ppo
from tfa_explore.networks import dual_value_network
from tfa_explore.utils import optimizers

REQUIRED = gin.REQUIRED

# Parameters only RND-PPO takes (bound in gin/rnd_ppo/*.gin, absent from the
# twins in gin/ppo/*.gin).
INTRINSIC_PARAMETERS = (
    'intrinsic_advantage_coef',
    'intrinsic_discount_factor',
    'rnd_networks_fn',
    'rnd_learning_rate',
    'predictor_update_proportion',
    'rnd_observation_clip',
    'use_intrinsic_return_normalization',
    'non_episodic_intrinsic',
    'rnd_observation_fn',  # Optional for RND-PPO.
)


@gin.configurable(module='rnd_ppo')
def rnd_ppo_agent(
    time_step_spec,
    action_spec,
    train_step_counter: tf.Variable,
    use_intrinsic_reward: bool = REQUIRED,
    learning_rate: float = REQUIRED,
    num_epochs: int = REQUIRED,
    num_minibatches: int = REQUIRED,
    importance_ratio_clipping: float = REQUIRED,
    lambda_value: float = REQUIRED,
    discount_factor: float = REQUIRED,
    entropy_regularization: float = REQUIRED,
    value_pred_loss_coef: float = REQUIRED,
    extrinsic_advantage_coef: float = REQUIRED,
    normalize_observations: bool = REQUIRED,
    actor_fc_layers: Sequence[int] = REQUIRED,
    value_fc_layers: Sequence[int] = REQUIRED,
    activation_fn: Callable[[tf.Tensor], tf.Tensor] = REQUIRED,
    conv_layer_params: Optional[Sequence[Tuple[int, int, int]]] = None,
    image_scale: float = 1.0 / 255.0,
    learning_rate_decay_steps: Optional[int] = None,
    adam_epsilon: float = 1e-5,
    gradient_clipping: Optional[float] = None,
    rnd_observation_fn: Optional[Callable[[tf.Tensor], tf.Tensor]] = None,
    intrinsic_advantage_coef: Optional[float] = None,
    intrinsic_discount_factor: Optional[float] = None,
    rnd_networks_fn: Optional[Callable[..., tuple]] = None,
    rnd_learning_rate: Optional[float] = None,
    predictor_update_proportion: Optional[float] = None,
    rnd_observation_clip: Optional[float] = None,
    use_intrinsic_return_normalization: Optional[bool] = None,
    non_episodic_intrinsic: Optional[bool] = None,
    debug_summaries: bool = False,
) -> rnd_agent.RndPPOAgent:
  """Builds and initializes an RndPPOAgent (or its PPO twin).

  Args:
    time_step_spec: TensorSpec nest of the env time steps.
    action_spec: A BoundedTensorSpec.
    train_step_counter: The loop's train step variable (checkpointed).
    use_intrinsic_reward: True for RND-PPO, False for the PPO twin.
    learning_rate: Adam learning rate of the actor and value networks.
    num_epochs: Optimisation epochs per rollout.
    num_minibatches: Minibatches per epoch, split along the env axis.
    importance_ratio_clipping: PPO clip epsilon.
    lambda_value: GAE lambda (both streams).
    discount_factor: gamma_E, the extrinsic discount.
    entropy_regularization: Entropy bonus coefficient.
    value_pred_loss_coef: Weight of each value head's loss.
    extrinsic_advantage_coef: Weight of A_E in the combined advantage.
    normalize_observations: The policy's own running observation
      normaliser (float observations only).
    actor_fc_layers: Hidden units of the actor.
    value_fc_layers: Hidden units of the dual value network's torso.
    activation_fn: Activation of the actor and value networks, e.g.
      `@tf.nn.tanh` (import gin.tf.external_configurables in the gin file).
    conv_layer_params: (filters, kernel, stride) layers of both torsos, for
      image observations.
    image_scale: Multiplier after casting integer observations (in-network).
    learning_rate_decay_steps: Linear decay to 0 over this many gradient
      steps (of the policy/value optimizer); None keeps it constant.
    adam_epsilon: Adam epsilon of both optimizers.
    gradient_clipping: Global-norm clip of the policy/value gradients.
    rnd_observation_fn: Picks the RND input from the observation (e.g.
      `@last_frame` for frame stacks); None: the observation itself.
      RND-PPO only (the twin must leave it unbound).
    intrinsic_advantage_coef: Weight of A_I.
    intrinsic_discount_factor: gamma_I.
    rnd_networks_fn: `spec -> (target, predictor)`, e.g. `@rnd_mlp_networks`.
    rnd_learning_rate: Adam learning rate of the predictor.
    predictor_update_proportion: Share of each minibatch the predictor
      trains on.
    rnd_observation_clip: Clip of the whitened RND inputs.
    use_intrinsic_return_normalization: Divide intrinsic rewards by the
      running std of intrinsic returns.
    non_episodic_intrinsic: Episode ends do not cut the intrinsic stream.
    debug_summaries: TF-Agents' debug summaries.

  Returns:
    An initialized `RndPPOAgent`.

  Raises:
    ValueError: An intrinsic setting is missing for RND-PPO or bound for
      the twin, or the policy normaliser is asked for integer observations.
  """
  intrinsic = {
      'intrinsic_advantage_coef': intrinsic_advantage_coef,
      'intrinsic_discount_factor': intrinsic_discount_factor,
      'rnd_networks_fn': rnd_networks_fn,
      'rnd_learning_rate': rnd_learning_rate,
      'predictor_update_proportion': predictor_update_proportion,
      'rnd_observation_clip': rnd_observation_clip,
      'use_intrinsic_return_normalization':
          use_intrinsic_return_normalization,
      'non_episodic_intrinsic': non_episodic_intrinsic,
  }
  assert tuple(intrinsic) + ('rnd_observation_fn',) == INTRINSIC_PARAMETERS
  if use_intrinsic_reward:
    missing = sorted(k for k, v in intrinsic.items() if v is None)
    if missing:
      raise ValueError('RND-PPO (use_intrinsic_reward=True) needs '
                       f'rnd_ppo.rnd_ppo_agent.{missing} bound in gin.')
  else:
    bound = sorted(k for k, v in intrinsic.items() if v is not None)
    if rnd_observation_fn is not None:
      bound.append('rnd_observation_fn')
    if bound:
      raise ValueError('The PPO twin (use_intrinsic_reward=False) takes no '
                       f'intrinsic settings; unbind {bound}.')

  observation_spec = time_step_spec.observation
  preprocessing = ppo.observation_preprocessing(observation_spec, image_scale)
  if normalize_observations and preprocessing is not None:
    raise ValueError(
        'normalize_observations=True needs float observations; this env '
        f'observes {observation_spec.dtype.name}. Set '
        'rnd_ppo.rnd_ppo_agent.normalize_observations = False.')
  conv = (tuple(tuple(p) for p in conv_layer_params)
          if conv_layer_params else None)
  actor_net = actor_distribution_network.ActorDistributionNetwork(
      observation_spec, action_spec,
      preprocessing_layers=preprocessing,
      conv_layer_params=conv,
      fc_layer_params=tuple(actor_fc_layers),
      activation_fn=activation_fn)
  value_net = dual_value_network.DualValueNetwork(
      observation_spec,
      preprocessing_layers=ppo.observation_preprocessing(observation_spec,
                                                         image_scale),
      conv_layer_params=conv,
      fc_layer_params=tuple(value_fc_layers),
      activation_fn=activation_fn)
  optimizer = optimizers.adam_optimizer(learning_rate,
                                        learning_rate_decay_steps, adam_epsilon)

  settings = {}
  if use_intrinsic_reward:
    # The paper trains the predictor with the same Adam as the policy; its
    # own lr stays constant (its loss is non-stationary by design).
    settings = dict(
        rnd_networks_fn=rnd_networks_fn,
        rnd_optimizer=tf.keras.optimizers.Adam(
            learning_rate=rnd_learning_rate, epsilon=adam_epsilon),
        rnd_observation_fn=rnd_observation_fn,
        intrinsic_advantage_coef=intrinsic_advantage_coef,
        intrinsic_discount_factor=intrinsic_discount_factor,
        predictor_update_proportion=predictor_update_proportion,
        rnd_observation_clip=rnd_observation_clip,
        use_intrinsic_return_normalization=(
            use_intrinsic_return_normalization),
        non_episodic_intrinsic=non_episodic_intrinsic,
    )
  agent = rnd_agent.RndPPOAgent(
      time_step_spec,
      action_spec,
      optimizer=optimizer,
      actor_net=actor_net,
      value_net=value_net,
      use_intrinsic_reward=use_intrinsic_reward,
      extrinsic_advantage_coef=extrinsic_advantage_coef,
      discount_factor=discount_factor,
      lambda_value=lambda_value,
      importance_ratio_clipping=importance_ratio_clipping,
      entropy_regularization=entropy_regularization,
      value_pred_loss_coef=value_pred_loss_coef,
      num_epochs=num_epochs,
      num_minibatches=num_minibatches,
      greedy_eval=True,
      normalize_observations=normalize_observations,
      normalize_rewards=False,
      gradient_clipping=gradient_clipping,
      debug_summaries=debug_summaries,
      train_step_counter=train_step_counter,
      **settings)
  agent.initialize()
  return agent
