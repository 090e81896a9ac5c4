"""The R2D2 policy: greedy Q policy that records what the learner must replay.

It builds the network input from the plain environment time step, so
environments need no wrapper: `prev_reward` is `time_step.reward` (in
TF-Agents the time step at t holds the reward of the action at t - 1) and
`prev_action` is carried in the policy state, `{'network_state': [h, c],
'prev_action': a_{t-1}}`. Its info is what the learner replays
(`inputs.py`).

An exploration bonus's exploring policy subclasses `R2D2Policy`: it may
be greedy on other values of the network's heads (`_action_values`) and
add entries of its own to the state and info (`extra_state_spec`,
`extra_info_spec`, `_extra_step`), e.g. an episodic memory and the
novelty it records for replay.
"""

import tensorflow as tf
import tensorflow_probability as tfp
from tf_agents.policies import tf_policy
from tf_agents.trajectories import policy_step
from tf_agents.trajectories import time_step as ts

from tfa_explore.agents.r2d2 import inputs as r2d2_inputs


def actor_epsilon(actor_index, num_actors, base_epsilon=0.4, alpha=7.0):
  """Exploration rate of actor i of N (Horgan et al. 2018, used by R2D2).

  epsilon_i = base_epsilon ** (1 + alpha * i / (N - 1)) for i in [0, N),
  from 0.4 (actor 0) down to 0.4 ** 8 ~ 6.6e-4 (actor N - 1) with the
  paper's base_epsilon 0.4 and alpha 7. A single actor gets base_epsilon,
  the formula's value at i = 0.
  """
  if num_actors < 1:
    raise ValueError(f'num_actors must be >= 1, got {num_actors}.')
  if not 0 <= actor_index < num_actors:
    raise ValueError(
        f'actor_index must be in [0, {num_actors}), got {actor_index}.')
  if num_actors == 1:
    return float(base_epsilon)
  return float(base_epsilon**(1.0 + alpha * actor_index / (num_actors - 1)))


def slot_epsilons(actor_index, num_actors, envs_per_actor):
  """Epsilons of the envs of a batched actor, one per env.

  Env k of actor i is the paper's actor j = i * envs_per_actor + k of
  N = num_actors * envs_per_actor, so it explores with `actor_epsilon(j, N)`.
  """
  num_slots = num_actors * envs_per_actor
  first_slot = actor_index * envs_per_actor
  return [actor_epsilon(first_slot + k, num_slots)
          for k in range(envs_per_actor)]


def policy_state_spec(q_network, action_spec):
  return {r2d2_inputs.NETWORK_STATE: q_network.state_spec,
          r2d2_inputs.PREV_ACTION: action_spec}


def _zero_where_first(is_first, nest):
  """Replaces the batch rows of `nest` where `is_first` by zeros."""
  def zero(tensor):
    mask = tf.reshape(is_first, [-1] + [1] * (tensor.shape.rank - 1))
    return tf.where(mask, tf.zeros_like(tensor), tensor)
  return tf.nest.map_structure(zero, nest)


class R2D2Policy(tf_policy.TFPolicy):
  """Greedy policy of a `RecurrentDuelingQNetwork`; see the module doc.

  Wrap it in `EpsilonGreedyPolicy` for acting (the agent's `collect_policy`
  and `actor_collect_policy` do); the info passes through unchanged.
  """

  def __init__(self, time_step_spec, action_spec, q_network,
               extra_state_spec=None, extra_info_spec=None, name=None):
    """Creates the policy.

    Args:
      time_step_spec: the environment's `TimeStep` spec.
      action_spec: scalar bounded integer spec.
      q_network: a `RecurrentDuelingQNetwork`.
      extra_state_spec, extra_info_spec: a subclass's own state and info
        entries (dicts), filled by its `_extra_step`.
      name: policy name.
    """
    self._q_network = q_network
    super().__init__(
        time_step_spec,
        action_spec,
        policy_state_spec=dict(policy_state_spec(q_network, action_spec),
                               **(extra_state_spec or {})),
        info_spec=dict(r2d2_inputs.info_spec(q_network, action_spec,
                                             time_step_spec.reward),
                       **(extra_info_spec or {})),
        name=name)

  @property
  def q_network(self):
    return self._q_network

  def _variables(self):
    return list(self._q_network.variables)

  def _action_values(self, inputs, step_type, network_state, extra_state):
    """`([B, A] values to be greedy on, next network state)`.

    `extra_state`: this step's entries of `_extra_step` (a subclass's).
    """
    del extra_state
    return self._q_network(inputs, step_type=step_type,
                           network_state=network_state, training=False)

  def _extra_step(self, time_step, is_first, policy_state):
    """`(info, state)` entries of a subclass for this step; none here.

    Runs before `_action_values`, which sees the state entries it returns.
    """
    del time_step, is_first, policy_state
    return {}, {}

  def _distribution(self, time_step, policy_state):
    is_first = tf.equal(time_step.step_type, ts.StepType.FIRST)
    # On FIRST steps the network resets its state and ignores the previous
    # action and reward; zeroing them here too makes the stored info equal
    # to what the network effectively used.
    network_state = _zero_where_first(is_first,
                                      policy_state[r2d2_inputs.NETWORK_STATE])
    prev_action, prev_reward = _zero_where_first(
        is_first, (policy_state[r2d2_inputs.PREV_ACTION], time_step.reward))
    info = {
        r2d2_inputs.NETWORK_STATE: r2d2_inputs.lists_to_tuples(network_state),
        r2d2_inputs.PREV_ACTION: prev_action,
        r2d2_inputs.PREV_REWARD: prev_reward,
    }
    extra_info, extra_state = self._extra_step(time_step, is_first,
                                               policy_state)
    q_values, next_network_state = self._action_values(
        r2d2_inputs.network_inputs(time_step.observation, info),
        time_step.step_type, network_state, extra_state)
    action = tf.argmax(q_values, axis=-1, output_type=self.action_spec.dtype)
    action += tf.cast(self.action_spec.minimum, self.action_spec.dtype)
    # The state records the greedy action, which is the action taken when
    # acting greedily; `R2D2CollectPolicy` overwrites it with the action it
    # actually takes.
    next_state = {r2d2_inputs.NETWORK_STATE: next_network_state,
                  r2d2_inputs.PREV_ACTION: action}
    info.update(extra_info)
    next_state.update(extra_state)
    return policy_step.PolicyStep(
        tfp.distributions.Deterministic(action), next_state, info)


class R2D2CollectPolicy(tf_policy.TFPolicy):
  """Epsilon-greedy over `R2D2Policy`, keeping the TAKEN action in the state.

  TF-Agents' `EpsilonGreedyPolicy` returns the greedy policy's state, whose
  `prev_action` would be the greedy action even when a random one was
  taken; the next step must see the action actually taken.
  """

  def __init__(self, greedy_policy, epsilon, name=None):
    self._greedy_policy = greedy_policy
    self._epsilon = epsilon
    super().__init__(
        greedy_policy.time_step_spec,
        greedy_policy.action_spec,
        policy_state_spec=greedy_policy.policy_state_spec,
        info_spec=greedy_policy.info_spec,
        name=name)

  @property
  def epsilon(self):
    return self._epsilon() if callable(self._epsilon) else self._epsilon

  @property
  def greedy_policy(self):
    """The `R2D2Policy` this one is epsilon-greedy over."""
    return self._greedy_policy

  def _variables(self):
    return self._greedy_policy.variables()

  def _action(self, time_step, policy_state, seed):
    seed_stream = tfp.util.SeedStream(seed=seed, salt='r2d2_collect')
    greedy_step = self._greedy_policy.action(time_step, policy_state)
    batch_shape = tf.shape(time_step.step_type)
    spec = self.action_spec
    random_action = tf.random.uniform(
        batch_shape, minval=spec.minimum, maxval=spec.maximum + 1,
        dtype=spec.dtype, seed=seed_stream())
    explore = tf.random.uniform(batch_shape, seed=seed_stream()) < tf.cast(
        self.epsilon, tf.float32)
    action = tf.where(explore, random_action, greedy_step.action)
    next_state = dict(greedy_step.state)
    next_state[r2d2_inputs.PREV_ACTION] = action
    return policy_step.PolicyStep(action, next_state, greedy_step.info)
