"""PPO baseline: TF-Agents' PPOClipAgent built from gin (its maths, with
the epochs in a graph loop: `agents/ppo_clip.py`).

`ppo_clip_agent` is an `agent_fn` for `on_policy.train_eval`: it takes the
specs and the train step counter the loop owns, and every hyperparameter
that changes results is `gin.REQUIRED`, so each gin file states it.
"""

from typing import Optional, Sequence, Tuple, Type

import gin
import tensorflow as tf
from tf_agents.agents.ppo import ppo_clip_agent as tfa_ppo_clip_agent
from tf_agents.networks import actor_distribution_network
from tf_agents.networks import value_network

from tfa_explore import errors
from tfa_explore.agents import ppo_clip
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
        'ppo_clip_agent expects a single observation array, got '
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
    learning_rate: float = REQUIRED,
    num_epochs: int = REQUIRED,
    importance_ratio_clipping: float = REQUIRED,
    lambda_value: float = REQUIRED,
    discount_factor: float = REQUIRED,
    entropy_regularization: float = REQUIRED,
    value_pred_loss_coef: float = REQUIRED,
    normalize_observations: bool = REQUIRED,
    normalize_rewards: bool = REQUIRED,
    actor_fc_layers: Sequence[int] = REQUIRED,
    value_fc_layers: Sequence[int] = REQUIRED,
    conv_layer_params: Optional[Sequence[Tuple[int, int, int]]] = None,
    image_scale: float = 1.0 / 255.0,
    learning_rate_decay_steps: Optional[int] = None,
    adam_epsilon: float = 1e-5,
    gradient_clipping: Optional[float] = None,
    value_clipping: Optional[float] = None,
    debug_summaries: bool = False,
    agent_class: Type[tfa_ppo_clip_agent.PPOClipAgent] = (
        ppo_clip.EpochLoopPPOClipAgent),
) -> tfa_ppo_clip_agent.PPOClipAgent:
  """Builds and initializes a PPOClipAgent (GAE, greedy eval policy).

  Args:
    time_step_spec: TensorSpec nest of the env time steps.
    action_spec: A BoundedTensorSpec (discrete or continuous).
    train_step_counter: The loop's train step variable (checkpointed).
    learning_rate: Adam learning rate.
    num_epochs: Gradient steps (full batch) per collected rollout.
    importance_ratio_clipping: PPO clip epsilon.
    lambda_value: GAE lambda.
    discount_factor: Gamma.
    entropy_regularization: Entropy bonus coefficient.
    value_pred_loss_coef: Value loss coefficient.
    normalize_observations: Running mean/std observation normalization.
    normalize_rewards: Divide rewards by a running std.
    actor_fc_layers: Hidden units of the actor MLP.
    value_fc_layers: Hidden units of the value MLP.
    conv_layer_params: (filters, kernel, stride) conv layers before the MLPs,
      for image observations; None flattens the observation.
    image_scale: Multiplier applied after casting integer observations.
    learning_rate_decay_steps: If set, the learning rate decays linearly to
      0 over this many gradient steps (Adam updates: iterations x
      num_epochs), as in PPO's Atari setting; the final policy then stops
      drifting. None keeps it constant.
    adam_epsilon: Adam epsilon.
    gradient_clipping: Global norm clip of gradients; None for no clipping.
    value_clipping: PPO value-prediction clip; None for no clipping.
    debug_summaries: TF-Agents' histograms of advantages, actions, etc.
    agent_class: PPOClipAgent or a subclass with the same constructor
      arguments (variants that override `_train` or `_loss`); passed by
      callers in Python, not bindable in gin. The default,
      `EpochLoopPPOClipAgent`, is PPOClipAgent's maths with its epochs in a
      graph loop (traced once, in seconds).

  Returns:
    An initialized PPOClipAgent.
  """
  observation_spec = time_step_spec.observation
  preprocessing = observation_preprocessing(observation_spec, image_scale)
  if normalize_observations and preprocessing is not None:
    # TF-Agents normalizes the raw observation before the network; a
    # running mean/std of uint8 indices would undo the cast-and-scale.
    raise ValueError(
        'normalize_observations=True needs float observations; this env '
        f'observes {observation_spec.dtype.name}. Set '
        'ppo_clip_agent.normalize_observations = False.')
  conv = tuple(tuple(p) for p in conv_layer_params) if conv_layer_params else None
  actor_net = actor_distribution_network.ActorDistributionNetwork(
      observation_spec, action_spec,
      preprocessing_layers=preprocessing,
      conv_layer_params=conv,
      fc_layer_params=tuple(actor_fc_layers),
      activation_fn=tf.keras.activations.tanh)
  value_net = value_network.ValueNetwork(
      observation_spec,
      preprocessing_layers=(None if preprocessing is None else
                            observation_preprocessing(observation_spec,
                                                      image_scale)),
      conv_layer_params=conv,
      fc_layer_params=tuple(value_fc_layers),
      activation_fn=tf.keras.activations.tanh)
  with errors.values_of('ppo.ppo_clip_agent'):
    optimizer = optimizers.adam_optimizer(
        learning_rate, learning_rate_decay_steps, adam_epsilon)
    agent = agent_class(
        time_step_spec,
        action_spec,
        optimizer=optimizer,
        actor_net=actor_net,
        value_net=value_net,
        greedy_eval=True,
        importance_ratio_clipping=importance_ratio_clipping,
        lambda_value=lambda_value,
        discount_factor=discount_factor,
        entropy_regularization=entropy_regularization,
        value_pred_loss_coef=value_pred_loss_coef,
        num_epochs=num_epochs,
        use_gae=True,
        normalize_rewards=normalize_rewards,
        normalize_observations=normalize_observations,
        gradient_clipping=gradient_clipping,
        value_clipping=value_clipping,
        debug_summaries=debug_summaries,
        train_step_counter=train_step_counter)
  agent.initialize()
  return agent

