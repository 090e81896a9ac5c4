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
* `_minibatch_update`: the component's own learner step (RND's
  predictor) on the same minibatch, after the policy's;
* `update_observation_normalizer` (`PPOLearner`'s once-per-batch hook):
  the component's return statistics, then the policy's and the
  component's input statistics.

The agent asks of the component only what `intrinsic.IntrinsicReward`
declares, so any intrinsic reward plugs in. Without one (the PPO twin) the
intrinsic head is never trained and the advantage is the extrinsic one:
the updates are `EpochLoopPPOClipAgent`'s (tests/test_rnd_agent.py). One
departure from `PPOAgent` applies to both: a truncated episode (LAST with
discount 1) bootstraps from the value of its last observation, where
`PPOAgent` treats it as terminated (`compute_return_and_advantage`).

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
        'intrinsic_reward_loss',
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
  Built from gin by `tfa_explore.experiments.ppo.ppo_clip_agent` only.
  """

  LOSS_INFO_FIELDS = (('loss',) + RndPPOLossInfo._fields +
                      ('entropy', 'intrinsic_update_fraction'))

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
        `RndIntrinsicReward`; None makes the PPO twin. Its `stream` brings
        the intrinsic settings: weight of A_I (paper: 1), gamma_I (paper:
        0.99), non-episodic stream (paper: True).
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
    self._extrinsic_advantage_coef = float(extrinsic_advantage_coef)
    # The twin never trains the intrinsic head (its loss is reported 0).
    self._trained_value_heads = (
        (EXTRINSIC,) if intrinsic_reward is None else (EXTRINSIC, INTRINSIC))
    self._intrinsic_reward = (_NoIntrinsicReward() if intrinsic_reward is None
                              else intrinsic_reward)

  @property
  def intrinsic_reward(self) -> Optional[intrinsic.IntrinsicReward]:
    """The component, None for the PPO twin."""
    if isinstance(self._intrinsic_reward, _NoIntrinsicReward):
      return None
    return self._intrinsic_reward

  # ----------------------------------------------------------- statistics ---

  def update_observation_normalizer(self, batched_observations,
                                    step_types=None):
    """Advances every statistic of one collected batch, once.

    The public method `PPOLearner` calls once per collected batch; our
    `train` does the same work itself when `update_normalizers_in_train`.
    In this order: the component's return statistics take the batch's
    rewards (of `o_1 .. o_T`, seen through its input statistics before
    this batch), then the policy's and the component's input statistics
    take the observations.

    Args:
      batched_observations: `[B, T + 1, ...]` (or `[T + 1, ...]`)
        observations, each environment's in time order.
      step_types: Their step types, for an intrinsic reward paid on first
        visits only (`PPOLearner` passes none: each row is one episode).
    """
    sequences = self._as_batch_of_sequences(batched_observations)
    outer_shape = tf.shape(tf.nest.flatten(sequences)[0])[:2]
    step_types = (tf.fill(outer_shape, ts.StepType.MID) if step_types is None
                  else tf.reshape(step_types, outer_shape))
    self._intrinsic_reward.rewards(
        intrinsic.Sequences(observation=sequences, step_type=step_types,
                            policy_info=()),
        first=1, update_statistics=True)
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
    self._intrinsic_reward.observe(observations)

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
        batched, first=1, update_statistics=self.update_normalizers_in_train)
    if self.intrinsic_reward is None:
      # The twin: no intrinsic stream, so no intrinsic returns to compute.
      intrinsic_returns = tf.zeros_like(returns)
    else:
      stream = self._intrinsic_reward.stream
      intrinsic_advantages = maths.generalized_advantages(
          rewards.normalized, values[INTRINSIC],
          self._intrinsic_discounts(next_time_steps, stream), self._lambda)
      advantages += stream.coef * intrinsic_advantages
      intrinsic_returns = intrinsic_advantages + values[INTRINSIC][:, :-1]

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

  def _intrinsic_discounts(self, next_time_steps, stream):
    gamma = stream.discount
    if stream.non_episodic:
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
        intrinsic_reward_loss=tf.constant(0.0),
        clip_fraction=tf.convert_to_tensor(self._clip_fraction, tf.float32))
    parts = dict(extra._asdict(), loss=total,
                 entropy=tf.reduce_mean(entropy * weights),
                 intrinsic_update_fraction=tf.constant(0.0))
    return tf_agent.LossInfo(loss=total, extra=extra), parts

  def _minibatch_update(self, batch, record_gradients):
    parts = super()._minibatch_update(batch, record_gradients)
    reward_loss = self._intrinsic_reward.train_step(batch['intrinsic'])
    parts.update(intrinsic_reward_loss=reward_loss.loss,
                 intrinsic_update_fraction=reward_loss.update_fraction)
    return parts

  def _loss_info_of(self, values):
    return tf_agent.LossInfo(
        loss=values['loss'] + values['intrinsic_reward_loss'],
        extra=RndPPOLossInfo(
            **{name: values[name] for name in RndPPOLossInfo._fields}))

  def _write_summaries(self, processed, weights, means):
    info = processed.policy_info
    losses = {name: means[name] for name in RndPPOLossInfo._fields +
              ('entropy',)}
    losses['explained_variance_extrinsic'] = maths.explained_variance(
        info['value_prediction'], info['return'], weights)
    if self.intrinsic_reward is None:
      # Plain PPO: no intrinsic stream, so nothing of it on TensorBoard.
      for name in ('intrinsic_value_loss', 'intrinsic_reward_loss'):
        del losses[name]
    else:
      losses['explained_variance_intrinsic'] = maths.explained_variance(
          info[INTRINSIC_VALUE_PREDICTION], info[INTRINSIC_RETURN], weights)
    summaries.write_losses(self.train_step_counter, losses)
    self._write_learning_rate()
    self._intrinsic_reward.write_summaries(
        self.train_step_counter,
        intrinsic.IntrinsicRewards(raw=info[RAW_INTRINSIC_REWARD],
                                   normalized=info[INTRINSIC_REWARD]),
        weights, means['intrinsic_update_fraction'])


class _NoIntrinsicReward(intrinsic.IntrinsicReward):
  """What the agent holds without a component: weight 0, zero rewards,
  nothing to train, observe or write, so the PPO twin runs the same code."""

  @property
  def stream(self):
    return intrinsic.IntrinsicStream(coef=0.0, discount=0.0,
                                     non_episodic=False)

  def rewards(self, experience, first=1, update_statistics=False, mask=None):
    del update_statistics, mask
    observation = tf.nest.flatten(experience.observation)[0]
    zeros = tf.zeros(tf.shape(observation[:, first:])[:2], tf.float32)
    return intrinsic.IntrinsicRewards(raw=zeros, normalized=zeros)

  def training_inputs(self, observations):
    del observations
    return ()

  def train_step(self, inputs):
    del inputs
    return intrinsic.IntrinsicLoss(loss=tf.constant(0.0),
                                   update_fraction=tf.constant(0.0))

  def observe(self, observations):
    del observations

  def write_summaries(self, step, rewards, weights, update_fraction):
    del step, rewards, weights, update_fraction
