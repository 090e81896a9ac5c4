"""RND-PPO: PPO with Random Network Distillation (Burda et al. 2018).

arXiv 1810.12894, sections 2.2-2.4 and the hyperparameter tables. The agent
is a `PPOClipAgent` whose

* value network has an extrinsic and an intrinsic head
  (`tfa_explore.networks.DualValueNetwork`), both recorded in policy info;
* `_preprocess` computes intrinsic rewards (prediction error of the NEXT
  observation), divides them by the running std of intrinsic returns, and
  runs episodic GAE on the extrinsic stream (gamma_E, truncation bootstraps)
  and non-episodic GAE on the intrinsic one (gamma_I), combining the
  advantages as `ext_coef * A_E + int_coef * A_I`;
* `_train` runs PPO epochs over minibatches of whole env sequences,
  trains both value heads and, with its own optimizer, the RND predictor on a
  random fraction of each minibatch; then updates the normalisers.

Parent fields read here (all set from this constructor's own arguments,
`PPOAgent` offers no accessors): `_optimizer`, `_actor_net`, `_value_net`,
`_observation_normalizer`, `_reward_normalizer`, `_reward_norm_clipping`,
`_value_pred_loss_coef`, `_value_clipping`, `_gradient_clipping`,
`_aggregate_losses_across_replicas`, `_compute_value_and_advantage_in_train`,
`_debug_summaries`, `_summarize_grads_and_vars`.
"""

import collections
from typing import Callable, Optional, Text, Tuple

import gin
import tensorflow as tf
from tf_agents.agents import tf_agent
from tf_agents.agents.ppo import ppo_clip_agent
from tf_agents.agents.ppo import ppo_utils
from tf_agents.networks import network
from tf_agents.policies import greedy_policy
from tf_agents.specs import tensor_spec
from tf_agents.trajectories import time_step as ts
from tf_agents.typing import types
from tf_agents.utils import common
from tf_agents.utils import eager_utils
from tf_agents.utils import nest_utils
from tf_agents.utils import object_identity

from tfa_explore.agents.rnd_ppo import maths
from tfa_explore.agents.rnd_ppo import normalizers
from tfa_explore.agents.rnd_ppo import policy as rnd_policy
from tfa_explore.agents.rnd_ppo import summaries
from tfa_explore.networks import dual_value_network

EXTRINSIC = dual_value_network.EXTRINSIC
INTRINSIC = dual_value_network.INTRINSIC

# Keys the agent adds to policy info when it preprocesses experience.
RETURN = 'return'  # Extrinsic TD(lambda) return (PPOAgent's key).
ADVANTAGE = 'advantage'  # Combined advantage (PPOAgent's key).
INTRINSIC_RETURN = 'intrinsic_return'
INTRINSIC_REWARD = 'intrinsic_reward'  # After normalisation.
RAW_INTRINSIC_REWARD = 'raw_intrinsic_reward'

RndPPOLossInfo = collections.namedtuple(
    'RndPPOLossInfo',
    (
        'policy_gradient_loss',
        'extrinsic_value_loss',
        'intrinsic_value_loss',
        'l2_regularization_loss',
        'entropy_regularization_loss',
        'predictor_loss',
        'clip_fraction',
    ),
)


@gin.configurable
class RndPPOAgent(ppo_clip_agent.PPOClipAgent):
  """PPO-Clip with RND intrinsic rewards and two value heads.

  Defaults are the paper's (Burda et al. 2018, Table 5 / appendix A.5).
  """

  def __init__(
      self,
      time_step_spec: ts.TimeStep,
      action_spec: types.NestedTensorSpec,
      optimizer: Optional[types.Optimizer] = None,
      actor_net: Optional[network.Network] = None,
      value_net: Optional[network.Network] = None,
      rnd_target_net: Optional[network.Network] = None,
      rnd_predictor_net: Optional[network.Network] = None,
      rnd_optimizer: Optional[types.Optimizer] = None,
      rnd_networks_fn: Optional[Callable[[tf.TensorSpec],
                                         Tuple[network.Network,
                                               network.Network]]] = None,
      rnd_observation_fn: Optional[Callable[[types.NestedTensor],
                                            types.Tensor]] = None,
      extrinsic_advantage_coef: types.Float = 2.0,
      intrinsic_advantage_coef: types.Float = 1.0,
      intrinsic_only: bool = False,
      use_intrinsic_reward: bool = True,
      discount_factor: types.Float = 0.999,
      intrinsic_discount_factor: types.Float = 0.99,
      lambda_value: types.Float = 0.95,
      non_episodic_intrinsic: bool = True,
      use_obs_normalization: bool = True,
      rnd_observation_clip: types.Float = 5.0,
      use_intrinsic_return_normalization: bool = True,
      predictor_update_proportion: types.Float = 0.25,
      importance_ratio_clipping: types.Float = 0.1,
      entropy_regularization: types.Float = 0.001,
      value_pred_loss_coef: types.Float = 0.5,
      num_epochs: int = 4,
      num_minibatches: int = 4,
      greedy_eval: bool = True,
      normalize_observations: bool = True,
      normalize_rewards: bool = False,
      reward_norm_clipping: types.Float = 10.0,
      policy_l2_reg: types.Float = 0.0,
      value_function_l2_reg: types.Float = 0.0,
      shared_vars_l2_reg: types.Float = 0.0,
      gradient_clipping: Optional[types.Float] = None,
      value_clipping: Optional[types.Float] = None,
      compute_value_and_advantage_in_train: bool = True,
      update_normalizers_in_train: bool = True,
      aggregate_losses_across_replicas: bool = True,
      debug_summaries: bool = False,
      summarize_grads_and_vars: bool = False,
      train_step_counter: Optional[tf.Variable] = None,
      name: Optional[Text] = 'RndPPOAgent',
  ):
    """Creates the agent.

    Args:
      time_step_spec: Environment `TimeStep` spec.
      action_spec: Action spec.
      optimizer: Optimizer of the actor and value networks (paper: Adam
        1e-4).
      actor_net: Stateless `DistributionNetwork` (or network emitting
        distributions).
      value_net: Stateless network emitting `{'extrinsic', 'intrinsic'}`
        values, e.g. `tfa_explore.networks.DualValueNetwork`.
      rnd_target_net: Fixed random RND network; its variables are never
        trained (build it non-trainable, e.g. `rnd_mlp_networks`).
      rnd_predictor_net: Trained RND network with the same output size.
      rnd_optimizer: Optimizer of the predictor; default Adam(1e-4) as in the
        paper.
      rnd_networks_fn: Alternative to passing both RND networks (handy in
        gin): called with the RND input spec, returns `(target, predictor)`,
        e.g. `tfa_explore.networks.rnd_mlp_networks` or `rnd_conv_networks`.
      rnd_observation_fn: Maps an observation (nest) to the single RND input
        tensor, e.g. `tfa_explore.networks.last_frame` for frame stacks.
        Default: the observation itself.
      extrinsic_advantage_coef: Weight of A_E (paper: 2).
      intrinsic_advantage_coef: Weight of A_I (paper: 1).
      intrinsic_only: Pure curiosity: forces the extrinsic weight to 0.
      use_intrinsic_reward: False turns the agent into its own PPO twin:
        no RND networks (none may be given), no predictor training, no
        intrinsic reward, return filter or RND normaliser, and the advantage
        is the extrinsic one alone; the intrinsic value head is computed by
        the policy but never trained. Everything else (dual-GAE extrinsic
        stream with truncation bootstrap, env-axis minibatches, advantage
        normalisation, losses) is shared code, so the twin differs from
        RND-PPO only in the intrinsic reward and its steps/s is an honest
        baseline for the RND overhead.
      discount_factor: gamma_E (paper: 0.999).
      intrinsic_discount_factor: gamma_I (paper: 0.99).
      lambda_value: GAE lambda of both streams (paper: 0.95).
      non_episodic_intrinsic: Episode ends do not cut the intrinsic stream
        (paper: True).
      use_obs_normalization: Whiten and clip the RND inputs (paper: True).
        Only the RND networks see these statistics.
      rnd_observation_clip: Clip of the whitened RND inputs (paper: 5).
      use_intrinsic_return_normalization: Divide intrinsic rewards by the
        running std of intrinsic returns (paper: True).
      predictor_update_proportion: Fraction of each minibatch the predictor
        trains on (paper: 0.25; 1 trains on everything).
      importance_ratio_clipping: PPO clip epsilon (paper: 0.1).
      entropy_regularization: Entropy coefficient (paper: 0.001).
      value_pred_loss_coef: Weight of each value loss (paper's code: 0.5 *
        squared error per head).
      num_epochs: Optimisation epochs per rollout (paper: 4).
      num_minibatches: Minibatches per epoch, split along the environment
        axis so sequences stay whole (paper: 4). Use 1 when a PPOLearner
        does the minibatching.
      greedy_eval: Greedy evaluation policy.
      normalize_observations: The POLICY's own observation normaliser
        (TF-Agents' option; independent of the RND normaliser).
      normalize_rewards: TF-Agents' extrinsic reward scaling. The paper clips
        extrinsic rewards in the environment instead, so default False.
      reward_norm_clipping: See `PPOAgent`.
      policy_l2_reg: See `PPOAgent`.
      value_function_l2_reg: See `PPOAgent`.
      shared_vars_l2_reg: See `PPOAgent`.
      gradient_clipping: Global-norm clip of the policy/value gradients.
      value_clipping: See `PPOAgent`; applied to both heads.
      compute_value_and_advantage_in_train: True: `train` takes collected
        trajectories and preprocesses them itself. False: experience must
        be preprocessed first (`preprocess_sequence`, e.g. in a Reverb
        dataset for `PPOLearner`). Values always come from the collect
        policy's info.
      update_normalizers_in_train: Update the policy and RND observation
        normalisers at the end of `train` (False with `PPOLearner`, which
        calls `update_observation_normalizer` itself).
      aggregate_losses_across_replicas: See `PPOAgent`.
      debug_summaries: See `PPOAgent`.
      summarize_grads_and_vars: See `PPOAgent`.
      train_step_counter: Counter incremented per gradient step.
      name: Agent name.
    """
    self._rnd_observation_fn = rnd_observation_fn or (lambda obs: obs)
    if rnd_observation_fn is None and tf.nest.is_nested(
        time_step_spec.observation):
      raise ValueError('Nested observations need an rnd_observation_fn that '
                       'picks the single RND input tensor.')
    self._use_intrinsic_reward = bool(use_intrinsic_reward)
    if not use_intrinsic_reward:
      if any(x is not None for x in (rnd_target_net, rnd_predictor_net,
                                     rnd_networks_fn, rnd_optimizer)):
        raise ValueError('use_intrinsic_reward=False takes no RND networks, '
                         'rnd_networks_fn or rnd_optimizer.')
      if intrinsic_only:
        raise ValueError('intrinsic_only needs use_intrinsic_reward=True.')
    rnd_input_spec = self._rnd_input_spec(time_step_spec.observation)
    if rnd_target_net is None and rnd_predictor_net is None and (
        rnd_networks_fn is not None):
      rnd_target_net, rnd_predictor_net = rnd_networks_fn(rnd_input_spec)
    required_nets = [('actor_net', actor_net), ('value_net', value_net)]
    if use_intrinsic_reward:
      required_nets += [('rnd_target_net', rnd_target_net),
                        ('rnd_predictor_net', rnd_predictor_net)]
    for net_name, net in required_nets:
      if not isinstance(net, network.Network):
        raise TypeError(f'{net_name} must be a tf_agents Network, got {net}.')
    if not 0.0 < predictor_update_proportion <= 1.0:
      raise ValueError('predictor_update_proportion must be in (0, 1], got '
                       f'{predictor_update_proportion}.')
    if num_minibatches < 1 or num_epochs < 1:
      raise ValueError('num_epochs and num_minibatches must be >= 1.')

    super().__init__(
        time_step_spec,
        action_spec,
        optimizer=optimizer,
        actor_net=actor_net,
        value_net=value_net,
        greedy_eval=greedy_eval,
        importance_ratio_clipping=importance_ratio_clipping,
        lambda_value=lambda_value,
        discount_factor=discount_factor,
        entropy_regularization=entropy_regularization,
        policy_l2_reg=policy_l2_reg,
        value_function_l2_reg=value_function_l2_reg,
        shared_vars_l2_reg=shared_vars_l2_reg,
        value_pred_loss_coef=value_pred_loss_coef,
        num_epochs=num_epochs,
        use_gae=True,
        use_td_lambda_return=True,
        normalize_rewards=normalize_rewards,
        reward_norm_clipping=reward_norm_clipping,
        normalize_observations=normalize_observations,
        gradient_clipping=gradient_clipping,
        value_clipping=value_clipping,
        compute_value_and_advantage_in_train=(
            compute_value_and_advantage_in_train),
        update_normalizers_in_train=update_normalizers_in_train,
        aggregate_losses_across_replicas=aggregate_losses_across_replicas,
        debug_summaries=debug_summaries,
        summarize_grads_and_vars=summarize_grads_and_vars,
        train_step_counter=train_step_counter,
        name=name,
    )

    # PPOAgent builds PPOPolicy objects whose info spec cannot carry the
    # intrinsic value; replace them and re-run TFAgent's constructor, which
    # derives the collect and training data specs from the policies.
    policy = rnd_policy.RndPPOPolicy(
        time_step_spec, action_spec, actor_net, value_net,
        observation_normalizer=self._observation_normalizer, clip=False,
        collect=False)
    if greedy_eval:
      policy = greedy_policy.GreedyPolicy(policy)
    collect_policy = rnd_policy.RndPPOPolicy(
        time_step_spec, action_spec, actor_net, value_net,
        observation_normalizer=self._observation_normalizer, clip=False,
        collect=True)
    if compute_value_and_advantage_in_train:
      training_data_spec = None
    else:
      scalar = tensor_spec.TensorSpec([], tf.float32)
      training_info_spec = dict(collect_policy.trajectory_spec.policy_info)
      training_info_spec.update({
          key: scalar for key in (RETURN, ADVANTAGE, INTRINSIC_RETURN,
                                  INTRINSIC_REWARD, RAW_INTRINSIC_REWARD)
      })
      training_data_spec = collect_policy.trajectory_spec.replace(
          policy_info=training_info_spec)
    tf_agent.TFAgent.__init__(
        self,
        time_step_spec,
        action_spec,
        policy,
        collect_policy,
        train_sequence_length=None,
        training_data_spec=training_data_spec,
        debug_summaries=debug_summaries,
        summarize_grads_and_vars=summarize_grads_and_vars,
        train_step_counter=train_step_counter)

    if isinstance(actor_net, network.DistributionNetwork):
      self._action_distribution_spec = actor_net.output_spec
    else:
      self._action_distribution_spec = actor_net.create_variables(
          time_step_spec.observation)

    self._extrinsic_advantage_coef = (
        0.0 if intrinsic_only else float(extrinsic_advantage_coef))
    self._intrinsic_advantage_coef = float(intrinsic_advantage_coef)
    self._intrinsic_discount_factor = intrinsic_discount_factor
    self._non_episodic_intrinsic = non_episodic_intrinsic
    self._use_intrinsic_return_normalization = (
        use_intrinsic_return_normalization)
    self._predictor_update_proportion = float(predictor_update_proportion)
    self._num_minibatches = num_minibatches

    self._rnd_target_net = rnd_target_net
    self._rnd_predictor_net = rnd_predictor_net
    if not use_intrinsic_reward:
      self._intrinsic_advantage_coef = 0.0
      self._rnd_optimizer = None
      self._rnd_observation_normalizer = None
      self._intrinsic_return_normalizer = None
      return
    target_spec = rnd_target_net.create_variables(rnd_input_spec)
    predictor_spec = rnd_predictor_net.create_variables(rnd_input_spec)
    if target_spec.shape != predictor_spec.shape:
      raise ValueError('RND target and predictor outputs differ: '
                       f'{target_spec} vs {predictor_spec}.')
    if rnd_target_net.trainable_variables:
      raise ValueError('rnd_target_net must have no trainable variables '
                       '(build it with trainable=False).')
    self._rnd_optimizer = rnd_optimizer or tf.keras.optimizers.Adam(
        learning_rate=1e-4)
    self._rnd_observation_normalizer = normalizers.RndObservationNormalizer(
        rnd_input_spec, clip_value=rnd_observation_clip,
        enabled=use_obs_normalization)
    self._intrinsic_return_normalizer = (
        normalizers.IntrinsicReturnNormalizer(intrinsic_discount_factor))

  # ---------------------------------------------------------------- RND ---

  def _rnd_input_spec(self, observation_spec):
    example = tensor_spec.zero_spec_nest(observation_spec, outer_dims=[1])
    rnd_input = self._rnd_observation_fn(example)
    return tf.TensorSpec(rnd_input.shape[1:], tf.float32)

  @property
  def use_intrinsic_reward(self):
    return self._use_intrinsic_reward

  @property
  def rnd_target_net(self):
    return self._rnd_target_net

  @property
  def rnd_predictor_net(self):
    return self._rnd_predictor_net

  @property
  def rnd_observation_normalizer(self):
    return self._rnd_observation_normalizer

  @property
  def intrinsic_return_normalizer(self):
    return self._intrinsic_return_normalizer

  def rnd_inputs(self, observations):
    """Normalised, clipped RND inputs of observations with any outer dims."""
    if not self._use_intrinsic_reward:
      raise ValueError('This agent was built with use_intrinsic_reward=False '
                       'and has no RND networks.')
    rnd_input = tf.cast(self._rnd_observation_fn(observations), tf.float32)
    return self._rnd_observation_normalizer.normalize(rnd_input)

  def intrinsic_reward(self, observations):
    """Unnormalised intrinsic reward of each observation (outer dims kept)."""
    rnd_input = self.rnd_inputs(observations)
    target, _ = self._rnd_target_net(rnd_input)
    predicted, _ = self._rnd_predictor_net(rnd_input)
    return maths.prediction_error(predicted, target)

  def update_rnd_observation_normalizer(self, observations):
    """Adds observations (any outer dims) to the RND input statistics."""
    if not self._use_intrinsic_reward:
      return
    rnd_input = tf.cast(self._rnd_observation_fn(observations), tf.float32)
    self._rnd_observation_normalizer.update(rnd_input)

  def update_observation_normalizer(self, batched_observations):
    """Updates the policy's and the RND observation normalisers.

    This is the public method `PPOLearner` calls once per collected batch.
    """
    super().update_observation_normalizer(batched_observations)
    self.update_rnd_observation_normalizer(batched_observations)

  # --------------------------------------------------- advantage / return ---

  def compute_return_and_advantage(self, next_time_steps, value_preds):
    raise NotImplementedError(
        'RndPPOAgent computes both streams in _preprocess; use '
        'maths.dual_gae for returns and advantages.')

  def _preprocess(self, experience):
    """Adds intrinsic rewards, both returns and the combined advantage.

    Args:
      experience: A `Trajectory` `[B, T + 1, ...]` or `[T + 1, ...]` of
        contiguous steps with the collect policy's info.

    Returns:
      The trajectory with policy info extended by `return` (extrinsic),
      `intrinsic_return`, `advantage` (combined), `intrinsic_reward`
      (normalised) and `raw_intrinsic_reward`; the last row, only used as
      the bootstrap, gets zeros (and is masked in training, as in PPOAgent).
    """
    outer_rank = nest_utils.get_outer_rank(
        experience.discount, self.collect_data_spec.discount)
    if outer_rank == 1:
      batched = nest_utils.batch_nested_tensors(experience)
    else:
      batched = experience
    num_steps = batched.discount.shape[1]
    if num_steps is not None and num_steps <= 1:
      raise ValueError('RND-PPO preprocessing needs >1 steps per sequence.')

    info = batched.policy_info
    extrinsic_values = tf.stop_gradient(
        info[rnd_policy.VALUE_PREDICTION])
    intrinsic_values = tf.stop_gradient(
        info[rnd_policy.INTRINSIC_VALUE_PREDICTION])

    extrinsic_rewards = batched.reward[:, :-1]
    if self._reward_normalizer:
      extrinsic_rewards = self._reward_normalizer.normalize(
          extrinsic_rewards, center_mean=False,
          clip_value=self._reward_norm_clipping)

    if not self._use_intrinsic_reward:
      return self._preprocess_extrinsic_only(
          experience, batched, extrinsic_rewards, extrinsic_values,
          outer_rank)

    # Intrinsic reward of transition t is the novelty of o_{t+1}.
    next_observations = tf.nest.map_structure(lambda o: o[:, 1:],
                                              batched.observation)
    raw_intrinsic_rewards = tf.stop_gradient(
        self.intrinsic_reward(next_observations))
    if self._use_intrinsic_return_normalization:
      filtered_returns = self._intrinsic_return_normalizer.update(
          raw_intrinsic_rewards)
      with tf.control_dependencies([filtered_returns]):
        intrinsic_rewards = self._intrinsic_return_normalizer.normalize(
            raw_intrinsic_rewards)
    else:
      intrinsic_rewards = raw_intrinsic_rewards

    streams = maths.dual_gae(
        extrinsic_rewards=extrinsic_rewards,
        intrinsic_rewards=intrinsic_rewards,
        extrinsic_values=extrinsic_values,
        intrinsic_values=intrinsic_values,
        step_types=batched.step_type[:, :-1],
        next_step_types=batched.next_step_type[:, :-1],
        next_discounts=batched.discount[:, :-1],
        extrinsic_discount=self._discount_factor,
        intrinsic_discount=self._intrinsic_discount_factor,
        td_lambda=self._lambda,
        extrinsic_coef=self._extrinsic_advantage_coef,
        intrinsic_coef=self._intrinsic_advantage_coef,
        non_episodic_intrinsic=self._non_episodic_intrinsic)

    def _pad(x):
      return tf.concat([x, tf.zeros_like(x[:, :1])], axis=1)

    new_info = dict(info)
    new_info.update({
        RETURN: _pad(streams.extrinsic_returns),
        INTRINSIC_RETURN: _pad(streams.intrinsic_returns),
        ADVANTAGE: _pad(streams.advantages),
        INTRINSIC_REWARD: _pad(intrinsic_rewards),
        RAW_INTRINSIC_REWARD: _pad(raw_intrinsic_rewards),
    })
    if outer_rank == 1:
      new_info = nest_utils.unbatch_nested_tensors(new_info)
    return experience.replace(policy_info=new_info)

  def _preprocess_extrinsic_only(self, experience, batched,
                                  extrinsic_rewards, extrinsic_values,
                                  outer_rank):
    """The PPO twin's preprocessing: the extrinsic GAE stream only.

    Same episodic discounts (truncation bootstraps) as `maths.dual_gae`'s
    extrinsic stream; the intrinsic entries of the info are zeros so the
    training code and the collect data spec stay the same.
    """
    discounts = maths.episodic_stream_discounts(
        batched.step_type[:, :-1], batched.next_step_type[:, :-1],
        batched.discount[:, :-1], self._discount_factor)
    advantages = maths.generalized_advantages(
        extrinsic_rewards, extrinsic_values, discounts, self._lambda)
    returns = advantages + extrinsic_values[:, :-1]
    zeros = tf.zeros_like(batched.discount, dtype=tf.float32)

    def _pad(x):
      return tf.concat([x, tf.zeros_like(x[:, :1])], axis=1)

    new_info = dict(batched.policy_info)
    new_info.update({
        RETURN: _pad(returns),
        INTRINSIC_RETURN: zeros,
        ADVANTAGE: _pad(self._extrinsic_advantage_coef * advantages),
        INTRINSIC_REWARD: zeros,
        RAW_INTRINSIC_REWARD: zeros,
    })
    if outer_rank == 1:
      new_info = nest_utils.unbatch_nested_tensors(new_info)
    return experience.replace(policy_info=new_info)

  # ------------------------------------------------------------- losses ---

  def value_estimation_loss(self,
                            time_steps,
                            returns,
                            weights,
                            old_value_predictions=None,
                            debug_summaries=False,
                            training=False):
    """Sum of both heads' value losses.

    `returns` and `old_value_predictions` are dicts keyed 'extrinsic' and
    'intrinsic'. The per-head losses are kept on `self._head_value_losses`
    for logging, as PPOAgent keeps `_clip_fraction`.
    """
    del debug_summaries
    values, _ = self._collect_policy.apply_value_network(
        time_steps.observation, time_steps.step_type, training=training)
    # The PPO twin never trains the intrinsic head (its loss is reported 0).
    heads = (EXTRINSIC, INTRINSIC) if self._use_intrinsic_reward else (
        EXTRINSIC,)
    head_losses = {INTRINSIC: tf.constant(0.0)}
    for head in heads:
      error = tf.math.squared_difference(returns[head], values[head])
      if self._value_clipping > 0:
        if old_value_predictions is None:
          raise ValueError('Value clipping needs old_value_predictions.')
        old = old_value_predictions[head]
        clipped = old + tf.clip_by_value(values[head] - old,
                                         -self._value_clipping,
                                         self._value_clipping)
        error = tf.maximum(error,
                           tf.math.squared_difference(returns[head], clipped))
      if self._aggregate_losses_across_replicas:
        loss = common.aggregate_losses(
            per_example_loss=error, sample_weight=weights).total_loss
      else:
        loss = tf.math.reduce_mean(error * weights)
      head_losses[head] = loss * self._value_pred_loss_coef
    self._head_value_losses = head_losses
    return head_losses[EXTRINSIC] + head_losses[INTRINSIC]

  def predictor_loss(self, rnd_inputs, target_features, mask):
    """Masked mean prediction error: `sum(mask * err) / max(sum(mask), 1)`."""
    predicted, _ = self._rnd_predictor_net(rnd_inputs, training=True)
    errors = maths.prediction_error(predicted, target_features)
    return maths.masked_mean(errors, mask)

  # -------------------------------------------------------------- train ---

  def _train(self, experience, weights):
    if self._optimizer is None:
      raise ValueError('Optimizer is undefined.')
    if self._compute_value_and_advantage_in_train:
      processed = self._preprocess(experience)
    else:
      processed = experience
    info = processed.policy_info

    valid_mask = ppo_utils.make_trajectory_mask(processed)
    masked_weights = valid_mask if weights is None else weights * valid_mask

    old_distribution = ppo_utils.distribution_from_spec(
        self._action_distribution_spec, info[rnd_policy.DIST_PARAMS],
        legacy_distribution_network=isinstance(
            self._actor_net, network.DistributionNetwork))
    old_log_probs = common.log_probability(
        old_distribution, processed.action, self._action_spec)

    # Advantages are normalised over the rows that train, unlike PPOAgent,
    # which also counts the zero-padded and boundary rows.
    advantages = info[ADVANTAGE]
    advantage_mean, advantage_variance = maths.masked_moments(
        advantages, masked_weights)
    normalized_advantages = ((advantages - advantage_mean) /
                             tf.sqrt(advantage_variance + 1e-8))

    # RND inputs and target features are fixed during the update: the
    # normaliser is only updated after it, as in the paper's code.
    if self._use_intrinsic_reward:
      rnd_inputs = tf.stop_gradient(self.rnd_inputs(processed.observation))
      target_features, _ = self._rnd_target_net(rnd_inputs)
      target_features = tf.stop_gradient(target_features)

    per_row = {
        'time_steps': ts.TimeStep(
            step_type=processed.step_type,
            reward=processed.reward,
            discount=processed.discount,
            observation=processed.observation),
        'actions': processed.action,
        'old_log_probs': old_log_probs,
        'returns': {EXTRINSIC: info[RETURN],
                    INTRINSIC: info[INTRINSIC_RETURN]},
        'old_values': {
            EXTRINSIC: info[rnd_policy.VALUE_PREDICTION],
            INTRINSIC: info[rnd_policy.INTRINSIC_VALUE_PREDICTION]},
        'advantages': normalized_advantages,
        'dist_params': info[rnd_policy.DIST_PARAMS],
        'weights': masked_weights,
    }
    if self._use_intrinsic_reward:
      per_row['rnd_inputs'] = rnd_inputs
      per_row['target_features'] = target_features

    batch_size = tf.shape(masked_weights)[0]
    static_batch_size = masked_weights.shape[0]
    if (static_batch_size is not None and
        static_batch_size < self._num_minibatches):
      raise ValueError(f'Batch of {static_batch_size} sequences cannot make '
                       f'{self._num_minibatches} minibatches.')

    variables_to_train = list(object_identity.ObjectIdentitySet(
        self._actor_net.trainable_weights +
        self._value_net.trainable_weights))
    variables_to_train = sorted(variables_to_train, key=lambda v: v.name)
    predictor_variables = (
        self._rnd_predictor_net.trainable_variables
        if self._use_intrinsic_reward else [])

    totals = collections.defaultdict(list)
    loss_info = None
    for epoch in range(self._num_epochs):
      permutation = tf.random.shuffle(tf.range(batch_size))
      for minibatch in range(self._num_minibatches):
        with tf.name_scope(f'epoch_{epoch}_minibatch_{minibatch}'):
          start = minibatch * batch_size // self._num_minibatches
          end = (minibatch + 1) * batch_size // self._num_minibatches
          indices = permutation[start:end]
          batch = tf.nest.map_structure(
              lambda t, i=indices: tf.gather(t, i), per_row)
          debug = self._debug_summaries and epoch in (0, self._num_epochs - 1)

          with tf.GradientTape() as tape:
            loss_info = self.get_loss(
                batch['time_steps'],
                batch['actions'],
                batch['old_log_probs'],
                batch['returns'],
                batch['advantages'],
                batch['dist_params'],
                batch['weights'],
                self.train_step_counter,
                debug,
                old_value_predictions=batch['old_values'],
                training=True)
          grads = tape.gradient(loss_info.loss, variables_to_train)
          if self._gradient_clipping > 0:
            grads, _ = tf.clip_by_global_norm(grads, self._gradient_clipping)
          grads_and_vars = tuple(zip(grads, variables_to_train))
          if self._summarize_grads_and_vars and debug:
            eager_utils.add_gradients_summaries(grads_and_vars,
                                                self.train_step_counter)
          self._optimizer.apply_gradients(grads_and_vars)

          if self._use_intrinsic_reward:
            predictor_mask = maths.predictor_update_mask(
                tf.shape(batch['weights']),
                self._predictor_update_proportion)
            with tf.GradientTape() as rnd_tape:
              predictor_loss = self.predictor_loss(
                  batch['rnd_inputs'], batch['target_features'],
                  predictor_mask)
            predictor_grads = rnd_tape.gradient(predictor_loss,
                                                predictor_variables)
            self._rnd_optimizer.apply_gradients(
                zip(predictor_grads, predictor_variables))
          else:
            predictor_mask = tf.zeros_like(batch['weights'])
            predictor_loss = tf.constant(0.0)
          self.train_step_counter.assign_add(1)

          extra = loss_info.extra
          totals['policy_gradient_loss'].append(extra.policy_gradient_loss)
          totals['entropy_regularization_loss'].append(
              extra.entropy_regularization_loss)
          totals['l2_regularization_loss'].append(
              extra.l2_regularization_loss)
          totals['extrinsic_value_loss'].append(
              self._head_value_losses[EXTRINSIC])
          totals['intrinsic_value_loss'].append(
              self._head_value_losses[INTRINSIC])
          totals['predictor_loss'].append(predictor_loss)
          totals['total_loss'].append(loss_info.loss + predictor_loss)
          totals['predictor_update_fraction'].append(
              tf.reduce_mean(predictor_mask))

    if self.update_normalizers_in_train:
      self.update_observation_normalizer(processed.observation)
      self.update_reward_normalizer(processed.reward)

    means = {name: tf.add_n(values) / len(values)
             for name, values in totals.items()}
    self._write_summaries(processed, masked_weights, means)

    return tf_agent.LossInfo(
        loss=means['total_loss'],
        extra=RndPPOLossInfo(
            policy_gradient_loss=means['policy_gradient_loss'],
            extrinsic_value_loss=means['extrinsic_value_loss'],
            intrinsic_value_loss=means['intrinsic_value_loss'],
            l2_regularization_loss=means['l2_regularization_loss'],
            entropy_regularization_loss=means['entropy_regularization_loss'],
            predictor_loss=means['predictor_loss'],
            clip_fraction=loss_info.extra.clip_fraction))

  def _write_summaries(self, processed, weights, means):
    step = self.train_step_counter
    info = processed.policy_info
    losses = {name: means[name] for name in (
        'policy_gradient_loss', 'entropy_regularization_loss',
        'extrinsic_value_loss', 'intrinsic_value_loss', 'predictor_loss',
        'total_loss')}
    losses['explained_variance_extrinsic'] = maths.explained_variance(
        info[rnd_policy.VALUE_PREDICTION], info[RETURN], weights)
    losses['explained_variance_intrinsic'] = maths.explained_variance(
        info[rnd_policy.INTRINSIC_VALUE_PREDICTION], info[INTRINSIC_RETURN],
        weights)
    summaries.write_losses(step, losses)
    if not self._use_intrinsic_reward:
      return
    summaries.write_intrinsic(
        step,
        raw_rewards=info[RAW_INTRINSIC_REWARD],
        normalized_rewards=info[INTRINSIC_REWARD],
        weights=weights,
        return_std=self._intrinsic_return_normalizer.std(),
        return_mean=self._intrinsic_return_normalizer.mean(),
        predictor_update_fraction=means['predictor_update_fraction'])
    if self._rnd_observation_normalizer.enabled:
      mean, std = self._rnd_observation_normalizer.mean_and_std()
      summaries.write_observation_normalizer(
          step, mean, std, self._rnd_observation_normalizer.count())
