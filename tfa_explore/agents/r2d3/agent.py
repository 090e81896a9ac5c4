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

The loss is built from `R2D2Agent`'s public parts: `td_errors` gives the
n-step and 1-step errors from one unroll, and the TD losses, priorities and
R2D2 statistics come from the same methods `R2D2Agent._loss` uses, so the
two agents cannot drift apart. Like `R2D2Agent`, the class is configured
only through its factory (`r2d3.r2d3_agent_fn`).
"""

import collections

import tensorflow as tf
from tf_agents.agents import tf_agent
from tf_agents.trajectories import trajectory as trajectory_lib
from tf_agents.utils import common

from tfa_explore.agents.r2d2 import agent as r2d2_agent
from tfa_explore.agents.r2d2 import inputs as r2d2_inputs
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
  trajectory, sample_info = r2d2_inputs.split_experience(experience)
  return (trajectory, sample_info,
          tf.zeros(tf.shape(trajectory.step_type)[:1], tf.bool))


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

  def _loss(self, experience, weights=None, training=False):
    trajectory, sample_info, is_demo = split_mixed_experience(experience)
    self.check_sequence_length(trajectory)
    # One unroll of each network serves both TD terms and the margin loss.
    errors = self.td_errors(trajectory, n_steps=(self.n_step, 1),
                            training=training)
    ntd_errors = errors.by_n_step[self.n_step]
    td1_errors = errors.by_n_step[1]
    # Steps with a real action: both s_t and s_{t+1} are real (the 1-step
    # window exists). Same set as the n-step `valid`.
    action_steps = td1_errors.valid

    importance_weights, loss_weights = self.sequence_loss_weights(
        sample_info, weights,
        batch_size=tf.shape(errors.selected_q_values)[0])
    ntd_loss = self.td_loss(ntd_errors, loss_weights)
    td1_loss = self.td_loss(td1_errors, loss_weights)
    margin_loss = losses.large_margin_loss(errors.q_values, errors.actions,
                                           action_steps, is_demo,
                                           self._margin, loss_weights)
    l2_loss = losses.l2_regularization(self.q_network.trainable_weights)
    # An exploration bonus's terms; the margin is Q_E's alone.
    exploration_loss = self.exploration_loss(trajectory, errors,
                                             loss_weights)
    total_loss = (self._ntd_loss_weight * ntd_loss + exploration_loss.loss +
                  self._td1_loss_weight * td1_loss +
                  self._margin_loss_weight * margin_loss +
                  self._l2_loss_weight * l2_loss)

    frozen_q = tf.stop_gradient(errors.q_values)
    frozen_selected = tf.stop_gradient(errors.selected_q_values)
    demo_steps = tf.logical_and(action_steps, is_demo[:, None])
    num_demo_steps = tf.reduce_sum(tf.cast(demo_steps, tf.float32))
    others_sum = tf.reduce_sum(frozen_q, axis=-1) - frozen_selected
    num_others = tf.cast(tf.shape(frozen_q)[-1] - 1, tf.float32)
    q_other_actions = tf.math.divide_no_nan(
        tf.reduce_sum(tf.where(demo_steps, others_sum, 0.0)),
        num_demo_steps * num_others)
    r2d2_extra = self.td_loss_info(errors, ntd_loss, importance_weights,
                                   exploration_loss)
    extra = R2D3LossInfo(
        **r2d2_extra._asdict(),
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


def pretrain(agent, demo_dataset, num_steps, after_train_step=None):
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
