"""From a replayed sequence to TD errors: stored state, burn-in, masks.

`sequence_td_errors` is the one place a sequence becomes TD errors: one
unroll of the online and target networks, the step mask, the gather of
Q(s_t, a_t), and the n-step double-Q targets for every n asked for. It
serves the learner (`R2D2Agent.td_errors`, online + target network; R2D3
asks for its n-step and 1-step errors at once) and the actors' initial
priorities (`R2D2Agent.initial_priorities_fn`, the actor's own network in
both roles, as in the paper), so both compute priorities the same way.

Sequences are `Trajectory`s shaped `[B, T]` with
`T = SequenceConfig.sequence_length` and the policy info of
`policy.R2D2Policy`.

With an intrinsic head (`TdSettings.intrinsic_weight` set) the same
unroll gives both heads' errors: Q_E learns r_e by double Q with its own
argmax (the greedy policy the agent is evaluated on, Agent57's beta = 0
arm), Q_I learns r_i with the argmax of h^-1(Q_E) + beta h^-1(Q_I) (the
exploring actors' policy, Agent57's target policy).
"""

import collections
import dataclasses
from typing import Optional

import tensorflow as tf
from tf_agents.trajectories import time_step as ts

from tfa_explore.agents.r2d2 import losses
from tfa_explore.agents.r2d2 import policy as r2d2_policy


def step_mask(step_type):
  """Real steps (True) of `[B, T]` sequences holding one episode segment.

  A sequence's real steps are those of a single episode: from its last FIRST
  step (steps before it are the writer's front padding, or another
  episode's tail in a sequence written by an observer that crosses episode
  boundaries) up to and including the first LAST step after that (steps
  after it are rear padding, or the next episode). So padding and other
  episodes never reach the loss, whatever observer wrote the sequence.

  Args:
    step_type: int `[B, T]`.

  Returns:
    bool `[B, T]`.
  """
  step_type = tf.convert_to_tensor(step_type)
  time = tf.range(tf.shape(step_type)[1])[None, :]
  is_first = tf.equal(step_type, ts.StepType.FIRST)
  segment_start = tf.reduce_max(
      tf.where(is_first, time, tf.zeros_like(time)), axis=1, keepdims=True)
  in_segment = time >= segment_start
  is_last = tf.logical_and(tf.equal(step_type, ts.StepType.LAST), in_segment)
  lasts_before = tf.cumsum(tf.cast(is_last, tf.int32), axis=1, exclusive=True)
  return tf.logical_and(in_segment, tf.equal(lasts_before, 0))


def unroll(q_network, trajectory, burn_in_steps, use_stored_state=True,
           training=False, heads=False):
  """Q values of the steps after the burn-in, `[B, T - burn_in_steps, A]`.

  The unroll starts from the state stored at the first step (or zeros if
  `use_stored_state` is False, the paper's zero-state ablation), runs the
  burn-in steps, stops the gradient on the resulting state and unrolls the
  rest. No gradient reaches the burn-in steps' inputs or computation.

  Args:
    q_network: a `RecurrentDuelingQNetwork` (or any network with its call
      signature).
    trajectory: `[B, T]` `Trajectory` with R2D2 policy info.
    burn_in_steps: Python int.
    use_stored_state: start from `policy_info['network_state'][:, 0]`.
    training: passed to the network.
    heads: return the `QHeads` of a network with an intrinsic head.

  Returns:
    float `[B, T - burn_in_steps, A]`, or `QHeads` of two such.
  """
  info = trajectory.policy_info
  inputs = r2d2_policy.network_inputs(trajectory.observation, info)
  step_type = trajectory.step_type
  batch_size = tf.shape(step_type)[0]
  if use_stored_state:
    state = tf.nest.map_structure(
        lambda s: s[:, 0],
        r2d2_policy.stored_network_state(info, q_network))
  else:
    state = q_network.get_initial_state(batch_size)

  def time_slice(nest, start, stop=None):
    return tf.nest.map_structure(lambda t: t[:, start:stop], nest)

  network = q_network.q_heads if heads else q_network
  if burn_in_steps > 0:
    _, state = network(
        time_slice(inputs, 0, burn_in_steps),
        step_type=step_type[:, :burn_in_steps],
        network_state=state,
        training=training)
    state = tf.nest.map_structure(tf.stop_gradient, state)
  q_values, _ = network(
      time_slice(inputs, burn_in_steps),
      step_type=step_type[:, burn_in_steps:],
      network_state=state,
      training=training)
  return q_values


@dataclasses.dataclass(frozen=True)
class TdSettings:
  """How an agent turns replayed sequences into TD errors.

  `R2D2Agent.td_settings`; see `R2D2Agent` for each value. Only the number
  of steps n of the targets is not here: one unroll serves several n.

  Attributes:
    burn_in_steps: steps unrolled without gradient before the trace.
    gamma: discount of the n-step targets.
    use_stored_state: start the unrolls from the stored state (else zeros).
    rescale_values: targets through value rescaling h and h^-1.
    rescale_epsilon: eps of h.
    action_minimum: the action spec's minimum; Q value index = action - it.
    intrinsic_weight: None, or beta of a network with an intrinsic head:
      the exploring argmax maximises h^-1(Q_E) + beta h^-1(Q_I).
    intrinsic_gamma: discount of Q_I's targets; None: `gamma`.
  """
  burn_in_steps: int
  gamma: float
  use_stored_state: bool = True
  rescale_values: bool = True
  rescale_epsilon: float = 1e-3
  action_minimum: int = 0
  intrinsic_weight: Optional[float] = None
  intrinsic_gamma: Optional[float] = None


class NStepTdErrors(
    collections.namedtuple('NStepTdErrors',
                           ['td_errors', 'valid', 'targets'])):
  """TD errors of one n over the steps after the burn-in, each `[B, T']`.

  Fields:
    td_errors: y_t - Q(s_t, a_t), with gradient to Q; 0 where not `valid`.
    valid: bool, steps with a target (real, not the last real step). The
      same steps for every n: a window of one step is enough.
    targets: y_t, no gradient.
  """
  __slots__ = ()


class TdErrors(
    collections.namedtuple(
        'TdErrors',
        ['q_values', 'actions', 'selected_q_values', 'step_mask',
         'by_n_step', 'intrinsic_by_n_step'])):
  """One unroll of `[B, T]` sequences and its TD errors for each n.

  Every field covers the `T' = T - burn_in_steps` steps after the burn-in.

  Fields:
    q_values: `[B, T', A]` online Q values (with gradient).
    actions: int32 `[B, T']` Q value index of a_t (padding steps clipped
      into range; they are never `valid`).
    selected_q_values: Q(s_t, a_t), with gradient.
    step_mask: bool, real steps (see `step_mask`).
    by_n_step: {n: `NStepTdErrors`} for every n asked for.
    intrinsic_by_n_step: {n: `NStepTdErrors`} of Q_I, given intrinsic
      rewards (else empty); the other fields are Q_E's.
  """
  __slots__ = ()


def sequence_td_errors(online_network, target_network, trajectory,
                       settings, n_steps, training=False,
                       intrinsic_rewards=None):
  """TD errors of the trace (and bootstrap) steps of `[B, T]` sequences.

  Both networks unroll the whole sequence once from the stored state; only
  the online network's post-burn-in part carries a gradient. For each n of
  `n_steps` the targets are n-step double-Q (online net picks, target net
  evaluates), rescaled, from those same unrolls: R2D3 gets its n-step and
  1-step errors from one unroll.

  Args:
    online_network: the network being trained (or the actor's copy).
    target_network: the target network (the actor passes its own network
      again: actors have no target network; its one unroll then serves
      both, unless `training`).
    trajectory: `[B, T]` `Trajectory` with R2D2 policy info.
    settings: `TdSettings`.
    n_steps: the n (Python ints >= 1) to compute targets for.
    training: passed to the online network.
    intrinsic_rewards: None, or float `[B, T]` r_i of the trace steps, for
      networks with an intrinsic head (`settings.intrinsic_weight` set).

  Returns:
    `TdErrors`.
  """
  burn_in_steps = settings.burn_in_steps
  heads = settings.intrinsic_weight is not None
  if intrinsic_rewards is not None and not heads:
    raise ValueError('Intrinsic rewards need TdSettings.intrinsic_weight and '
                     'a network with an intrinsic head.')
  online_q = unroll(online_network, trajectory, burn_in_steps,
                    settings.use_stored_state, training=training, heads=heads)
  if target_network is online_network and not training:
    # An actor's priorities: the same network twice gives the same values.
    target_q = tf.nest.map_structure(tf.stop_gradient, online_q)
  else:
    target_q = tf.nest.map_structure(tf.stop_gradient, unroll(
        target_network, trajectory, burn_in_steps, settings.use_stored_state,
        heads=heads))
  online_heads = target_heads = None
  if heads:
    online_heads, target_heads = online_q, target_q
    online_q, target_q = online_q.extrinsic, target_q.extrinsic
  mask = step_mask(trajectory.step_type)[:, burn_in_steps:]
  rewards = tf.cast(trajectory.reward[:, burn_in_steps:], online_q.dtype)
  discounts = tf.cast(trajectory.discount[:, burn_in_steps:], online_q.dtype)
  num_actions = tf.shape(online_q)[-1]
  actions = tf.cast(trajectory.action[:, burn_in_steps:],
                    tf.int32) - settings.action_minimum
  # Padding steps may hold any action; clip so the gather stays in range,
  # their TD error is masked out below.
  actions = tf.clip_by_value(actions, 0, num_actions - 1)
  selected = tf.gather(online_q, actions, axis=-1, batch_dims=2)

  def errors_of(rewards, argmax_q, evaluated_q, selected, gamma):
    by_n_step = {}
    for n_step in n_steps:
      if n_step in by_n_step:
        continue
      n_step_targets = losses.n_step_double_q_targets(
          rewards, discounts, tf.stop_gradient(argmax_q), evaluated_q,
          num_steps=n_step, gamma=gamma, step_mask=mask,
          rescale_values=settings.rescale_values,
          rescale_epsilon=settings.rescale_epsilon)
      by_n_step[n_step] = NStepTdErrors(
          td_errors=tf.where(n_step_targets.valid,
                             n_step_targets.targets - selected,
                             tf.zeros_like(selected)),
          valid=n_step_targets.valid,
          targets=n_step_targets.targets)
    return by_n_step

  intrinsic_by_n_step = {}
  if intrinsic_rewards is not None:
    exploring_q = losses.mixed_action_values(
        online_heads.extrinsic, online_heads.intrinsic,
        settings.intrinsic_weight, settings.rescale_values,
        settings.rescale_epsilon)
    intrinsic_rewards = tf.cast(intrinsic_rewards[:, burn_in_steps:],
                                online_q.dtype)
    intrinsic_by_n_step = errors_of(
        intrinsic_rewards, exploring_q, target_heads.intrinsic,
        tf.gather(online_heads.intrinsic, actions, axis=-1, batch_dims=2),
        settings.gamma if settings.intrinsic_gamma is None
        else settings.intrinsic_gamma)
  return TdErrors(
      q_values=online_q,
      actions=actions,
      selected_q_values=selected,
      step_mask=mask,
      by_n_step=errors_of(rewards, online_q, target_q, selected,
                          settings.gamma),
      intrinsic_by_n_step=intrinsic_by_n_step)
