"""From a replayed sequence to TD errors: stored state, burn-in, masks.

Shared by the learner (`R2D2Agent._loss`, online + target network) and the
actors' initial priorities (`R2D2Agent.initial_priority_fn`, the actor's own
network in both roles, as in the paper), so both compute priorities the same
way.

Sequences are `Trajectory`s shaped `[B, T]` with
`T = SequenceConfig.sequence_length` and the policy info of
`policy.R2D2Policy`.
"""

import collections

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
           training=False):
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

  Returns:
    float `[B, T - burn_in_steps, A]`.
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

  if burn_in_steps > 0:
    _, state = q_network(
        time_slice(inputs, 0, burn_in_steps),
        step_type=step_type[:, :burn_in_steps],
        network_state=state,
        training=training)
    state = tf.nest.map_structure(tf.stop_gradient, state)
  q_values, _ = q_network(
      time_slice(inputs, burn_in_steps),
      step_type=step_type[:, burn_in_steps:],
      network_state=state,
      training=training)
  return q_values


class TdErrors(
    collections.namedtuple(
        'TdErrors',
        ['td_errors', 'valid', 'q_values', 'selected_q_values', 'targets',
         'step_mask'])):
  """Per-step results over the steps after the burn-in, `[B, T']`.

  Fields:
    td_errors: y_t - Q(s_t, a_t); 0 where not `valid`.
    valid: bool, steps with a target (real, not the last real step).
    q_values: `[B, T', A]` online Q values (with gradient).
    selected_q_values: Q(s_t, a_t), with gradient.
    targets: y_t, no gradient.
    step_mask: bool, real steps (see `step_mask`).
  """
  __slots__ = ()


def sequence_td_errors(online_network, target_network, trajectory,
                       burn_in_steps, n_step, gamma, use_stored_state=True,
                       rescale_values=True, rescale_epsilon=1e-3,
                       action_minimum=0, training=False):
  """TD errors of the trace (and bootstrap) steps of `[B, T]` sequences.

  Both networks unroll the whole sequence from the stored state; only the
  online network's post-burn-in part carries a gradient. Targets are
  n-step double-Q (online net picks, target net evaluates), rescaled.

  Args:
    online_network: the network being trained (or the actor's copy).
    target_network: the target network (the actor passes its own network
      again: actors have no target network).
    trajectory: `[B, T]` `Trajectory` with R2D2 policy info.
    burn_in_steps, n_step, gamma, use_stored_state, rescale_values,
      rescale_epsilon: see `R2D2Agent`.
    action_minimum: the action spec's minimum; Q value index = action - it.
    training: passed to the online network.

  Returns:
    `TdErrors`.
  """
  online_q = unroll(online_network, trajectory, burn_in_steps,
                    use_stored_state, training=training)
  target_q = tf.stop_gradient(
      unroll(target_network, trajectory, burn_in_steps, use_stored_state))
  mask = step_mask(trajectory.step_type)[:, burn_in_steps:]
  rewards = tf.cast(trajectory.reward[:, burn_in_steps:], online_q.dtype)
  discounts = tf.cast(trajectory.discount[:, burn_in_steps:], online_q.dtype)
  n_step_targets = losses.n_step_double_q_targets(
      rewards, discounts, tf.stop_gradient(online_q), target_q,
      num_steps=n_step, gamma=gamma, step_mask=mask,
      rescale_values=rescale_values, rescale_epsilon=rescale_epsilon)
  num_actions = tf.shape(online_q)[-1]
  actions = tf.cast(trajectory.action[:, burn_in_steps:],
                    tf.int32) - action_minimum
  # Padding steps may hold any action; clip so the gather stays in range,
  # their TD error is masked out below.
  actions = tf.clip_by_value(actions, 0, num_actions - 1)
  selected = tf.gather(online_q, actions, axis=-1, batch_dims=2)
  td_errors = tf.where(n_step_targets.valid,
                       n_step_targets.targets - selected,
                       tf.zeros_like(selected))
  return TdErrors(
      td_errors=td_errors,
      valid=n_step_targets.valid,
      q_values=online_q,
      selected_q_values=selected,
      targets=n_step_targets.targets,
      step_mask=mask)
