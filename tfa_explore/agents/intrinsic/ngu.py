"""Never Give Up's intrinsic reward: episodic novelty times RND's modulator.

Badia et al. 2020 (arXiv 2002.06038), section 2:

    r_i = novelty * clip(1 + (err - mean) / std, 1, L)

`novelty` is an `episodic.EpisodicNovelty`'s (exact counts or the learnt
controllable embedding), recorded by the acting policy when it saw the
observation (in its info under `EPISODIC_NOVELTY`); `err` is RND's
prediction error of it (`RndIntrinsicReward`,
whose predictor and input normaliser this reward trains and feeds), and
mean and std are the running moments of all errors seen. The reward is
neither divided by a return std nor gated to first visits: the episodic
memory already pays a view once per visit count.
"""

import tensorflow as tf

from tfa_explore.agents.intrinsic import maths
from tfa_explore.agents.intrinsic import normalizers
from tfa_explore.agents.intrinsic import reward as reward_lib

# Key of the novelty an acting policy records in its info for each
# observation it saw (and so in replay).
EPISODIC_NOVELTY = 'episodic_novelty'


class NguReward(reward_lib.IntrinsicReward):
  """RND and an episodic novelty composed into NGU's reward."""

  def __init__(self, rnd, novelty, memory_size, max_modulator=5.0,
               action_minimum=0, name='ngu_reward'):
    """Creates the reward.

    Args:
      rnd: a `RndIntrinsicReward` built with `normalize_returns=False` and
        `first_visits_only=False`; its `stream` is this reward's.
      novelty: an `episodic.EpisodicNovelty`.
      memory_size: distinct entries an acting policy remembers per episode.
      max_modulator: L of the modulator's clip (paper: 5).
      action_minimum: the action spec's minimum (a trained novelty's
        classifier predicts `action - action_minimum`).
      name: Module name.

    Raises:
      ValueError: settings NGU's reward cannot have.
    """
    super().__init__(name=name)
    if rnd.normalize_returns or rnd.first_visits_only:
      raise ValueError(
          'normalize_returns and first_visits_only must be False, got '
          f'{rnd.normalize_returns} and {rnd.first_visits_only}: NGU\'s reward '
          'is neither divided by a return std nor gated to first visits '
          '(gin: intrinsic.rnd_intrinsic_reward.normalize_returns, '
          '.first_visits_only).')
    if memory_size < 1:
      raise ValueError(f'memory_size must be >= 1, got {memory_size} (gin: '
                       'intrinsic.ngu_bonus.memory_size).')
    if max_modulator < 1.0:
      raise ValueError(f'max_modulator must be >= 1, got {max_modulator} '
                       '(gin: intrinsic.ngu_bonus.max_modulator).')
    self._rnd = rnd
    self._novelty = novelty
    self._memory_size = int(memory_size)
    self._max_modulator = float(max_modulator)
    self._action_minimum = int(action_minimum)
    self._error_moments = normalizers.ErrorMoments()
    self._novelty.build_optimizer()

  @property
  def rnd(self):
    return self._rnd

  @property
  def novelty(self):
    """The `episodic.EpisodicNovelty`."""
    return self._novelty

  @property
  def error_moments(self):
    """Running moments of RND's errors (`normalizers.ErrorMoments`)."""
    return self._error_moments

  @property
  def stream(self):
    return self._rnd.stream

  def memory_spec(self):
    """One env's episodic memory, kept in the acting policy's state."""
    return self._novelty.memory_spec(self._memory_size)

  def episodic_novelty(self, observations, is_first, memory):
    """`(novelty [B], memory)` of `[B, ...]` observations: one step."""
    return self._novelty.novelty(self._rnd.raw_inputs(observations),
                                 is_first, memory)

  @property
  def acting_variables(self):
    return self._novelty.acting_variables

  def observe(self, observations):
    self._rnd.observe(observations)

  def training_inputs(self, observations):
    return self._rnd.training_inputs(observations)

  def train_step(self, inputs):
    """One step of RND's predictor (`RndIntrinsicReward.train_step`)."""
    return self._rnd.train_step(inputs)

  def rewards(self, experience, first=1, update_statistics=False, mask=None):
    """As `IntrinsicReward`'s: the novelty is the acting policy's, read from
    `experience.policy_info[EPISODIC_NOVELTY]`; the running moments take
    the errors of the masked transitions."""
    episodic_novelty = experience.policy_info[EPISODIC_NOVELTY][:, first:]
    raw = tf.stop_gradient(self._rnd.raw_rewards(tf.nest.map_structure(
        lambda o: o[:, first:], experience.observation)))
    if update_statistics:
      with tf.control_dependencies([self._error_moments.update(raw, mask)]):
        raw = tf.identity(raw)
    modulator = maths.ngu_modulator(raw, self._error_moments.mean(),
                                    self._error_moments.std(),
                                    self._max_modulator)
    return reward_lib.IntrinsicRewards(
        raw=raw, normalized=tf.cast(episodic_novelty, tf.float32) * modulator)

  def train_novelty_step(self, observations, actions, transitions):
    """None, or `(loss, accuracy)` of one step of a trained novelty.

    Args:
      observations: `[B, T, ...]` replayed observations.
      actions: `[B, T]` the actions taken at them.
      transitions: `[B, T - 1]` bool, t -> t + 1 is a step of one episode.
    """
    if not self._novelty.trains:
      return None
    inputs = self._rnd.raw_inputs(observations)
    pairs = tf.where(transitions)
    return self._novelty.train_step(
        tf.gather_nd(inputs[:, :-1], pairs),
        tf.gather_nd(inputs[:, 1:], pairs),
        tf.gather_nd(actions[:, :-1], pairs) - self._action_minimum,
        tf.ones([tf.shape(pairs)[0]]))

  def write_summaries(self, step, rewards, weights, update_fraction):
    self._rnd.write_summaries(
        step, rewards, weights, update_fraction,
        moments={'error_mean': self._error_moments.mean(),
                 'error_std': self._error_moments.std()})
