"""Exploration bonuses of the R2D2 family: an intrinsic reward learnt by Q_I.

`IntrinsicQBonus` is an `r2d2.exploration.ExplorationBonus` holding an
intrinsic reward (RND's, `intrinsic.RndIntrinsicReward`). The agent's Q
network has a second head, Q_I (`RecurrentDuelingQNetwork(
intrinsic_head=True)`), on the same core as Q_E:

* r_i of each replayed trace step is the reward of its next observation,
  on steps whose next step is real (same episode, not padding); burn-in
  steps and the last step get 0 (no target uses their reward). With the
  reward's first-visit gate, r_i is paid on next observations not seen
  earlier in the sequence's episode (burn-in included).
* Q_E learns r_e (discount gamma) and Q_I learns r_i (discount: the
  reward's `stream.discount`, gamma_I) from the agent's one unroll; Q_I's
  bootstrap action is the argmax of h^-1(Q_E) + beta h^-1(Q_I) (the
  exploring actors' policy, Agent57's target policy), beta = the reward's
  `stream.coef`. The loss adds Q_I's TD loss; the priorities use
  |delta_E| + beta |delta_I|.
* The exploring policy (`ExploringPolicy`) is greedy on
  h^-1(Q_E) + beta h^-1(Q_I); with `arms` each actor slot has its own beta
  from 0 to coef (NGU's arms, Badia et al. 2020, appendix A). The agent's
  `policy` (evaluated, saved) stays greedy on Q_E: with one mixed Q the
  greedy policy would keep chasing novelty; NGU and Agent57 evaluate
  their beta = 0 arm for that reason.
* Per batch: the reward's input statistics take the batch's real
  observations and its return statistics the trace transitions' rewards
  (`observe`), the loss reads r_i with those statistics, then the
  reward's own learner (RND's predictor) takes one step on the same next
  observations (`train_step`).

`NguQBonus` pays NGU's reward (`intrinsic.ngu.NguReward`) instead: its
exploring policy keeps each env's episodic memory in its state and
records each observation's novelty in its info (`ngu.EPISODIC_NOVELTY`,
so it is in replay); r_i is that novelty of the next observation times the
RND modulator. A learnt embedding also takes one step per batch on the
sequences' transitions (burn-in included), and its weights are the
bonus's `acting_variables`.
"""

import math

import tensorflow as tf

from tfa_explore.agents.intrinsic import ngu
from tfa_explore.agents.r2d2 import exploration
from tfa_explore.agents.r2d2 import learning
from tfa_explore.agents.r2d2 import losses
from tfa_explore.agents.r2d2 import policy as r2d2_policy
from tfa_explore.networks import recurrent_dueling_q_network as rdqn

EPISODIC_MEMORY = 'episodic_memory'
EPISODIC_NOVELTY = ngu.EPISODIC_NOVELTY


def mixed_action_values(extrinsic_q, intrinsic_q, intrinsic_weight,
                        rescale_values=True, rescale_epsilon=1e-3):
  """h^-1(Q_E) + beta h^-1(Q_I): what an exploring policy maximises.

  The value of r_e + beta r_i under the two heads' returns (Agent57, Badia
  et al. 2020, Section 4.1, combines its two heads so, and acts on h of
  it; h is monotone, so the argmax is the same). Used for the argmax only.

  Args:
    extrinsic_q, intrinsic_q: float `[..., A]`, in rescaled space when
      `rescale_values`.
    intrinsic_weight: beta.
    rescale_values: the heads are rescaled by h.
    rescale_epsilon: eps of h.

  Returns:
    float `[..., A]`.
  """
  if rescale_values:
    extrinsic_q = losses.inverse_value_rescale(extrinsic_q, rescale_epsilon)
    intrinsic_q = losses.inverse_value_rescale(intrinsic_q, rescale_epsilon)
  return extrinsic_q + intrinsic_weight * intrinsic_q


def ngu_intrinsic_weight(arm, num_arms, max_weight):
  """beta_i of NGU's arm i of N (Badia et al. 2020, appendix A).

  beta_0 = 0 (pure exploitation), beta_{N-1} = max_weight, and between them
  max_weight * sigmoid(10 (2 i - (N - 2)) / (N - 2)).
  """
  if not 0 <= arm < num_arms:
    raise ValueError(f'arm must be in [0, {num_arms}), got {arm}.')
  if arm == 0:
    return 0.0
  if arm == num_arms - 1:
    return float(max_weight)
  x = 10.0 * (2 * arm - (num_arms - 2)) / (num_arms - 2)
  return float(max_weight / (1.0 + math.exp(-x)))


def slot_intrinsic_weights(actor_index, num_actors, envs_per_actor,
                           max_weight):
  """beta of each env of a batched actor: NGU's arms over all slots.

  Slot j of N (as `policy.slot_epsilons`) is arm N - 1 - j: the slot with
  the largest epsilon (j = 0) explores with max_weight and the one with the
  smallest acts on Q_E alone (beta 0), the arm closest to the evaluated
  greedy policy.
  """
  num_slots = num_actors * envs_per_actor
  first_slot = actor_index * envs_per_actor
  return [ngu_intrinsic_weight(num_slots - 1 - (first_slot + k), num_slots,
                               max_weight)
          for k in range(envs_per_actor)]


class ExploringPolicy(r2d2_policy.R2D2Policy):
  """Greedy on h^-1(Q_E) + beta h^-1(Q_I) of a network with both heads."""

  def __init__(self, time_step_spec, action_spec, q_network, intrinsic_weight,
               td_settings, name=None, **extra_specs):
    """`intrinsic_weight`: beta, a float or `[B, 1]` (one per env)."""
    self._intrinsic_weight = intrinsic_weight
    self._td_settings = td_settings
    super().__init__(time_step_spec, action_spec, q_network, name=name,
                     **extra_specs)

  def _action_values(self, inputs, step_type, network_state, extra_state):
    del extra_state
    heads, next_state = self.q_network.q_heads(
        inputs, step_type=step_type, network_state=network_state,
        training=False)
    return mixed_action_values(
        heads[rdqn.EXTRINSIC], heads[rdqn.INTRINSIC], self._intrinsic_weight,
        self._td_settings.rescale_values,
        self._td_settings.rescale_epsilon), next_state


class EpisodicExploringPolicy(ExploringPolicy):
  """`ExploringPolicy` that keeps NGU's episodic memory and records novelty."""

  def __init__(self, time_step_spec, action_spec, q_network, intrinsic_weight,
               td_settings, ngu_reward, name=None):
    self._ngu_reward = ngu_reward
    super().__init__(
        time_step_spec, action_spec, q_network, intrinsic_weight,
        td_settings, name=name,
        extra_state_spec={EPISODIC_MEMORY: ngu_reward.memory_spec()},
        extra_info_spec={EPISODIC_NOVELTY: tf.TensorSpec([], tf.float32)})

  def _variables(self):
    return super()._variables() + list(self._ngu_reward.acting_variables)

  def _extra_step(self, time_step, is_first, policy_state):
    novelty, memory = self._ngu_reward.episodic_novelty(
        time_step.observation, is_first, policy_state[EPISODIC_MEMORY])
    return {EPISODIC_NOVELTY: novelty}, {EPISODIC_MEMORY: memory}


class IntrinsicQBonus(exploration.ExplorationBonus):
  """An intrinsic reward learnt by Q_I (the module docstring)."""

  def __init__(self, reward, arms=False, name='intrinsic_q_bonus'):
    """Creates the bonus.

    Args:
      reward: an `intrinsic.IntrinsicReward` with an episodic stream
        (`stream.non_episodic` False): Q_I shares Q_E's episode ends.
      arms: each actor slot acts with its own beta (NGU's arms); False:
        every slot with beta = the reward's `coef`.
      name: Module name.

    Raises:
      ValueError: a non-episodic reward.
    """
    super().__init__(name=name)
    if reward.stream.non_episodic:
      raise ValueError(
          'non_episodic must be False, got True: Q_I shares Q_E\'s episode '
          'ends (gin: intrinsic.rnd_intrinsic_reward.non_episodic).')
    self._reward = reward
    self._arms = bool(arms)

  @property
  def reward(self):
    return self._reward

  @property
  def arms(self):
    return self._arms

  def check(self, agent):
    if not agent.q_network.has_intrinsic_head:
      raise ValueError(
          'An intrinsic Q bonus needs a q_network with an intrinsic head '
          '(RecurrentDuelingQNetwork(intrinsic_head=True); '
          'r2d2.r2d2_agent_fn builds one with any exploration bonus).')

  def _policy(self, agent, intrinsic_weight):
    time_step_spec, action_spec = agent.policy_specs
    return ExploringPolicy(time_step_spec, action_spec, agent.q_network,
                           intrinsic_weight, agent.td_settings)

  def exploring_policy(self, agent, slots=None):
    weight = float(self._reward.stream.coef)
    if slots is not None and self._arms:
      weight = tf.constant(
          slot_intrinsic_weights(*slots, max_weight=weight), tf.float32)[:,
                                                                         None]
    return self._policy(agent, weight)

  def _transitions(self, agent, trajectory):
    """(real steps `[B, T]`, trace transitions `[B, T']`, next observations)."""
    burn_in = agent.sequence_config.burn_in_steps
    real = learning.step_mask(trajectory.step_type)
    # Trace transitions t -> t+1 inside one real segment.
    transitions = tf.logical_and(real[:, burn_in:-1], real[:, burn_in + 1:])
    next_observations = tf.nest.map_structure(
        lambda x: x[:, burn_in + 1:], trajectory.observation)
    return real, transitions, next_observations

  def _rewards(self, agent, trajectory, transitions, update_statistics):
    # Burn-in steps are context: a first-visit gate counts them as seen.
    return self._reward.rewards(
        trajectory, first=agent.sequence_config.burn_in_steps + 1,
        update_statistics=update_statistics, mask=transitions)

  def intrinsic_rewards(self, agent, trajectory):
    """`[B, T]` r_i of a batch's trace steps (zeros elsewhere); no update."""
    _, transitions, _ = self._transitions(agent, trajectory)
    rewards = self._rewards(agent, trajectory, transitions,
                            update_statistics=False)
    bonus = rewards.normalized * tf.cast(transitions, tf.float32)
    batch_size = tf.shape(bonus)[0]
    return tf.concat([
        tf.zeros([batch_size, agent.sequence_config.burn_in_steps]), bonus,
        tf.zeros([batch_size, 1])], axis=1)

  def loss(self, agent, trajectory, errors, loss_weights):
    settings = agent.td_settings
    burn_in = settings.burn_in_steps
    online, target = errors.online_heads, errors.target_heads
    dtype = errors.q_values.dtype
    exploring_q = mixed_action_values(
        online[rdqn.EXTRINSIC], online[rdqn.INTRINSIC],
        float(self._reward.stream.coef), settings.rescale_values,
        settings.rescale_epsilon)
    rewards = tf.cast(
        self.intrinsic_rewards(agent, trajectory)[:, burn_in:], dtype)
    discounts = tf.cast(trajectory.discount[:, burn_in:], dtype)
    intrinsic_errors = learning.n_step_td_errors(
        rewards, discounts, exploring_q, target[rdqn.INTRINSIC],
        tf.gather(online[rdqn.INTRINSIC], errors.actions, axis=-1,
                  batch_dims=2),
        errors.step_mask, settings, (agent.n_step,),
        float(self._reward.stream.discount))[agent.n_step]
    return exploration.ExplorationLoss(
        loss=agent.td_loss(intrinsic_errors, loss_weights),
        priority_errors=float(self._reward.stream.coef) * tf.abs(
            intrinsic_errors.td_errors))

  def observe(self, agent, trajectory):
    real, transitions, _ = self._transitions(agent, trajectory)
    self._reward.observe(tf.nest.map_structure(
        lambda x: tf.boolean_mask(x, real), trajectory.observation))
    return self._rewards(agent, trajectory, transitions,
                         update_statistics=True)

  def train_step(self, agent, trajectory, observed, loss_info):
    real, transitions, next_observations = self._transitions(agent,
                                                             trajectory)
    reward_loss = self._reward.train_step(self._reward.training_inputs(
        tf.nest.map_structure(lambda x: tf.boolean_mask(x, transitions),
                              next_observations)))
    novelty = self._train_novelty(trajectory, real)
    if not agent.summaries_enabled:
      return
    step = agent.train_step_counter
    self._reward.write_summaries(step, observed,
                                 tf.cast(transitions, tf.float32),
                                 reward_loss.update_fraction)
    tf.summary.scalar('Losses/intrinsic_reward_loss', reward_loss.loss,
                      step=step)
    tf.summary.scalar('Losses/intrinsic_td_loss',
                      loss_info.extra.exploration_loss, step=step)
    if novelty is not None:
      tf.summary.scalar('Losses/embedding_loss', novelty[0], step=step)
      tf.summary.scalar('Intrinsic/action_prediction_accuracy', novelty[1],
                        step=step)

  def _train_novelty(self, trajectory, real):
    """None: RND's reward has no episodic model."""
    del trajectory, real
    return None


class NguQBonus(IntrinsicQBonus):
  """NGU's reward learnt by Q_I, the memory in the exploring policy."""

  def _policy(self, agent, intrinsic_weight):
    time_step_spec, action_spec = agent.policy_specs
    return EpisodicExploringPolicy(time_step_spec, action_spec,
                                   agent.q_network, intrinsic_weight,
                                   agent.td_settings, self._reward)

  @property
  def acting_variables(self):
    return self._reward.acting_variables

  def _train_novelty(self, trajectory, real):
    # The embedding learns from every transition of the sequence's
    # episode, burn-in included.
    return self._reward.train_novelty_step(
        trajectory.observation, trajectory.action,
        tf.logical_and(real[:, :-1], real[:, 1:]))
