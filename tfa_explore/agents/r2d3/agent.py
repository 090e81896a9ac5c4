"""R2D3 agent (Paine et al. 2019): R2D2 plus the DQfD demonstration losses.

Training input. `train(experience)` takes a `MixedSequences(trajectory,
sample_info, is_demo)`: `[B, T]` sequences, Reverb's sample info (or None
for uniform weights) and a bool `[B]` flag, True for sequences from the
demonstration table (`replay.mixed_dataset` builds such batches). A plain
`Trajectory` or R2D2's `PrioritizedSequences` count as agent data only.

Loss (DQfD, Hester et al. 2018, Eq. 5, on recurrent Q values after the
burn-in as in R2D3):

    J = ntd_weight J_nTD + td1_weight J_1TD + margin_weight J_E
        + l2_weight J_L2

* J_nTD / J_1TD: importance-weighted squared TD losses of the rescaled
  n-step and 1-step double-Q targets (R2D2's maths, both from the same
  unrolls of the online and target networks);
* J_E: the large-margin loss, on demonstration sequences only (`is_demo`);
* J_L2: 0.5 ||theta||^2 over the Q network's trainable weights.

Priorities are R2D2's (0.9 max + 0.1 mean |n-step TD error|) for both
tables; `replay.mixed_dataset.MixedPriorityUpdater` writes each back to the
table its sequence came from.
"""

import collections

import gin
import tensorflow as tf
from tf_agents.agents import tf_agent
from tf_agents.trajectories import trajectory as trajectory_lib
from tf_agents.utils import common

from tfa_explore.agents.r2d2 import agent as r2d2_agent
from tfa_explore.agents.r2d2 import learning
from tfa_explore.agents.r2d2 import losses as r2d2_losses
from tfa_explore.agents.r2d3 import losses
from tfa_explore.agents.r2d3 import summaries


class MixedSequences(
    collections.namedtuple('MixedSequences',
                           ['trajectory', 'sample_info', 'is_demo'])):
  """A batch of sequences from the agent and demonstration tables."""
  __slots__ = ()


class R2D3LossInfo(
    collections.namedtuple(
        'R2D3LossInfo',
        r2d2_agent.R2D2LossInfo._fields + (
            'ntd_loss', 'td1_loss', 'margin_loss', 'l2_loss', 'total_loss',
            'demo_fraction', 'q_demo_action', 'q_other_actions'))):
  """`LossInfo.extra` of `R2D3Agent`.

  The R2D2 fields (so R2D2's summaries and the priority updaters work
  unchanged; `td_loss` is the n-step TD loss) plus:
    ntd_loss, td1_loss, margin_loss, l2_loss: each term, unweighted.
    total_loss: the weighted sum.
    demo_fraction: share of demonstration sequences in the batch.
    q_demo_action: online Q(s, a_E) on valid demonstration steps.
    q_other_actions: mean online Q(s, a != a_E) on those steps.
  """
  __slots__ = ()


def split_mixed_experience(experience):
  """(trajectory, sample_info or None, is_demo `[B]` bool)."""
  if isinstance(experience, MixedSequences):
    return (experience.trajectory, experience.sample_info,
            tf.cast(experience.is_demo, tf.bool))
  trajectory, sample_info = r2d2_agent.split_experience(experience)
  return (trajectory, sample_info,
          tf.zeros(tf.shape(trajectory.step_type)[:1], tf.bool))


@gin.configurable
class R2D3Agent(r2d2_agent.R2D2Agent):
  """Recurrent replay distributed DQN from demonstrations; see module doc."""

  def __init__(self,
               time_step_spec,
               action_spec,
               q_network,
               optimizer,
               margin=0.8,
               ntd_loss_weight=1.0,
               td1_loss_weight=1.0,
               margin_loss_weight=1.0,
               l2_loss_weight=1e-5,
               **r2d2_kwargs):
    """Creates the agent.

    Args:
      time_step_spec, action_spec, q_network, optimizer: as `R2D2Agent`.
      margin: l(a_E, a) for a != a_E (DQfD: 0.8).
      ntd_loss_weight: weight of the n-step TD loss (DQfD: 1).
      td1_loss_weight: weight of the 1-step TD loss (DQfD: 1).
      margin_loss_weight: weight of the large-margin loss (DQfD lambda_2:
        1).
      l2_loss_weight: weight of the L2 term (DQfD lambda_3: 1e-5).
      **r2d2_kwargs: every other `R2D2Agent` argument (sequence_config,
        n_step, gamma, ...).

    Raises:
      ValueError: for a negative weight or margin, or as `R2D2Agent`.
    """
    for name, value in (('margin', margin),
                        ('ntd_loss_weight', ntd_loss_weight),
                        ('td1_loss_weight', td1_loss_weight),
                        ('margin_loss_weight', margin_loss_weight),
                        ('l2_loss_weight', l2_loss_weight)):
      if value < 0:
        raise ValueError(f'{name} must be >= 0, got {value}.')
    self._margin = float(margin)
    self._ntd_loss_weight = float(ntd_loss_weight)
    self._td1_loss_weight = float(td1_loss_weight)
    self._margin_loss_weight = float(margin_loss_weight)
    self._l2_loss_weight = float(l2_loss_weight)
    super().__init__(time_step_spec, action_spec, q_network, optimizer,
                     **r2d2_kwargs)

  def _targets(self, online_q, target_q, rewards, discounts, mask, n_step):
    return r2d2_losses.n_step_double_q_targets(
        rewards, discounts, tf.stop_gradient(online_q), target_q,
        num_steps=n_step, gamma=self._gamma, step_mask=mask,
        rescale_values=self._rescale_values,
        rescale_epsilon=self._value_rescale_epsilon)

  def _loss(self, experience, weights=None, training=False):
    trajectory, sample_info, is_demo = split_mixed_experience(experience)
    self._check_sequence_length(trajectory)
    burn_in_steps = self.sequence_config.burn_in_steps
    # One unroll of each network serves both TD terms and the margin loss
    # (`learning.sequence_td_errors` computes the n-step part only).
    online_q = learning.unroll(self._q_network, trajectory, burn_in_steps,
                               self._use_stored_state, training=training)
    target_q = tf.stop_gradient(
        learning.unroll(self._target_q_network, trajectory, burn_in_steps,
                        self._use_stored_state))
    mask = learning.step_mask(trajectory.step_type)[:, burn_in_steps:]
    rewards = tf.cast(trajectory.reward[:, burn_in_steps:], online_q.dtype)
    discounts = tf.cast(trajectory.discount[:, burn_in_steps:],
                        online_q.dtype)
    num_actions = tf.shape(online_q)[-1]
    actions = tf.clip_by_value(
        tf.cast(trajectory.action[:, burn_in_steps:], tf.int32) -
        self._action_minimum, 0, num_actions - 1)
    selected = tf.gather(online_q, actions, axis=-1, batch_dims=2)

    def td_errors(targets):
      return tf.where(targets.valid, targets.targets - selected,
                      tf.zeros_like(selected))

    ntd_targets = self._targets(online_q, target_q, rewards, discounts, mask,
                                self._n_step)
    td1_targets = self._targets(online_q, target_q, rewards, discounts, mask,
                                1)
    ntd_errors = td_errors(ntd_targets)
    td1_errors = td_errors(td1_targets)
    # Steps with a real action: both s_t and s_{t+1} are real (the 1-step
    # window exists). Same set as the n-step `valid`.
    action_steps = td1_targets.valid

    importance_weights, loss_weights = self._sequence_loss_weights(
        sample_info, weights, batch_size=tf.shape(selected)[0])

    ntd_loss = r2d2_losses.masked_td_loss(ntd_errors, ntd_targets.valid,
                                          loss_weights, self._huber_delta)
    td1_loss = r2d2_losses.masked_td_loss(td1_errors, td1_targets.valid,
                                          loss_weights, self._huber_delta)
    margin_loss = losses.large_margin_loss(online_q, actions, action_steps,
                                           is_demo, self._margin,
                                           loss_weights)
    l2_loss = losses.l2_regularization(self._q_network.trainable_weights)
    total_loss = (self._ntd_loss_weight * ntd_loss +
                  self._td1_loss_weight * td1_loss +
                  self._margin_loss_weight * margin_loss +
                  self._l2_loss_weight * l2_loss)

    priorities = r2d2_losses.sequence_priorities(
        tf.stop_gradient(ntd_errors), ntd_targets.valid,
        eta=self._priority_max_weight)
    valid = tf.cast(ntd_targets.valid, tf.float32)
    num_valid = tf.reduce_sum(valid)

    def valid_mean(values):
      return tf.math.divide_no_nan(
          tf.reduce_sum(tf.where(ntd_targets.valid, values, 0.0)), num_valid)

    frozen_q = tf.stop_gradient(online_q)
    frozen_selected = tf.stop_gradient(selected)
    demo_steps = tf.logical_and(action_steps, is_demo[:, None])
    num_demo_steps = tf.reduce_sum(tf.cast(demo_steps, tf.float32))
    others_sum = tf.reduce_sum(frozen_q, axis=-1) - frozen_selected
    num_others = tf.cast(num_actions - 1, tf.float32)
    q_other_actions = tf.math.divide_no_nan(
        tf.reduce_sum(tf.where(demo_steps, others_sum, 0.0)),
        num_demo_steps * num_others)
    extra = R2D3LossInfo(
        td_loss=ntd_loss,
        priorities=priorities,
        importance_weights=importance_weights,
        q_mean=valid_mean(frozen_selected),
        q_max=tf.reduce_max(
            tf.where(ntd_targets.valid, frozen_selected, -float('inf'))),
        target_mean=valid_mean(ntd_targets.targets),
        abs_td_error_mean=valid_mean(tf.abs(ntd_errors)),
        valid_fraction=tf.reduce_mean(valid),
        ntd_loss=ntd_loss,
        td1_loss=td1_loss,
        margin_loss=margin_loss,
        l2_loss=l2_loss,
        total_loss=total_loss,
        demo_fraction=tf.reduce_mean(tf.cast(is_demo, tf.float32)),
        q_demo_action=tf.math.divide_no_nan(
            tf.reduce_sum(tf.where(demo_steps, frozen_selected, 0.0)),
            num_demo_steps),
        q_other_actions=q_other_actions)
    return tf_agent.LossInfo(loss=total_loss, extra=extra)

  def _train(self, experience, weights=None):
    loss_info = super()._train(experience, weights)
    if self.summaries_enabled:
      summaries.write_loss_info(loss_info.extra, self.train_step_counter)
    return loss_info


def _demo_experience(element):
  """A pre-training element as `MixedSequences` with is_demo all True."""
  if isinstance(element, trajectory_lib.Trajectory):
    experience = MixedSequences(element, None, None)
  elif isinstance(element, MixedSequences):
    experience = element
  else:
    experience = element[0]  # (experience, sample_info) of mixed_dataset.
  batch_shape = tf.shape(experience.trajectory.step_type)[:1]
  return experience._replace(is_demo=tf.ones(batch_shape, tf.bool))


@gin.configurable(module='r2d3')
def pretrain(agent, demo_dataset, num_steps=gin.REQUIRED,
             after_train_step=None):
  """Trains `agent` on demonstrations alone, before any acting.

  Needs no environment (DQfD's pre-training phase, Hester et al. 2018,
  Section 3; R2D3 has it as an option). Every element is treated as a
  demonstration, so the margin loss applies to the whole batch.

  Args:
    agent: an `R2D3Agent`.
    demo_dataset: batches of demonstration sequences: `[B, T]`
      `Trajectory`s (e.g. `demonstrations.sequences_dataset(...).batch(B)`)
      or `(MixedSequences, sample_info)` pairs from
      `mixed_dataset.demo_dataset` (prioritized demo table).
    num_steps: gradient steps.
    after_train_step: optional callable `(element, loss_info)` run after
      every step, e.g. a `MixedPriorityUpdater` for a prioritized table.

  Returns:
    The last step's `LossInfo` (None if `num_steps` is 0).
  """
  if num_steps < 0:
    raise ValueError(f'num_steps must be >= 0, got {num_steps}.')

  @common.function(autograph=False)
  def train_step(element):
    experience = _demo_experience(element)
    loss_info = agent.train(experience)
    if after_train_step is not None:
      after_train_step((experience, _sample_info(element)), loss_info)
    return loss_info

  loss_info = None
  iterator = iter(demo_dataset)
  for _ in range(num_steps):
    loss_info = train_step(next(iterator))
  return loss_info


def _sample_info(element):
  if isinstance(element, (trajectory_lib.Trajectory, MixedSequences)):
    return getattr(element, 'sample_info', None)
  return element[1]
