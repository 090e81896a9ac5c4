"""RND-PPO: PPO with Random Network Distillation (Burda et al. 2018).

arXiv 1810.12894, sections 2.2-2.4 and the hyperparameter tables.
`RndPPOAgent` is a `PPOClipAgent` (through `EpochLoopPPOClipAgent`): the
stock `PPOPolicy` collects and evaluates, and the parent's clipped
surrogate, entropy term, advantage normalisation and TD(lambda) returns
train it. It overrides only what RND changes:

* `_preprocess`: both value heads of the batch (a `DualValueNetwork`
  emits `{'extrinsic', 'intrinsic'}`), the intrinsic reward component's
  rewards of the next observations, the parent's episodic GAE on the
  extrinsic stream and a non-episodic GAE (gamma_I) on the intrinsic one,
  combined as `ext_coef * A_E + int_coef * A_I`;
* `_minibatch_loss`: the policy and both heads from one call of the
  networks (a shared torso runs once), and a value loss per head;
* `_minibatch_update`: the component's own predictor step on the same
  minibatch, after the policy's;
* `update_observation_normalizer` (`PPOLearner`'s once-per-batch hook):
  the intrinsic-return filter, then the policy's and the RND input
  normalisers.

With `NoIntrinsicReward` (the PPO twin) the intrinsic head is never
trained and the advantage is the extrinsic one: the updates are
`EpochLoopPPOClipAgent`'s (tests/test_rnd_agent.py). One departure from
`PPOAgent` applies to both: a truncated episode (LAST with discount 1)
bootstraps from the value of its last observation, where `PPOAgent`
treats it as terminated (`compute_return_and_advantage`).

Values are computed in `train` (`compute_value_and_advantage_in_train`),
because `PPOPolicy` records a single scalar value in its info when it
records one at all; a stock `PPOLearner` drives the agent without
`minibatch_size` (examples/rnd_ppo_reverb_learner.py).
"""

import collections
from typing import Optional, Text

import tensorflow as tf
from tf_agents.agents import tf_agent
from tf_agents.networks import network
from tf_agents.trajectories import time_step as ts
from tf_agents.typing import types
from tf_agents.utils import common
from tf_agents.utils import nest_utils

from tfa_explore.agents import ppo_clip
from tfa_explore.agents.intrinsic import reward as intrinsic
from tfa_explore.agents.rnd_ppo import maths
from tfa_explore.agents.rnd_ppo import summaries
from tfa_explore.networks import dual_value_network
from tfa_explore.networks import shared_torso

EXTRINSIC = dual_value_network.EXTRINSIC
INTRINSIC = dual_value_network.INTRINSIC

# Keys `_preprocess` adds to policy info, beside PPOAgent's
# `value_prediction` (V_E), `return` (extrinsic) and `advantage` (combined).
INTRINSIC_VALUE_PREDICTION = 'intrinsic_value_prediction'
INTRINSIC_RETURN = 'intrinsic_return'
INTRINSIC_REWARD = 'intrinsic_reward'  # After normalisation.
RAW_INTRINSIC_REWARD = 'raw_intrinsic_reward'

RndPPOLossInfo = collections.namedtuple(
    'RndPPOLossInfo',
    (
        'policy_gradient_loss',
        'extrinsic_value_loss',
        'intrinsic_value_loss',
        'entropy_regularization_loss',
        'predictor_loss',
        'clip_fraction',
    ),
)


def _check_dual_value_net(value_net, observation_spec):
  """Raises unless `value_net` emits `{'extrinsic', 'intrinsic'}` values."""
  output_spec = value_net.create_variables(observation_spec)
  keys = set(output_spec) if isinstance(output_spec, dict) else None
  if keys != {EXTRINSIC, INTRINSIC}:
    raise ValueError(
        'RndPPOAgent needs a value_net with an extrinsic and an intrinsic '
        'head, e.g. tfa_explore.networks.DualValueNetwork (outputs '
        f"{{'{EXTRINSIC}': [B], '{INTRINSIC}': [B]}}); got "
        f'{type(value_net).__name__} with output spec {output_spec}.')


class RndPPOAgent(ppo_clip.EpochLoopPPOClipAgent):
  """PPO-Clip with an intrinsic reward and two value heads.

  Defaults are the paper's (Burda et al. 2018, Table 5 / appendix A.5).
  Built from gin by `tfa_explore.experiments.rnd_ppo.rnd_ppo_agent` only.
  """

  LOSS_INFO_FIELDS = (('loss',) + RndPPOLossInfo._fields +
                      ('entropy', 'predictor_update_fraction'))

  def __init__(
      self,
      time_step_spec: ts.TimeStep,
      action_spec: types.NestedTensorSpec,
      optimizer: types.Optimizer,
      actor_net: network.Network,
      value_net: network.Network,
      intrinsic_reward: Optional[intrinsic.IntrinsicReward] = None,
      extrinsic_advantage_coef: types.Float = 2.0,
      discount_factor: types.Float = 0.999,
      lambda_value: types.Float = 0.95,
      importance_ratio_clipping: types.Float = 0.1,
      entropy_regularization: types.Float = 0.001,
      value_pred_loss_coef: types.Float = 0.5,
      num_epochs: int = 4,
      num_minibatches: int = 1,
      normalize_advantages: bool = True,
      greedy_eval: bool = True,
      normalize_observations: bool = True,
      gradient_clipping: Optional[types.Float] = None,
      value_clipping: Optional[types.Float] = None,
      update_normalizers_in_train: bool = True,
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
      intrinsic_reward: An `intrinsic.IntrinsicReward`, e.g.
        `RndIntrinsicReward`; None (or `NoIntrinsicReward()`) makes the PPO
        twin. It brings the intrinsic settings: weight of A_I (paper: 1),
        gamma_I (paper: 0.99), non-episodic stream (paper: True).
      extrinsic_advantage_coef: Weight of A_E (paper: 2; 0 is pure
        curiosity).
      discount_factor: gamma_E (paper: 0.999).
      lambda_value: GAE lambda of both streams (paper: 0.95).
      importance_ratio_clipping: PPO clip epsilon (paper: 0.1).
      entropy_regularization: Entropy coefficient (paper: 0.001).
      value_pred_loss_coef: Weight of each value loss (paper's code: 0.5 *
        squared error per head).
      num_epochs: Optimisation epochs per rollout (paper: 4).
      num_minibatches: Minibatches per epoch along the environment axis
        (paper: 4, bound by our gin files); 1 is `PPOClipAgent`'s step.
      normalize_advantages: Whiten the combined advantages per batch
        (`EpochLoopPPOClipAgent`; True: PPO's default).
      greedy_eval: Greedy evaluation policy.
      normalize_observations: The policy's own observation normaliser
        (independent of the intrinsic reward's).
      gradient_clipping: Global-norm clip of the policy/value gradients.
      value_clipping: Clip of both heads' values around the batch's values
        before the update (`maths.value_loss`).
      update_normalizers_in_train: `train` advances the statistics itself:
        the intrinsic-return filter before it normalises the batch's
        intrinsic rewards, the observation normalisers after the update.
        False with `PPOLearner`, which calls `update_observation_normalizer`
        once per collected batch; `train` then changes no statistic.
      debug_summaries: TF-Agents' debug summaries; with
        `summarize_grads_and_vars`, gradient summaries of the first and
        last epoch.
      summarize_grads_and_vars: See `debug_summaries`.
      train_step_counter: Counter incremented per gradient step.
      name: Agent name.

    Raises:
      TypeError: A network is not a TF-Agents `Network`.
      ValueError: The value network lacks a head, or a bad setting.
    """
    for net_name, net in (('actor_net', actor_net), ('value_net', value_net)):
      if not isinstance(net, network.Network):
        raise TypeError(f'{net_name} must be a tf_agents Network, got {net}.')
      if net.state_spec:
        raise ValueError(f'RndPPOAgent needs a stateless {net_name}.')
    _check_dual_value_net(value_net, time_step_spec.observation)
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
        value_pred_loss_coef=value_pred_loss_coef,
        num_epochs=num_epochs,
        num_minibatches=num_minibatches,
        normalize_advantages=normalize_advantages,
        use_gae=True,
        use_td_lambda_return=True,
        # The paper clips extrinsic rewards in the environment instead.
        normalize_rewards=False,
        normalize_observations=normalize_observations,
        gradient_clipping=gradient_clipping,
        value_clipping=value_clipping,
        compute_value_and_advantage_in_train=True,
        update_normalizers_in_train=update_normalizers_in_train,
        debug_summaries=debug_summaries,
        summarize_grads_and_vars=summarize_grads_and_vars,
        train_step_counter=train_step_counter,
        name=name)
    self._intrinsic_reward = intrinsic_reward or intrinsic.NoIntrinsicReward()
    self._extrinsic_advantage_coef = float(extrinsic_advantage_coef)
    # The twin never trains the intrinsic head (its loss is reported 0).
    self._trained_value_heads = (
        (EXTRINSIC, INTRINSIC) if self._intrinsic_reward.enabled
        else (EXTRINSIC,))

  def _initialize(self):
    super()._initialize()
    self._intrinsic_reward.build_optimizer()

  @property
  def intrinsic_reward(self) -> intrinsic.IntrinsicReward:
    return self._intrinsic_reward

  # ----------------------------------------------------------- statistics ---

  def update_observation_normalizer(self, batched_observations,
                                    step_types=None):
    """Advances every statistic of one collected batch, once.

    The public method `PPOLearner` calls once per collected batch; our
    `train` does the same work itself when `update_normalizers_in_train`.
    In this order: the intrinsic-return filter takes the batch's raw
    intrinsic rewards (the novelty of `o_1 .. o_T`, seen through the RND
    normaliser before this batch), then the policy's and the intrinsic
    reward's observation normalisers take the observations.

    Args:
      batched_observations: `[B, T + 1, ...]` (or `[T + 1, ...]`)
        observations, each environment's in time order.
      step_types: Their step types, for an intrinsic reward paid on first
        visits only (`PPOLearner` passes none: each row is one episode).
    """
    if self._intrinsic_reward.enabled:
      sequences = self._as_batch_of_sequences(batched_observations)
      if step_types is not None:
        step_types = tf.reshape(step_types,
                                tf.shape(tf.nest.flatten(sequences)[0])[:2])
      self._intrinsic_reward.rewards(
          tf.nest.map_structure(lambda o: o[:, 1:], sequences),
          update_statistics=True,
          first_visits=self._next_first_visits(sequences, step_types))
    self._update_observation_normalizers(batched_observations)

  def update_reward_normalizer(self, batched_rewards):
    """No-op (no extrinsic reward normaliser); `PPOLearner` calls it."""
    del batched_rewards

  def _update_normalizers_in_train(self, processed):
    # The return filter advanced in `_preprocess`, before it normalised.
    self._update_observation_normalizers(processed.observation)

  def _update_observation_normalizers(self, observations):
    if self._observation_normalizer:
      self._observation_normalizer.update(observations, outer_dims=[0, 1])
    self._intrinsic_reward.update_observation_normalizer(observations)

  def _next_first_visits(self, observations, step_types):
    """The intrinsic gate of `o_1 .. o_T` from `[B, T + 1]` sequences."""
    if step_types is None:
      step_types = tf.fill(tf.shape(tf.nest.flatten(observations)[0])[:2],
                           ts.StepType.MID)
    first_visits = self._intrinsic_reward.first_visits(observations,
                                                       step_types)
    return None if first_visits is None else first_visits[:, 1:]

  def _as_batch_of_sequences(self, observations):
    """`[B, T, ...]` observations from `[B, T, ...]` or `[T, ...]`."""
    outer_rank = nest_utils.get_outer_rank(
        observations, self.time_step_spec.observation)
    if outer_rank == 2:
      return observations
    if outer_rank == 1:
      return nest_utils.batch_nested_tensors(observations)
    raise ValueError('Observations must be [B, T, ...] or [T, ...] '
                     f'sequences; got outer rank {outer_rank}.')

  # --------------------------------------------------- advantage / return ---

  def compute_return_and_advantage(self, next_time_steps, value_preds):
    """The extrinsic stream: `PPOAgent`'s GAE and TD(lambda) returns, except
    that a truncated episode bootstraps from V(o_LAST).

    Args:
      next_time_steps: `[B, T]` time steps after each action.
      value_preds: `[B, T + 1]` extrinsic values of the rows.

    Returns:
      `(returns, advantages)`, each `[B, T]`.
    """
    discounts = maths.episodic_discounts(
        next_time_steps.step_type, next_time_steps.discount,
        self._discount_factor)
    advantages = maths.generalized_advantages(
        next_time_steps.reward, value_preds, discounts, self._lambda)
    return advantages + value_preds[:, :-1], advantages

  def _preprocess(self, experience):
    """Adds both values, both returns, the rewards and the advantage.

    Args:
      experience: A `Trajectory` `[B, T + 1, ...]` or `[T + 1, ...]` of
        contiguous steps from the collect policy.

    Returns:
      The trajectory with policy info extended by `value_prediction` (V_E)
      and `intrinsic_value_prediction`, `return` (extrinsic),
      `intrinsic_return`, `advantage` (combined), `intrinsic_reward`
      (normalised) and `raw_intrinsic_reward`; the last row, the bootstrap
      only, gets zero returns and advantages (masked in training).
    """
    outer_rank = nest_utils.get_outer_rank(
        experience.discount, self.collect_data_spec.discount)
    batched = (nest_utils.batch_nested_tensors(experience)
               if outer_rank == 1 else experience)
    num_steps = batched.discount.shape[1]
    if num_steps is not None and num_steps <= 1:
      raise ValueError('RND-PPO preprocessing needs >1 steps per sequence.')
    values, _ = self._collect_policy.apply_value_network(
        batched.observation, batched.step_type, value_state=(),
        training=False)
    values = tf.nest.map_structure(tf.stop_gradient, values)
    _, _, next_time_steps = self._collected_as_transition(batched)
    returns, advantages = self.compute_return_and_advantage(
        next_time_steps, values[EXTRINSIC])
    advantages *= self._extrinsic_advantage_coef

    # Intrinsic reward of transition t is the novelty of o_{t+1}.
    rewards = self._intrinsic_reward.rewards(
        tf.nest.map_structure(lambda o: o[:, 1:], batched.observation),
        update_statistics=self.update_normalizers_in_train,
        first_visits=self._next_first_visits(batched.observation,
                                             batched.step_type))
    if self._intrinsic_reward.enabled:
      intrinsic_advantages = maths.generalized_advantages(
          rewards.normalized, values[INTRINSIC],
          self._intrinsic_discounts(next_time_steps), self._lambda)
      advantages += self._intrinsic_reward.coef * intrinsic_advantages
      intrinsic_returns = intrinsic_advantages + values[INTRINSIC][:, :-1]
    else:
      intrinsic_returns = tf.zeros_like(returns)

    def _pad(x):
      return tf.concat([x, tf.zeros_like(x[:, :1])], axis=1)

    new_info = dict(batched.policy_info)
    new_info.update({
        'value_prediction': values[EXTRINSIC],
        INTRINSIC_VALUE_PREDICTION: values[INTRINSIC],
        'return': _pad(returns),
        INTRINSIC_RETURN: _pad(intrinsic_returns),
        'advantage': _pad(advantages),
        INTRINSIC_REWARD: _pad(rewards.normalized),
        RAW_INTRINSIC_REWARD: _pad(rewards.raw),
    })
    if outer_rank == 1:
      new_info = nest_utils.unbatch_nested_tensors(new_info)
    return experience.replace(policy_info=new_info)

  def _intrinsic_discounts(self, next_time_steps):
    gamma = self._intrinsic_reward.discount
    if self._intrinsic_reward.non_episodic:
      return maths.non_episodic_discounts(next_time_steps.step_type, gamma)
    return maths.episodic_discounts(next_time_steps.step_type,
                                    next_time_steps.discount, gamma)

  # ------------------------------------------------------------- losses ---

  def _training_rows(self, processed, weights):
    rows = super()._training_rows(processed, weights)
    info = processed.policy_info
    rows['returns'] = {EXTRINSIC: info['return'],
                       INTRINSIC: info[INTRINSIC_RETURN]}
    rows['old_values'] = {EXTRINSIC: info['value_prediction'],
                          INTRINSIC: info[INTRINSIC_VALUE_PREDICTION]}
    rows['intrinsic'] = self._intrinsic_reward.training_inputs(
        processed.observation)
    return rows

  def _minibatch_loss(self, batch):
    time_steps = batch['time_steps']
    weights = batch['weights']
    observations = time_steps.observation
    if self._observation_normalizer:
      observations = self._observation_normalizer.normalize(observations)
    # One call for the policy and both heads: a shared torso runs once and
    # takes the gradients of every loss below.
    distribution, values = shared_torso.actor_and_value(
        self._actor_net, self._value_net, observations, time_steps.step_type,
        training=True)
    policy_gradient_loss = self.policy_gradient_loss(
        time_steps, batch['actions'], tf.stop_gradient(batch['old_log_probs']),
        tf.stop_gradient(batch['advantages']), distribution, weights,
        debug_summaries=self._debug_summaries)
    value_losses = {INTRINSIC: tf.constant(0.0)}
    for head in self._trained_value_heads:
      value_losses[head] = self._value_pred_loss_coef * maths.value_loss(
          batch['returns'][head], values[head], weights,
          batch['old_values'][head], self._value_clipping)
    entropy = common.entropy(distribution, self.action_spec, outer_rank=2)
    entropy = (tf.zeros_like(weights) if entropy is None else
               tf.cast(entropy, tf.float32))
    entropy_loss = self.entropy_regularization_loss(
        time_steps, entropy, weights, self._debug_summaries)
    total = (policy_gradient_loss + value_losses[EXTRINSIC] +
             value_losses[INTRINSIC] + entropy_loss)
    extra = RndPPOLossInfo(
        policy_gradient_loss=policy_gradient_loss,
        extrinsic_value_loss=value_losses[EXTRINSIC],
        intrinsic_value_loss=value_losses[INTRINSIC],
        entropy_regularization_loss=entropy_loss,
        predictor_loss=tf.constant(0.0),
        clip_fraction=tf.convert_to_tensor(self._clip_fraction, tf.float32))
    parts = dict(extra._asdict(), loss=total,
                 entropy=tf.reduce_mean(entropy * weights),
                 predictor_update_fraction=tf.constant(0.0))
    return tf_agent.LossInfo(loss=total, extra=extra), parts

  def _minibatch_update(self, batch, record_gradients):
    parts = super()._minibatch_update(batch, record_gradients)
    predictor = self._intrinsic_reward.train_step(batch['intrinsic'])
    parts.update(predictor_loss=predictor.loss,
                 predictor_update_fraction=predictor.update_fraction)
    return parts

  def _loss_info_of(self, values):
    return tf_agent.LossInfo(
        loss=values['loss'] + values['predictor_loss'],
        extra=RndPPOLossInfo(
            **{name: values[name] for name in RndPPOLossInfo._fields}))

  def _write_summaries(self, processed, weights, means):
    info = processed.policy_info
    losses = {name: means[name] for name in RndPPOLossInfo._fields +
              ('entropy',)}
    losses['total_loss'] = means['loss'] + means['predictor_loss']
    losses['explained_variance_extrinsic'] = maths.explained_variance(
        info['value_prediction'], info['return'], weights)
    losses['explained_variance_intrinsic'] = maths.explained_variance(
        info[INTRINSIC_VALUE_PREDICTION], info[INTRINSIC_RETURN], weights)
    summaries.write_losses(self.train_step_counter, losses)
    self._intrinsic_reward.write_summaries(
        self.train_step_counter,
        intrinsic.IntrinsicRewards(raw=info[RAW_INTRINSIC_REWARD],
                                   normalized=info[INTRINSIC_REWARD]),
        weights, means['predictor_update_fraction'])
