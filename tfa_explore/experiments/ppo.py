"""PPO and RND-PPO (Burda et al. 2018) built from gin: one factory.

`ppo_clip_agent` is an `agent_fn` for `on_policy.train_eval`. It builds an
`RndPPOAgent`, TF-Agents' `PPOClipAgent` (through `EpochLoopPPOClipAgent`,
its epochs in a graph loop) with two value heads and minibatches along
the env axis. The two agents of a comparison differ only in
`intrinsic_reward`: `@intrinsic.rnd_intrinsic_reward` (the RND component
of `tfa_explore.experiments.intrinsic`, configured through its own
parameters) for RND-PPO; None for plain PPO, the RND-PPO's twin, whose
updates are `EpochLoopPPOClipAgent`'s (tests/test_rnd_agent.py). A gin
file of RND-PPO is its twin's file (`include`) plus the intrinsic lines.

Every hyperparameter that changes results is `gin.REQUIRED`, so each gin
file states it.
"""

from typing import Any, Callable, Optional, Sequence, Tuple, Type

import gin
import tensorflow as tf
from tf_agents.networks import actor_distribution_network

from tfa_explore import errors
from tfa_explore.agents.intrinsic import reward as intrinsic
from tfa_explore.agents.rnd_ppo import agent as rnd_agent
from tfa_explore.networks import dual_value_network
from tfa_explore.networks import shared_torso as shared_torso_networks
from tfa_explore.utils import optimizers

REQUIRED = gin.REQUIRED


def observation_preprocessing(observation_spec,
                              image_scale: float) -> Optional[tf.keras.layers.Layer]:
  """Casts integer (e.g. uint8 image) observations to float32 and scales.

  Networks and the observation normalizer work in float32; uint8 images are
  stored as uint8 (4x smaller rollouts) and converted here, inside the
  network, so the saved policy accepts the env's raw observations.

  Args:
    observation_spec: A single TensorSpec (nested observations are not
      supported by this baseline).
    image_scale: Multiplier after the cast, e.g. 1/255 for pixels.

  Returns:
    A Keras layer, or None for float observations (no preprocessing).
  """
  if tf.nest.is_nested(observation_spec):
    raise ValueError(
        'ppo.ppo_clip_agent expects a single observation array, got '
        f'{observation_spec}.')
  if observation_spec.dtype.is_floating:
    return None
  scale = float(image_scale)
  return tf.keras.layers.Lambda(
      lambda x: tf.cast(x, tf.float32) * scale, name='cast_and_scale')


@gin.configurable(module='ppo',
                  denylist=['time_step_spec', 'action_spec',
                            'train_step_counter', 'agent_class'])
def ppo_clip_agent(
    time_step_spec,
    action_spec,
    train_step_counter: tf.Variable,
    intrinsic_reward: Optional[
        Callable[..., intrinsic.IntrinsicReward]] = REQUIRED,
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
    shared_torso: Optional[bool] = None,
    torso_fc_layers: Sequence[int] = (),
    discrete_projection_net: Optional[Callable[..., Any]] = None,
    image_scale: float = 1.0 / 255.0,
    learning_rate_decay_steps: Optional[int] = None,
    adam_epsilon: float = 1e-5,
    gradient_clipping: Optional[float] = None,
    normalize_advantages: bool = True,
    debug_summaries: bool = False,
    agent_class: Type[rnd_agent.RndPPOAgent] = rnd_agent.RndPPOAgent,
) -> rnd_agent.RndPPOAgent:
  """Builds and initializes a PPO agent, with an intrinsic reward or none.

  Args:
    time_step_spec: TensorSpec nest of the env time steps.
    action_spec: A BoundedTensorSpec.
    train_step_counter: The loop's train step variable (checkpointed).
    intrinsic_reward: Called with `observation_spec=` to build the
      intrinsic reward, e.g. `@intrinsic.rnd_intrinsic_reward`; None for the
      PPO twin.
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
    actor_fc_layers: Hidden units of the actor (with a shared torso: of
      the policy's own layers on it).
    value_fc_layers: Hidden units of the dual value network's torso (with
      a shared torso: of the value branch's own layers on it).
    activation_fn: Activation of the actor and value networks, e.g.
      `@tf.nn.tanh` (import gin.tf.external_configurables in the gin file).
    conv_layer_params: (filters, kernel, stride) layers of both torsos, for
      image observations.
    shared_torso: One torso (convs, then `torso_fc_layers`) for the policy
      and both value heads, as the paper's networks
      (`tfa_explore.networks.shared_torso`); False builds an actor and a
      value network of their own. None: shared for image observations
      (`conv_layer_params` given), separate otherwise.
    torso_fc_layers: Dense layers of the shared torso after its convs.
    discrete_projection_net: Called with a discrete action spec to build
      the policy's head, as `ActorDistributionNetwork`'s argument, e.g.
      `@networks.EpsilonSoftProjectionNetwork`; None: TF-Agents' categorical
      head.
    image_scale: Multiplier after casting integer observations (in-network).
    learning_rate_decay_steps: Linear decay to 0 over this many gradient
      steps (of the policy/value optimizer); None keeps it constant.
    adam_epsilon: Adam epsilon of the policy/value optimizer.
    gradient_clipping: Global-norm clip of the policy/value gradients.
    normalize_advantages: Whiten the combined advantages per batch (PPO's
      default); False trains on the raw ones.
    debug_summaries: TF-Agents' debug summaries.
    agent_class: `RndPPOAgent` or a subclass with its constructor (a
      variant that overrides a documented hook); passed by callers in
      Python, not bindable in gin.

  Returns:
    An initialized `agent_class` (by default `RndPPOAgent`, a
    `PPOClipAgent`).

  Raises:
    ValueError: The policy normaliser is asked for integer observations.
  """
  observation_spec = time_step_spec.observation
  preprocessing = observation_preprocessing(observation_spec, image_scale)
  if normalize_observations and preprocessing is not None:
    raise ValueError(
        'normalize_observations=True needs float observations; this env '
        f'observes {observation_spec.dtype.name}. Set '
        'ppo.ppo_clip_agent.normalize_observations = False.')
  conv = (tuple(tuple(p) for p in conv_layer_params)
          if conv_layer_params else None)
  if shared_torso is None:
    shared_torso = conv is not None
  if shared_torso:
    torso = shared_torso_networks.make_torso(
        observation_spec, preprocessing_layers=preprocessing,
        conv_layer_params=conv, fc_layer_params=tuple(torso_fc_layers),
        activation_fn=activation_fn)
    actor_net = shared_torso_networks.ActorHeadNetwork(
        torso, action_spec, fc_layer_params=tuple(actor_fc_layers),
        activation_fn=activation_fn,
        discrete_projection_net=discrete_projection_net)
    value_net = shared_torso_networks.ValueHeadNetwork(
        torso, heads=(dual_value_network.EXTRINSIC,
                      dual_value_network.INTRINSIC),
        fc_layer_params=tuple(value_fc_layers), activation_fn=activation_fn)
  else:
    if torso_fc_layers:
      raise errors.ConfigError(
          f'ppo.ppo_clip_agent.torso_fc_layers = {tuple(torso_fc_layers)} '
          'needs ppo.ppo_clip_agent.shared_torso = True (separate '
          'networks take actor_fc_layers and value_fc_layers).')
    actor_net = actor_distribution_network.ActorDistributionNetwork(
        observation_spec, action_spec,
        preprocessing_layers=preprocessing,
        conv_layer_params=conv,
        fc_layer_params=tuple(actor_fc_layers),
        activation_fn=activation_fn,
        **({'discrete_projection_net': discrete_projection_net}
           if discrete_projection_net else {}))
    value_net = dual_value_network.DualValueNetwork(
        observation_spec,
        preprocessing_layers=observation_preprocessing(observation_spec,
                                                       image_scale),
        conv_layer_params=conv,
        fc_layer_params=tuple(value_fc_layers),
        activation_fn=activation_fn)
  # The policy's networks are created before the RND networks: the
  # initialisers draw their seeds in creation order, so a seed gives
  # RND-PPO and its twin the same initial policy and value weights.
  actor_net.create_variables(observation_spec)
  value_net.create_variables(observation_spec)
  with errors.values_of('ppo.ppo_clip_agent'):
    optimizer = optimizers.adam_optimizer(
        learning_rate, learning_rate_decay_steps, adam_epsilon)
    agent = agent_class(
        time_step_spec,
        action_spec,
        optimizer=optimizer,
        actor_net=actor_net,
        value_net=value_net,
        intrinsic_reward=(intrinsic_reward(observation_spec=observation_spec)
                          if intrinsic_reward else None),
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
        gradient_clipping=gradient_clipping,
        normalize_advantages=normalize_advantages,
        debug_summaries=debug_summaries,
        train_step_counter=train_step_counter)
  agent.initialize()
  return agent
