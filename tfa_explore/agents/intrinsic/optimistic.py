"""Optimism for untried actions: RND over state-action pairs, for R2D2.

RND's reward of the next observation (`q_bonus.IntrinsicQBonus`) pays for
a novel state only once a transition into it has been replayed, and Q_I
says nothing about an action never taken: at the edge of what the agent
knows, the exploring policy has no reason to prefer the untried action,
and finding the next new state is left to epsilon. OPIQ (Rashid et al.
2020, "Optimistic Exploration even with a Pessimistic Initialisation",
ICLR) shows that an intrinsic reward needs optimism where it acts and
where it bootstraps. `OptimisticRndBonus` gives RND's networks a
state-action pair (the observation in its action's block of the input),
so their error n(s, a) stays high for a pair the predictor has not been
trained on: an action not yet taken in s, or a state not yet seen.

* The exploring policy is greedy on
  h^-1(Q_E) + beta (h^-1(Q_I) + kappa n(s, a)): OPIQ's optimistic action
  selection, with RND's error in place of its count bonus (kappa: the
  bonus's `optimism`).
* r_i of a transition is max_a n(s', a), the next state's largest action
  novelty: OPIQ bootstraps on the next state's optimistic values, and
  paying that optimism as a reward lets Q_I carry it back over many steps,
  so the exploring policy walks to a state that still has an untried
  action and then takes it.
* The predictor trains on the trace transitions' (s_t, a_t): a pair stops
  being novel once it is taken, not once its next state is seen.

n(s, a) and r_i are both divided by the reward's running std of
intrinsic returns. The reward's settings are RND's (`coef` is beta,
`discount` gamma_I); the reward must not be gated to first visits.
"""

import numpy as np
import tensorflow as tf

from tfa_explore.agents.intrinsic import q_bonus
from tfa_explore.networks import recurrent_dueling_q_network as rdqn

OBSERVATION = 'observation'
ACTION = 'action'


class StateActionInputs:
  """RND's input of a state-action pair: the view in its action's block.

  The input has one block of the flattened observation's size per action,
  the observation in the taken action's block and zeros in the others
  (the outer product of the one-hot and the view). The networks' first
  layer then has weights of its own per action: a state seen under one
  action does not teach the predictor the pair with another, which is
  what keeps an untried action novel. Appending the one-hot instead lets
  the predictor generalise from the view and the action separately.

  Pairs are dicts `{'observation': [..., *obs_shape], 'action': [..., A]}`
  (the action one-hot, float32); `spec` is the pair spec the RND reward is
  built with, and the object itself is its `observation_fn`.
  """

  def __init__(self, observation_spec, num_actions, action_minimum=0):
    if tf.nest.is_nested(observation_spec):
      raise ValueError('A state-action RND needs a single observation '
                       f'tensor, got {observation_spec}.')
    self._observation_shape = tuple(observation_spec.shape.as_list())
    self._observation_size = int(np.prod(self._observation_shape))
    self._num_actions = int(num_actions)
    self._action_minimum = int(action_minimum)
    self.spec = {OBSERVATION: observation_spec,
                 ACTION: tf.TensorSpec([self._num_actions], tf.float32)}

  @property
  def num_actions(self):
    return self._num_actions

  def __call__(self, pairs):
    action = tf.cast(pairs[ACTION], tf.float32)
    outer_shape = tf.shape(action)[:-1]
    observation = tf.reshape(
        tf.cast(pairs[OBSERVATION], tf.float32),
        tf.concat([outer_shape, [self._observation_size]], axis=0))
    blocks = action[..., :, None] * observation[..., None, :]
    return tf.reshape(blocks, tf.concat(
        [outer_shape, [self._num_actions * self._observation_size]], axis=0))

  def pairs(self, observations, actions):
    """Pairs of `[...]` actions (the spec's values) and their observations."""
    return {OBSERVATION: observations,
            ACTION: tf.one_hot(tf.cast(actions, tf.int32) -
                               self._action_minimum, self._num_actions)}

  def all_actions(self, observations):
    """Pairs `[..., A]`: each observation with every action."""
    observations = tf.convert_to_tensor(observations)
    outer_rank = observations.shape.rank - len(self._observation_shape)
    tiled = tf.repeat(tf.expand_dims(observations, outer_rank),
                      self._num_actions, axis=outer_rank)
    outer_shape = tf.shape(observations)[:outer_rank]
    one_hots = tf.broadcast_to(
        tf.eye(self._num_actions),
        tf.concat([outer_shape, [self._num_actions, self._num_actions]], 0))
    return {OBSERVATION: tiled, ACTION: one_hots}


class OptimisticExploringPolicy(q_bonus.ExploringPolicy):
  """Greedy on h^-1(Q_E) + beta (h^-1(Q_I) + kappa n(s, a))."""

  def __init__(self, time_step_spec, action_spec, q_network, intrinsic_weight,
               td_settings, bonus, name=None):
    self._bonus = bonus
    super().__init__(time_step_spec, action_spec, q_network,
                     intrinsic_weight, td_settings, name=name)

  def _variables(self):
    return super()._variables() + list(self._bonus.acting_variables)

  def _action_values(self, inputs, step_type, network_state):
    values, next_state = super()._action_values(inputs, step_type,
                                                network_state)
    novelty = self._bonus.action_novelty(inputs[rdqn.OBSERVATION_KEY])
    return values + self._intrinsic_weight * self._bonus.optimism * tf.cast(
        novelty, values.dtype), next_state


class OptimisticRndBonus(q_bonus.IntrinsicQBonus):
  """RND over state-action pairs, optimistic where it acts (module doc)."""

  def __init__(self, reward, inputs, optimism, arms=False,
               name='optimistic_rnd_bonus'):
    """Creates the bonus.

    Args:
      reward: a `RndIntrinsicReward` built on `inputs.spec` with `inputs`
        as its `observation_fn`, episodic and not gated to first visits.
      inputs: the `StateActionInputs` of the env's observations and actions.
      optimism: kappa >= 0, the weight of n(s, a) in the acting values
        (0: optimism only through r_i).
      arms: as `IntrinsicQBonus`.
      name: Module name.

    Raises:
      ValueError: a reward gated to first visits, or a negative optimism.
    """
    if reward.first_visits_only:
      raise ValueError(
          'first_visits_only must be False, got True: a state-action '
          'novelty pays for pairs, not visits (gin: '
          'intrinsic.rnd_intrinsic_reward.first_visits_only).')
    if not optimism >= 0:
      raise ValueError(f'optimism must be >= 0, got {optimism} (gin: '
                       'intrinsic.optimistic_rnd_bonus.optimism).')
    super().__init__(reward, arms=arms, name=name)
    self._inputs = inputs
    self._optimism = float(optimism)

  @property
  def optimism(self):
    return self._optimism

  @property
  def acting_variables(self):
    return self._reward.acting_variables

  def _policy(self, agent, intrinsic_weight):
    time_step_spec, action_spec = agent.policy_specs
    return OptimisticExploringPolicy(time_step_spec, action_spec,
                                     agent.q_network, intrinsic_weight,
                                     agent.td_settings, self)

  def action_novelty(self, observations, normalized=True):
    """n(s, a) `[..., A]` of `[...]` observations, every action."""
    raw = tf.stop_gradient(self._reward.raw_rewards(
        self._inputs.all_actions(observations)))
    if not normalized:
      return raw
    return self._reward.normalized_rewards(raw).normalized

  def _rewards(self, agent, trajectory, next_observations, transitions,
               update_statistics):
    del agent, trajectory
    raw = tf.reduce_max(self.action_novelty(next_observations,
                                            normalized=False), axis=-1)
    return self._reward.normalized_rewards(raw, update_statistics,
                                           mask=transitions)

  def _taken_pairs(self, trajectory, steps):
    """The `(s_t, a_t)` pairs of a batch's `[B, T]` steps, flattened."""
    pairs = self._inputs.pairs(trajectory.observation, trajectory.action)
    return tf.nest.map_structure(lambda x: tf.boolean_mask(x, steps), pairs)

  def observe(self, agent, trajectory):
    real, transitions, next_observations = self._transitions(agent,
                                                             trajectory)
    self._reward.update_observation_normalizer(
        self._taken_pairs(trajectory, real))
    return self._rewards(agent, trajectory, next_observations, transitions,
                         update_statistics=True)

  def _predictor_inputs(self, agent, trajectory, transitions,
                        next_observations):
    del next_observations
    # The trace transitions' own steps t, whose actions were taken.
    burn_in = agent.sequence_config.burn_in_steps
    batch_size = tf.shape(transitions)[0]
    steps = tf.concat([
        tf.zeros([batch_size, burn_in], tf.bool), transitions,
        tf.zeros([batch_size, 1], tf.bool)], axis=1)
    return self._taken_pairs(trajectory, steps)
