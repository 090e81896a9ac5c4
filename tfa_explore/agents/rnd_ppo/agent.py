"""RND-PPO: PPO with Random Network Distillation (Burda et al. 2018).

arXiv 1810.12894, sections 2.2-2.4 and the hyperparameter tables. The agent
is a `TFAgent` built from PPO-Clip's parts:

* its value network has an extrinsic and an intrinsic head
  (`tfa_explore.networks.DualValueNetwork`), both recorded in the collect
  policy's info (`RndPPOPolicy`);
* the intrinsic reward is a component (`intrinsic.IntrinsicReward`): RND
  (`RndIntrinsicReward`) or none (`NoIntrinsicReward`, the PPO twin);
* `_preprocess` asks the component for the rewards of the next
  observations and runs episodic GAE on the extrinsic stream (gamma_E,
  truncation bootstraps) and non-episodic GAE on the intrinsic one
  (gamma_I), combining the advantages as `ext_coef * A_E + int_coef * A_I`;
* `_train` runs PPO epochs over minibatches of whole env sequences, trains
  both value heads and, on the same minibatch, the component's own learner;
  then updates the normalisers.

The twin differs from RND-PPO in two places only, both decided by
`intrinsic_reward.enabled`: the advantage is the extrinsic one alone
(`maths.extrinsic_gae`), and the intrinsic value head, although computed by
the policy, is never trained (its loss is reported as 0).

Why not a `PPOClipAgent` subclass: `PPOAgent.__init__` builds `PPOPolicy`
objects whose info spec cannot carry the intrinsic value, with no hook to
choose the policy class, so a subclass had to build its policies a second
time and read a dozen of the parent's private fields. Deriving from
`TFAgent` builds the policies once and reads no private field of a parent;
the PPO maths this needs (clipped surrogate, value loss) is in `maths.py`.
Three of our fields keep `PPOAgent`'s names because TF-Agents'
`PPOLearner` reads them: `_actor_net`, `_value_net` and
`_compute_value_and_advantage_in_train`. `PPOAgent` options no run uses
are not offered: L2 and KL penalties, log-prob clipping, reward
normalisation (the paper clips extrinsic rewards in the environment), and
losses not aggregated across replicas.

`compute_return_and_advantage(next_time_steps, value_preds)`, PPOAgent's
public method, cannot work here: dual GAE needs the step types of the rows
themselves, which `next_time_steps` do not carry. It raises, naming
`preprocess_sequence` and `maths.dual_gae` instead.
"""

import collections
from typing import Optional, Text

import tensorflow as tf
from tf_agents.agents import tf_agent
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
from tf_agents.utils import tensor_normalizer

from tfa_explore.agents.intrinsic import maths as intrinsic_maths
from tfa_explore.agents.intrinsic import reward as intrinsic
from tfa_explore.agents.rnd_ppo import maths
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


class RndPPOAgent(tf_agent.TFAgent):
  """PPO-Clip with an intrinsic reward and two value heads.

  Defaults are the paper's (Burda et al. 2018, Table 5 / appendix A.5).
  Built from gin by `tfa_explore.experiments.rnd_ppo.rnd_ppo_agent` only.
  """

  def __init__(
      self,
      time_step_spec: ts.TimeStep,
      action_spec: types.NestedTensorSpec,
      optimizer: types.Optimizer,
      actor_net: network.Network,
      value_net: network.Network,
      intrinsic_reward: Optional[intrinsic.IntrinsicReward] = None,
      extrinsic_advantage_coef: types.Float = 2.0,
      intrinsic_only: bool = False,
      discount_factor: types.Float = 0.999,
      lambda_value: types.Float = 0.95,
      importance_ratio_clipping: types.Float = 0.1,
      entropy_regularization: types.Float = 0.001,
      value_pred_loss_coef: types.Float = 0.5,
      num_epochs: int = 4,
      num_minibatches: int = 1,
      greedy_eval: bool = True,
      normalize_observations: bool = True,
      gradient_clipping: Optional[types.Float] = None,
      value_clipping: Optional[types.Float] = None,
      compute_value_and_advantage_in_train: bool = True,
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
      extrinsic_advantage_coef: Weight of A_E (paper: 2).
      intrinsic_only: Pure curiosity: forces the extrinsic weight to 0.
      discount_factor: gamma_E (paper: 0.999).
      lambda_value: GAE lambda of both streams (paper: 0.95).
      importance_ratio_clipping: PPO clip epsilon (paper: 0.1).
      entropy_regularization: Entropy coefficient (paper: 0.001).
      value_pred_loss_coef: Weight of each value loss (paper's code: 0.5 *
        squared error per head).
      num_epochs: Optimisation epochs per rollout (paper: 4).
      num_minibatches: Minibatches per epoch, split along the environment
        axis so sequences stay whole (paper: 4, bound by our gin files).
        The default 1 is `PPOClipAgent`'s behaviour: one gradient step per
        epoch on whatever batch `train` is given, so that a stock
        `PPOLearner`, which does its own minibatching, drives both agents
        alike.
      greedy_eval: Greedy evaluation policy.
      normalize_observations: The POLICY's own observation normaliser
        (independent of the intrinsic reward's).
      gradient_clipping: Global-norm clip of the policy/value gradients.
      value_clipping: Clip of both heads' values around the collect
        policy's (see `maths.value_loss`).
      compute_value_and_advantage_in_train: True: `train` takes collected
        trajectories and preprocesses them itself. False: experience must
        be preprocessed first (`preprocess_sequence`, e.g. in a Reverb
        dataset for `PPOLearner`). Values always come from the collect
        policy's info.
      update_normalizers_in_train: `train` advances the statistics itself:
        the intrinsic-return filter before it normalises the batch's
        intrinsic rewards, the observation normalisers after the update.
        False with `PPOLearner`, which calls `update_observation_normalizer`
        once per collected batch; `train` and `preprocess_sequence` then
        change no statistic.
      debug_summaries: With `summarize_grads_and_vars`, gradient summaries
        on the first and last epoch.
      summarize_grads_and_vars: See `debug_summaries`.
      train_step_counter: Counter incremented per gradient step.
      name: Agent name.

    Raises:
      TypeError: A network is not a TF-Agents `Network`.
      ValueError: Inconsistent settings.
    """
    for net_name, net in (('actor_net', actor_net), ('value_net', value_net)):
      if not isinstance(net, network.Network):
        raise TypeError(f'{net_name} must be a tf_agents Network, got {net}.')
    _check_dual_value_net(value_net, time_step_spec.observation)
    if num_minibatches < 1 or num_epochs < 1:
      raise ValueError('num_epochs and num_minibatches must be >= 1.')
    intrinsic_reward = intrinsic_reward or intrinsic.NoIntrinsicReward()
    if intrinsic_only and not intrinsic_reward.enabled:
      raise ValueError('intrinsic_only needs an intrinsic reward.')
    if intrinsic_reward.episodic_memory_size:
      raise ValueError(
          'RND-PPO has no episodic memory in its policy: build the intrinsic '
          'reward with episodic_memory_size = 0 (gin: intrinsic.'
          'rnd_intrinsic_reward.episodic_memory_size); it is R2D2\'s.')
    actor_output_spec = actor_net.create_variables(time_step_spec.observation)

    tf.Module.__init__(self, name=name)
    self._observation_normalizer = None
    if normalize_observations:
      self._observation_normalizer = (
          tensor_normalizer.StreamingTensorNormalizer(
              time_step_spec.observation, scope='normalize_observations'))
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
    super().__init__(
        time_step_spec,
        action_spec,
        policy,
        collect_policy,
        train_sequence_length=None,
        training_data_spec=training_data_spec,
        debug_summaries=debug_summaries,
        summarize_grads_and_vars=summarize_grads_and_vars,
        train_step_counter=train_step_counter)

    self._optimizer = optimizer
    self._actor_net = actor_net
    self._value_net = value_net
    self._intrinsic_reward = intrinsic_reward
    self._legacy_distribution_network = isinstance(
        actor_net, network.DistributionNetwork)
    self._action_distribution_spec = (
        actor_net.output_spec if self._legacy_distribution_network
        else actor_output_spec)
    self._extrinsic_advantage_coef = (
        0.0 if intrinsic_only else float(extrinsic_advantage_coef))
    self._discount_factor = discount_factor
    self._lambda = lambda_value
    self._importance_ratio_clipping = importance_ratio_clipping
    self._entropy_regularization = entropy_regularization
    self._value_pred_loss_coef = value_pred_loss_coef
    self._num_epochs = num_epochs
    self._num_minibatches = num_minibatches
    self._gradient_clipping = gradient_clipping or 0.0
    self._value_clipping = value_clipping or 0.0
    self._compute_value_and_advantage_in_train = (
        compute_value_and_advantage_in_train)
    self.update_normalizers_in_train = update_normalizers_in_train
    # The twin never trains the intrinsic head (its loss is reported 0).
    self._trained_value_heads = ((EXTRINSIC, INTRINSIC)
                                 if intrinsic_reward.enabled else (EXTRINSIC,))

  def _initialize(self):
    # Optimizer slots now, so the first traced `train` is traced once.
    if hasattr(self._optimizer, 'build'):
      self._optimizer.build(self._variables_to_train())
    self._intrinsic_reward.build_optimizer()

  def _variables_to_train(self):
    variables = object_identity.ObjectIdentitySet(
        self._actor_net.trainable_weights +
        self._value_net.trainable_weights)
    # Sorted by name, as PPOAgent does, so every process agrees.
    return sorted(variables, key=lambda v: v.name)

  @property
  def actor_net(self) -> network.Network:
    return self._actor_net

  @property
  def intrinsic_reward(self) -> intrinsic.IntrinsicReward:
    return self._intrinsic_reward

  def update_observation_normalizer(self, batched_observations,
                                    step_types=None):
    """Advances every statistic of one collected batch, once.

    The public method `PPOLearner` calls once per collected batch (on its
    normalisation dataset); our `train` does the same work itself when
    `update_normalizers_in_train`. In this order: the intrinsic-return
    filter takes the batch's raw intrinsic rewards (the novelty of
    `o_1 .. o_T`, seen through the RND normaliser before this batch), then
    the policy's and the intrinsic reward's observation normalisers take
    the observations.

    Args:
      batched_observations: `[B, T + 1, ...]` (or `[T + 1, ...]`)
        observations, each environment's in time order.
      step_types: Their step types, for an intrinsic reward paid on first
        visits only (see `_next_first_visits`).
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

  def _next_first_visits(self, observations, step_types):
    """The intrinsic gate of `o_1 .. o_T` from `[B, T + 1]` sequences.

    Without step types (`PPOLearner` passes observations only) each row
    counts as one episode.
    """
    if step_types is None:
      step_types = tf.fill(tf.shape(tf.nest.flatten(observations)[0])[:2],
                           ts.StepType.MID)
    first_visits = self._intrinsic_reward.first_visits(observations,
                                                       step_types)
    return None if first_visits is None else first_visits[:, 1:]

  def _update_observation_normalizers(self, observations):
    if self._observation_normalizer:
      self._observation_normalizer.update(observations, outer_dims=[0, 1])
    self._intrinsic_reward.update_observation_normalizer(observations)

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

  def update_reward_normalizer(self, batched_rewards):
    """No-op (no extrinsic reward normaliser); `PPOLearner` calls it."""
    del batched_rewards

  # --------------------------------------------------- advantage / return ---

  def compute_return_and_advantage(self, next_time_steps, value_preds):
    """Not available: see the module docstring."""
    del next_time_steps, value_preds
    raise NotImplementedError(
        'RndPPOAgent computes returns and advantages of both streams from '
        'whole trajectories: call agent.preprocess_sequence(experience) '
        '(with compute_value_and_advantage_in_train=False) or '
        'tfa_explore.agents.rnd_ppo.maths.dual_gae.')

  def _preprocess_sequence(self, experience):
    # A stock pipeline may preprocess one batch several times (PPOLearner's
    # training and normalisation datasets both do), so this changes no
    # statistic: `update_observation_normalizer` advances them once.
    if self._compute_value_and_advantage_in_train:
      return experience
    return self._preprocess(experience, update_statistics=False)

  def _preprocess(self, experience, update_statistics):
    """Adds intrinsic rewards, both returns and the combined advantage.

    Args:
      experience: A `Trajectory` `[B, T + 1, ...]` or `[T + 1, ...]` of
        contiguous steps with the collect policy's info.
      update_statistics: Advance the intrinsic-return filter with this
        batch before normalising its intrinsic rewards (the paper's order);
        False normalises with the statistics as they are.

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
    # Intrinsic reward of transition t is the novelty of o_{t+1}.
    rewards = self._intrinsic_reward.rewards(
        tf.nest.map_structure(lambda o: o[:, 1:], batched.observation),
        update_statistics=update_statistics,
        first_visits=self._next_first_visits(batched.observation,
                                             batched.step_type))
    streams = self._returns_and_advantages(batched, rewards.normalized)

    def _pad(x):
      return tf.concat([x, tf.zeros_like(x[:, :1])], axis=1)

    new_info = dict(info)
    new_info.update({
        RETURN: _pad(streams.extrinsic_returns),
        INTRINSIC_RETURN: _pad(streams.intrinsic_returns),
        ADVANTAGE: _pad(streams.advantages),
        INTRINSIC_REWARD: _pad(rewards.normalized),
        RAW_INTRINSIC_REWARD: _pad(rewards.raw),
    })
    if outer_rank == 1:
      new_info = nest_utils.unbatch_nested_tensors(new_info)
    return experience.replace(policy_info=new_info)

  def _returns_and_advantages(self, batched, intrinsic_rewards):
    """`maths.DualAdvantages` of a `[B, T + 1]` trajectory."""
    info = batched.policy_info
    episodic = dict(
        extrinsic_rewards=batched.reward[:, :-1],
        extrinsic_values=tf.stop_gradient(info[rnd_policy.VALUE_PREDICTION]),
        step_types=batched.step_type[:, :-1],
        next_step_types=batched.next_step_type[:, :-1],
        next_discounts=batched.discount[:, :-1],
        extrinsic_discount=self._discount_factor,
        td_lambda=self._lambda,
        extrinsic_coef=self._extrinsic_advantage_coef)
    if not self._intrinsic_reward.enabled:
      return maths.extrinsic_gae(**episodic)
    return maths.dual_gae(
        intrinsic_rewards=intrinsic_rewards,
        intrinsic_values=tf.stop_gradient(
            info[rnd_policy.INTRINSIC_VALUE_PREDICTION]),
        intrinsic_discount=self._intrinsic_reward.discount,
        intrinsic_coef=self._intrinsic_reward.coef,
        non_episodic_intrinsic=self._intrinsic_reward.non_episodic,
        **episodic)

  # ------------------------------------------------------------- losses ---

  def value_losses(self, observations, step_types, returns, old_values,
                   weights, training=False):
    """Each head's weighted value loss, times `value_pred_loss_coef`.

    Args:
      observations: `[b, T, ...]` observations.
      step_types: `[b, T]`.
      returns: `{'extrinsic': [b, T], 'intrinsic': [b, T]}` targets.
      old_values: Same structure, the collect policy's predictions.
      weights: `[b, T]`.
      training: Passed to the value network.

    Returns:
      `{'extrinsic': loss, 'intrinsic': loss}`; an untrained head's loss is
      a constant 0.
    """
    values, _ = self.collect_policy.apply_value_network(
        observations, step_types, training=training)
    return self._value_losses_of(values, returns, old_values, weights)

  def _value_losses_of(self, values, returns, old_values, weights):
    losses = {INTRINSIC: tf.constant(0.0)}
    for head in self._trained_value_heads:
      losses[head] = self._value_pred_loss_coef * maths.value_loss(
          returns[head], values[head], weights, old_values[head],
          self._value_clipping)
    return losses

  def _minibatch_loss(self, batch, training=True):
    """PPO loss of one minibatch (a dict of `[b, T]` rows, see `_train`).

    Returns:
      `(LossInfo(loss, RndPPOLossInfo), mean entropy)`; the loss and the
      info leave out the predictor, which has its own optimizer.
    """
    # One call for the policy and both heads: a shared torso runs once and
    # takes the gradients of every loss below.
    distribution, values = self.collect_policy.apply_networks(
        batch['observations'], batch['step_types'], training=training)
    log_probs = common.log_probability(distribution, batch['actions'],
                                       self.action_spec)
    policy_gradient_loss, clip_fraction = maths.clipped_surrogate_loss(
        log_probs, batch['old_log_probs'], batch['advantages'],
        batch['weights'], self._importance_ratio_clipping)
    value_losses = self._value_losses_of(
        values, batch['returns'], batch['old_values'], batch['weights'])

    entropy = common.entropy(distribution, self.action_spec, outer_rank=2)
    entropy = (tf.zeros_like(batch['weights']) if entropy is None else
               tf.cast(entropy, tf.float32))
    if self._entropy_regularization > 0.0:
      entropy_loss = self._entropy_regularization * common.aggregate_losses(
          per_example_loss=-entropy,
          sample_weight=batch['weights']).total_loss
    else:
      entropy_loss = tf.zeros_like(policy_gradient_loss)
    total = (policy_gradient_loss +
             (value_losses[EXTRINSIC] + value_losses[INTRINSIC]) +
             entropy_loss)
    extra = RndPPOLossInfo(
        policy_gradient_loss=policy_gradient_loss,
        extrinsic_value_loss=value_losses[EXTRINSIC],
        intrinsic_value_loss=value_losses[INTRINSIC],
        entropy_regularization_loss=entropy_loss,
        predictor_loss=tf.constant(0.0),
        clip_fraction=clip_fraction)
    mean_entropy = tf.reduce_mean(entropy * batch['weights'])
    return tf_agent.LossInfo(loss=total, extra=extra), mean_entropy

  # -------------------------------------------------------------- train ---

  def _train(self, experience, weights):
    if self._compute_value_and_advantage_in_train:
      processed = self._preprocess(
          experience, update_statistics=self.update_normalizers_in_train)
    else:
      processed = experience
    info = processed.policy_info

    valid_mask = ppo_utils.make_trajectory_mask(processed)
    masked_weights = valid_mask if weights is None else weights * valid_mask

    old_distribution = ppo_utils.distribution_from_spec(
        self._action_distribution_spec, info[rnd_policy.DIST_PARAMS],
        legacy_distribution_network=self._legacy_distribution_network)
    old_log_probs = common.log_probability(
        old_distribution, processed.action, self.action_spec)

    # Advantages are normalised over the rows that train, unlike PPOAgent,
    # which also counts the zero-padded and boundary rows.
    advantages = info[ADVANTAGE]
    advantage_mean, advantage_variance = intrinsic_maths.masked_moments(
        advantages, masked_weights)
    normalized_advantages = ((advantages - advantage_mean) /
                             tf.sqrt(advantage_variance + 1e-8))

    per_row = {
        'observations': processed.observation,
        'step_types': processed.step_type,
        'actions': processed.action,
        'old_log_probs': tf.stop_gradient(old_log_probs),
        'returns': {EXTRINSIC: info[RETURN],
                    INTRINSIC: info[INTRINSIC_RETURN]},
        'old_values': {
            EXTRINSIC: info[rnd_policy.VALUE_PREDICTION],
            INTRINSIC: info[rnd_policy.INTRINSIC_VALUE_PREDICTION]},
        'advantages': tf.stop_gradient(normalized_advantages),
        'weights': masked_weights,
        'intrinsic': self._intrinsic_reward.training_inputs(
            processed.observation),
    }

    batch_size = tf.shape(masked_weights)[0]
    static_batch_size = masked_weights.shape[0]
    if (static_batch_size is not None and
        static_batch_size < self._num_minibatches):
      raise ValueError(f'Batch of {static_batch_size} sequences cannot make '
                       f'{self._num_minibatches} minibatches.')

    variables_to_train = self._variables_to_train()

    # Epochs and minibatches are graph loops (traced once, whatever their
    # counts): an outer loop draws each epoch's permutation of the rows, an
    # inner one takes one optimizer step per minibatch.
    num_minibatches = self._num_minibatches
    last_epoch = self._num_epochs - 1
    summed = RndPPOLossInfo._fields + (
        'total_loss', 'entropy', 'predictor_update_fraction')

    def minibatch_step(epoch, minibatch, permutation, sums):
      start = minibatch * batch_size // num_minibatches
      end = (minibatch + 1) * batch_size // num_minibatches
      indices = permutation[start:end]
      batch = tf.nest.map_structure(lambda t: tf.gather(t, indices), per_row)
      with tf.GradientTape() as tape:
        loss_info, entropy = self._minibatch_loss(batch, training=True)
      grads = tape.gradient(loss_info.loss, variables_to_train)
      if self._gradient_clipping > 0:
        grads, _ = tf.clip_by_global_norm(grads, self._gradient_clipping)
      grads_and_vars = tuple(zip(grads, variables_to_train))
      if self.summarize_grads_and_vars and self.debug_summaries:
        with tf.summary.record_if(tf.logical_or(tf.equal(epoch, 0),
                                                tf.equal(epoch, last_epoch))):
          eager_utils.add_gradients_summaries(grads_and_vars,
                                              self.train_step_counter)
      self._optimizer.apply_gradients(grads_and_vars)
      intrinsic_loss = self._intrinsic_reward.train_step(batch['intrinsic'])
      self.train_step_counter.assign_add(1)
      parts = dict(
          loss_info.extra._replace(
              predictor_loss=intrinsic_loss.loss)._asdict(),
          total_loss=loss_info.loss + intrinsic_loss.loss,
          entropy=entropy,
          predictor_update_fraction=intrinsic_loss.update_fraction)
      # One vector add per step: a chain of scalar adds onto the loop
      # variables became one AddN that Grappler turned into a
      # TemporaryVariable accumulator, which failed (ALREADY_EXISTS) in
      # these nested loops on the Montezuma file.
      return sums + tf.stack([tf.cast(parts[name], tf.float32)
                              for name in summed])

    def epoch_step(epoch, sums):
      permutation = tf.random.shuffle(tf.range(batch_size))
      _, sums = tf.while_loop(
          lambda minibatch, _: minibatch < num_minibatches,
          lambda minibatch, sums: (
              minibatch + 1,
              minibatch_step(epoch, minibatch, permutation, sums)),
          (tf.constant(0), sums))
      return epoch + 1, sums

    _, sums = tf.while_loop(
        lambda epoch, _: epoch < self._num_epochs, epoch_step,
        (tf.constant(0), tf.zeros([len(summed)])))

    if self.update_normalizers_in_train:
      if self._compute_value_and_advantage_in_train:
        # The return filter advanced in `_preprocess` above.
        self._update_observation_normalizers(processed.observation)
      else:
        # The caller preprocessed (statistics untouched): the filter takes
        # this batch now, after its rewards were normalised.
        self.update_observation_normalizer(processed.observation,
                                           processed.step_type)

    num_steps = float(self._num_epochs * num_minibatches)
    means = dict(zip(summed, tf.unstack(sums / num_steps)))
    self._write_summaries(processed, masked_weights, means)
    return tf_agent.LossInfo(
        loss=means['total_loss'],
        extra=RndPPOLossInfo(
            **{name: means[name] for name in RndPPOLossInfo._fields}))

  def _write_summaries(self, processed, weights, means):
    step = self.train_step_counter
    info = processed.policy_info
    losses = {name: means[name] for name in (
        'policy_gradient_loss', 'entropy_regularization_loss',
        'extrinsic_value_loss', 'intrinsic_value_loss', 'predictor_loss',
        'total_loss', 'entropy', 'clip_fraction')}
    losses['explained_variance_extrinsic'] = maths.explained_variance(
        info[rnd_policy.VALUE_PREDICTION], info[RETURN], weights)
    losses['explained_variance_intrinsic'] = maths.explained_variance(
        info[rnd_policy.INTRINSIC_VALUE_PREDICTION], info[INTRINSIC_RETURN],
        weights)
    summaries.write_losses(step, losses)
    self._intrinsic_reward.write_summaries(
        step,
        intrinsic.IntrinsicRewards(raw=info[RAW_INTRINSIC_REWARD],
                                   normalized=info[INTRINSIC_REWARD]),
        weights, means['predictor_update_fraction'])
