"""From a replayed `[B, T]` sequence (`inputs.py`) to TD errors.

`sequence_td_errors` is the one place a sequence becomes TD errors. It
serves the learner (`R2D2Agent.td_errors`; R2D3 asks for its n-step and
1-step errors at once) and the actors' initial priorities
(`R2D2Agent.initial_priorities_fn`), so both compute priorities the same
way. The unroll keeps every head of the network; the TD errors here are
Q_E's, and an exploration bonus computes another head's from the same
unroll with `n_step_td_errors`.
"""

import collections
import dataclasses
import tensorflow as tf
from tf_agents.trajectories import time_step as ts

from tfa_explore.agents.r2d2 import inputs as r2d2_inputs
from tfa_explore.agents.r2d2 import losses
from tfa_explore.networks import recurrent_dueling_q_network as rdqn


def step_mask(step_type):
  """Real steps (True) of `[B, T]` sequences holding one episode segment.

  From the last FIRST step (before it: front padding, or another episode's
  tail if the writer crossed episode boundaries) up to and including the
  first LAST step after it (after it: rear padding, or the next episode),
  so padding and other episodes never reach the loss, whatever observer
  wrote the sequence. `step_type`: int `[B, T]`; returns bool `[B, T]`.
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
  """Q values of every head after the burn-in, each `[B, T - burn_in_steps, A]`.

  The unroll starts from the state stored at the first step (or zeros if
  `use_stored_state` is False, the paper's zero-state ablation), runs the
  burn-in steps, stops the gradient on the resulting state and unrolls the
  rest. No gradient reaches the burn-in steps' inputs or computation.
  Returns `q_network.q_heads`' dict.
  """
  info = trajectory.policy_info
  inputs = r2d2_inputs.network_inputs(trajectory.observation, info)
  step_type = trajectory.step_type
  batch_size = tf.shape(step_type)[0]
  if use_stored_state:
    state = tf.nest.map_structure(
        lambda s: s[:, 0],
        r2d2_inputs.stored_network_state(info, q_network))
  else:
    state = q_network.get_initial_state(batch_size)

  def time_slice(nest, start, stop=None):
    return tf.nest.map_structure(lambda t: t[:, start:stop], nest)

  if burn_in_steps > 0:
    _, state = q_network.q_heads(
        time_slice(inputs, 0, burn_in_steps),
        step_type=step_type[:, :burn_in_steps],
        network_state=state,
        training=training)
    state = tf.nest.map_structure(tf.stop_gradient, state)
  heads, _ = q_network.q_heads(
      time_slice(inputs, burn_in_steps),
      step_type=step_type[:, burn_in_steps:],
      network_state=state,
      training=training)
  return heads


@dataclasses.dataclass(frozen=True)
class TdSettings:
  """How an agent turns replayed sequences into TD errors.

  `R2D2Agent.td_settings`. The n of the targets is not here: one unroll
  serves several n.

  Attributes:
    burn_in_steps: steps unrolled without gradient before the trace.
    gamma: discount of the n-step targets.
    use_stored_state: start the unrolls from the stored state (else zeros).
    rescale_values: targets through value rescaling h and h^-1.
    rescale_epsilon: eps of h.
    action_minimum: the action spec's minimum; Q value index = action - it.
  """
  burn_in_steps: int
  gamma: float
  use_stored_state: bool = True
  rescale_values: bool = True
  rescale_epsilon: float = 1e-3
  action_minimum: int = 0


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
         'by_n_step', 'online_heads', 'target_heads'])):
  """One unroll of `[B, T]` sequences and its TD errors for each n.

  Every field covers the `T' = T - burn_in_steps` steps after the burn-in.

  Fields:
    q_values: `[B, T', A]` online Q_E values (with gradient).
    actions: int32 `[B, T']` Q value index of a_t (padding steps clipped
      into range; they are never `valid`).
    selected_q_values: Q(s_t, a_t), with gradient.
    step_mask: bool, real steps (see `step_mask`).
    by_n_step: {n: `NStepTdErrors`} of Q_E for every n asked for.
    online_heads, target_heads: every head of each unroll (`unroll`); the
      target's without gradient.
  """
  __slots__ = ()


def n_step_td_errors(rewards, discounts, argmax_q, evaluated_q, selected,
                     step_mask, settings, n_steps, gamma):
  """{n: `NStepTdErrors`} of one head's `[B, T']` values after the burn-in.

  Double Q: `argmax_q` picks the bootstrap action, `evaluated_q` values it
  (no gradient through either); `selected` is Q(s_t, a_t) of the trained
  head. Rescaling is `settings`'; the discount `gamma` is the head's.
  """
  by_n_step = {}
  for n_step in n_steps:
    if n_step in by_n_step:
      continue
    n_step_targets = losses.n_step_double_q_targets(
        rewards, discounts, tf.stop_gradient(argmax_q), evaluated_q,
        num_steps=n_step, gamma=gamma, step_mask=step_mask,
        rescale_values=settings.rescale_values,
        rescale_epsilon=settings.rescale_epsilon)
    by_n_step[n_step] = NStepTdErrors(
        td_errors=tf.where(n_step_targets.valid,
                           n_step_targets.targets - selected,
                           tf.zeros_like(selected)),
        valid=n_step_targets.valid,
        targets=n_step_targets.targets)
  return by_n_step


def sequence_td_errors(online_network, target_network, trajectory,
                       settings, n_steps, training=False):
  """Q_E's TD errors of the trace (and bootstrap) steps of `[B, T]` sequences.

  Both networks unroll the whole sequence once from the stored state; only
  the online network's post-burn-in part carries a gradient. For each n of
  `n_steps` (Python ints >= 1) the targets are rescaled n-step double-Q
  (online net picks, target net evaluates) from those same unrolls. An
  actor has no target network and passes its own network twice: its one
  unroll then serves both, unless `training`. Returns `TdErrors`.
  """
  burn_in_steps = settings.burn_in_steps
  online_heads = unroll(online_network, trajectory, burn_in_steps,
                        settings.use_stored_state, training=training)
  if target_network is online_network and not training:
    # An actor's priorities: the same network twice gives the same values.
    target_heads = tf.nest.map_structure(tf.stop_gradient, online_heads)
  else:
    target_heads = tf.nest.map_structure(tf.stop_gradient, unroll(
        target_network, trajectory, burn_in_steps, settings.use_stored_state))
  online_q = online_heads[rdqn.EXTRINSIC]
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
  return TdErrors(
      q_values=online_q,
      actions=actions,
      selected_q_values=selected,
      step_mask=mask,
      by_n_step=n_step_td_errors(
          rewards, discounts, online_q, target_heads[rdqn.EXTRINSIC],
          selected, mask, settings, n_steps, settings.gamma),
      online_heads=online_heads,
      target_heads=target_heads)
