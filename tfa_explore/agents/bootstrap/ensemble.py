"""Deep exploration for R2D2: bootstrapped Q heads with random priors.

`BootstrappedHeads` is an `r2d2.exploration.ExplorationBonus` for an agent
whose Q network is a `networks.EnsembleQNetwork` (K heads Q_k, each with a
fixed random prior, on R2D2's core). It is Bootstrapped DQN (Osband et al.
2016) with randomized prior functions (Osband et al. 2018), as bsuite's
`boot_dqn`, in R2D2's recurrent, replayed, distributed setting:

* Acting. Each env of an actor follows one head for a whole episode,
  drawn uniformly at the episode's first step (`HeadFollowingPolicy`; the
  head is in the policy state): Thompson sampling of a value function
  rather than of single actions, which is what makes the exploration
  deep: a head that guesses a far state is worth visiting keeps walking
  towards it at every step. The actors' epsilon-greedy wraps it with one
  `epsilon` for every env (bsuite's boot_dqn: 10 / (10 + t), near 0
  within a few hundred steps), not Ape-X's schedule, whose most random
  envs would break every head's walk.
* Learning. Every head learns rescaled double-Q targets of the task's
  reward from the same unroll as Q_E, its own online head picking and its
  own target head valuing the bootstrap action, with its own n
  (`n_step`, default 1 as Bootstrapped DQN): an n-step return follows the
  walk of the head that acted, so it does not back up the other heads'
  optimism at the n - 1 steps it skips, nor any within n steps of an
  episode's end. With
  `mask_probability` < 1 each head trains on a step with that probability
  (the bootstrap mask, drawn by the actor when it took the step and stored
  in replay with it, so a head sees the same data every time the sequence
  is replayed). The heads' loss (their mean) is added to Q_E's; the mean
  of their |delta| is added to the priorities.
* The agent's `policy` (evaluated, saved) stays greedy on Q_E, trained on
  the same replay.

No intrinsic reward is involved: the priors are the optimism, and the
data wash a prior out where the data are.
"""

import tensorflow as tf

from tfa_explore.agents.r2d2 import exploration
from tfa_explore.agents.r2d2 import learning
from tfa_explore.agents.r2d2 import policy as r2d2_policy
from tfa_explore.networks import ensemble_q_network

ENSEMBLE_HEAD = 'ensemble_head'
BOOTSTRAP_MASK = 'bootstrap_mask'


class HeadFollowingPolicy(r2d2_policy.R2D2Policy):
  """Greedy on one head of an `EnsembleQNetwork` per env, drawn per episode.

  State: the env's head (int32). Info, with `mask_probability` < 1: the
  step's bootstrap mask, `[K]` 0/1, one draw per head.
  """

  def __init__(self, time_step_spec, action_spec, q_network,
               mask_probability, name=None):
    self._num_heads = q_network.num_heads
    self._mask_probability = float(mask_probability)
    extra_info_spec = {}
    if self._mask_probability < 1.0:
      extra_info_spec[BOOTSTRAP_MASK] = tf.TensorSpec([self._num_heads],
                                                      tf.float32)
    super().__init__(
        time_step_spec, action_spec, q_network, name=name,
        extra_state_spec={ENSEMBLE_HEAD: tf.TensorSpec([], tf.int32)},
        extra_info_spec=extra_info_spec)

  def _extra_step(self, time_step, is_first, policy_state):
    batch_size = tf.shape(is_first)[0]
    drawn = tf.random.uniform([batch_size], 0, self._num_heads, tf.int32)
    head = tf.where(is_first, drawn, policy_state[ENSEMBLE_HEAD])
    info = {}
    if self._mask_probability < 1.0:
      info[BOOTSTRAP_MASK] = tf.cast(
          tf.random.uniform([batch_size, self._num_heads]) <
          self._mask_probability, tf.float32)
    return info, {ENSEMBLE_HEAD: head}

  def _action_values(self, inputs, step_type, network_state, extra_state):
    heads, next_state = self.q_network.q_heads(
        inputs, step_type=step_type, network_state=network_state,
        training=False)
    values = tf.gather(heads[ensemble_q_network.ENSEMBLE],
                       extra_state[ENSEMBLE_HEAD], axis=1, batch_dims=1)
    return values, next_state


def _fold_heads(values):
  """`[B, T, K, ...]` -> `[K * B, T, ...]`, head-major."""
  perm = [2, 0, 1] + list(range(3, values.shape.rank))
  values = tf.transpose(values, perm)
  shape = tf.shape(values)
  return tf.reshape(values, tf.concat([[-1], shape[2:]], axis=0))


class BootstrappedHeads(exploration.ExplorationBonus):
  """Heads followed per episode and trained on bootstrapped data (module)."""

  def __init__(self, mask_probability=1.0, epsilon=0.0, n_step=1,
               name='bootstrapped_heads'):
    """Creates the component.

    Args:
      mask_probability: chance that a head trains on a step (Osband et al.
        2016's Bernoulli mask; bsuite's boot_dqn: 0.5). 1: every head on
        every step, the priors alone make them differ.
      epsilon: every actor env's epsilon.
      n_step: n of the heads' targets (the agent's `n_step` is Q_E's).
      name: Module name.

    Raises:
      ValueError: a probability outside (0, 1], `epsilon` outside [0, 1]
        or `n_step` below 1.
    """
    super().__init__(name=name)
    if not 0.0 < mask_probability <= 1.0:
      raise ValueError(
          f'mask_probability must be in (0, 1], got {mask_probability}.')
    if not 0.0 <= epsilon <= 1.0:
      raise ValueError(f'epsilon must be in [0, 1], got {epsilon}.')
    if int(n_step) != n_step or n_step < 1:
      raise ValueError(f'n_step must be an integer >= 1, got {n_step}.')
    self._mask_probability = float(mask_probability)
    self._epsilon = float(epsilon)
    self._n_step = int(n_step)

  def check(self, agent):
    if not isinstance(agent.q_network, ensemble_q_network.EnsembleQNetwork):
      raise ValueError(
          'Bootstrapped heads need an EnsembleQNetwork q_network (gin: '
          'r2d2.r2d2_agent_fn.q_network_fn = @bootstrap.ensemble_q_network); '
          f'got {type(agent.q_network).__name__}.')

  def exploring_policy(self, agent, slots=None):
    del slots  # every slot follows heads the same way
    time_step_spec, action_spec = agent.policy_specs
    return HeadFollowingPolicy(time_step_spec, action_spec, agent.q_network,
                               self._mask_probability)

  def actor_epsilons(self, slots):
    return [self._epsilon] * slots.envs_per_actor

  def loss(self, agent, trajectory, errors, loss_weights):
    settings = agent.td_settings
    burn_in = settings.burn_in_steps
    online = errors.online_heads[ensemble_q_network.ENSEMBLE]  # [B,T',K,A]
    target = errors.target_heads[ensemble_q_network.ENSEMBLE]
    num_heads = online.shape[2]
    dtype = online.dtype

    def tile(values):  # [B, ...] -> [K * B, ...], head-major as _fold_heads
      return tf.tile(values, [num_heads] + [1] * (values.shape.rank - 1))

    online = _fold_heads(online)
    rewards = tile(tf.cast(trajectory.reward[:, burn_in:], dtype))
    discounts = tile(tf.cast(trajectory.discount[:, burn_in:], dtype))
    actions = tile(errors.actions)
    head_errors = learning.n_step_td_errors(
        rewards, discounts, online, _fold_heads(target),
        tf.gather(online, actions, axis=-1, batch_dims=2),
        tile(errors.step_mask), settings, (self._n_step,),
        settings.gamma)[self._n_step]
    valid = head_errors.valid
    if BOOTSTRAP_MASK in trajectory.policy_info:
      mask = trajectory.policy_info[BOOTSTRAP_MASK][:, burn_in:]  # [B,T',K]
      valid = tf.logical_and(valid, _fold_heads(mask) > 0)
    head_errors = head_errors._replace(valid=valid)
    abs_errors = tf.abs(tf.where(valid, head_errors.td_errors, 0.0))
    batch_size = tf.shape(errors.actions)[0]
    return exploration.ExplorationLoss(
        loss=agent.td_loss(head_errors, tile(loss_weights)),
        priority_errors=tf.reduce_mean(
            tf.reshape(abs_errors, [num_heads, batch_size, -1]), axis=0))

  def train_step(self, agent, trajectory, observed, loss_info):
    del trajectory, observed
    if agent.summaries_enabled:
      tf.summary.scalar('Losses/ensemble_td_loss',
                        loss_info.extra.exploration_loss,
                        step=agent.train_step_counter)
