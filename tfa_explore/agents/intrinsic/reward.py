"""The intrinsic reward as a component of the agent.

`IntrinsicReward` is what an agent asks of an intrinsic reward, and all it
asks (both families, RND-PPO and the R2D2 bonuses, call only these):

* `stream`: how the agent learns it (`IntrinsicStream`: its weight, its
  discount gamma_I and whether episode ends cut it);
* `rewards(experience, first, update_statistics, mask)`: the reward of
  each transition into `experience.observation[:, first:]`, raw and
  normalised, judged within its sequence (a first-visit gate sees the
  steps before `first`; NGU's reads the novelty the acting policy recorded
  in `policy_info`); with `update_statistics` it first advances the running
  statistics it normalises with (once per batch: the agent decides when);
* `training_inputs(observations)` and `train_step(inputs)`: what its own
  learner trains on (fixed for one update of the agent, cut into the
  agent's minibatches) and one optimisation step on a minibatch of it;
* `observe(observations)`: the statistics of its inputs, fed by the
  warm-up and by each batch after the agent's update;
* `write_summaries(...)`: its `Intrinsic/` and `Normalizers/` scalars;
* `acting_variables`: the part of its state a distributed learner
  publishes to its actors with the policy's weights (RND's: the input
  statistics), so that each actor's copy of the agent is the learner's
  but for what only training reads.

Its state (networks, optimizer, statistics) is tracked by the agent that
holds it, so `tf.train.Checkpoint(agent=...)` saves it; it builds its
optimizer's slots itself, before any traced step.

`RndIntrinsicReward` is Random Network Distillation (Burda et al. 2018,
arXiv 1810.12894, sections 2.2-2.4); its maths is in `maths.py` and nothing
in it is PPO's. `RndPPOAgent` holds one (rewards of each rollout,
predictor steps in its minibatches) and so do R2D2 and R2D3 through their
exploration bonus (`agents/r2d2_intrinsic/`); an agent without one has no
intrinsic stream. NGU's reward composes RND with an episodic novelty
(`ngu.py`, `episodic.py`).
"""

import collections
from typing import Callable, Optional, Tuple

import tensorflow as tf
from tf_agents.networks import network
from tf_agents.specs import tensor_spec
from tf_agents.typing import types

from tfa_explore.agents.intrinsic import maths
from tfa_explore.agents.intrinsic import normalizers
from tfa_explore.agents.intrinsic import summaries

# How the agent learns the reward: `coef` weighs the intrinsic stream
# against the extrinsic one, `discount` is gamma_I and `non_episodic` leaves
# the stream uncut by episode ends.
IntrinsicStream = collections.namedtuple(
    'IntrinsicStream', ('coef', 'discount', 'non_episodic'))
# Rewards of `[B, T]` transitions.
IntrinsicRewards = collections.namedtuple('IntrinsicRewards',
                                          ('raw', 'normalized'))
# One optimisation step of the intrinsic reward's own learner: its loss and
# the fraction of the minibatch it trained on.
IntrinsicLoss = collections.namedtuple('IntrinsicLoss',
                                       ('loss', 'update_fraction'))
# What `rewards` reads of a batch: a `Trajectory` has these fields, and an
# agent holding only observations builds one (`policy_info` may be ()).
Sequences = collections.namedtuple('Sequences',
                                   ('observation', 'step_type', 'policy_info'))


class IntrinsicReward(tf.Module):
  """Interface of an intrinsic reward (see the module docstring)."""

  @property
  def stream(self) -> IntrinsicStream:
    """How the agent learns this reward."""
    raise NotImplementedError

  def rewards(self, experience, first: int = 1,
              update_statistics: bool = False,
              mask=None) -> IntrinsicRewards:
    """Rewards of the transitions into `experience.observation[:, first:]`.

    Args:
      experience: `[B, T]` sequences with `observation`, `step_type` and
        `policy_info` (a `Trajectory` or `Sequences`), each environment's
        in time order (the return statistics follow them).
      first: The first next observation that is rewarded (>= 1); the steps
        before it are context only (R2D2's burn-in, PPO's `o_0`).
      update_statistics: Advance the normalising statistics with these
        rewards first; False leaves every variable untouched.
      mask: Optional `[B, T - first]` bool, the steps that are transitions
        (R2D2's replayed sequences have padding); the others do not reach
        the statistics. Their rewards are computed all the same.

    Returns:
      `IntrinsicRewards` of `[B, T - first]` float32 tensors.
    """
    raise NotImplementedError

  def training_inputs(self, observations) -> types.NestedTensor:
    """What `train_step` trains on, from `[B, T, ...]` observations."""
    raise NotImplementedError

  def train_step(self, inputs) -> IntrinsicLoss:
    """One optimisation step on a minibatch of `training_inputs`."""
    raise NotImplementedError

  def observe(self, observations) -> None:
    """Adds observations (any outer dims) to its input statistics."""
    raise NotImplementedError

  def write_summaries(self, step, rewards: IntrinsicRewards, weights,
                      update_fraction) -> None:
    """Writes the reward statistics over the rows with weight > 0."""
    raise NotImplementedError

  @property
  def acting_variables(self) -> Tuple[tf.Variable, ...]:
    """Variables a distributed learner publishes to its actors; none."""
    return ()


class RndIntrinsicReward(IntrinsicReward):
  """Random Network Distillation (Burda et al. 2018).

  The reward of a transition is the error of a trained predictor network
  at the fixed random target network's features of the next observation
  (section 2.2), both seeing whitened and clipped observations (section
  2.4), divided by the running std of the discounted intrinsic return
  (section 2.4). The predictor trains with its own optimizer on a random
  fraction of each minibatch (appendix A.5).
  """

  def __init__(
      self,
      observation_spec: types.NestedTensorSpec,
      target_net: Optional[network.Network] = None,
      predictor_net: Optional[network.Network] = None,
      networks_fn: Optional[Callable[[tf.TensorSpec],
                                     Tuple[network.Network,
                                           network.Network]]] = None,
      optimizer: Optional[types.Optimizer] = None,
      observation_fn: Optional[Callable[[types.NestedTensor],
                                        types.Tensor]] = None,
      coef: types.Float = 1.0,
      discount: types.Float = 0.99,
      non_episodic: bool = True,
      normalize_observations: bool = True,
      observation_clip: types.Float = 5.0,
      normalize_returns: bool = True,
      predictor_update_proportion: types.Float = 0.25,
      first_visits_only: bool = False,
      name: str = 'rnd_intrinsic_reward',
  ):
    """Creates the component and the variables of its networks.

    Defaults are the paper's (Table 5 / appendix A.5).

    Args:
      observation_spec: The environment's observation spec.
      target_net: Fixed random network; it must have no trainable
        variables (build it non-trainable, e.g. `rnd_mlp_networks`).
      predictor_net: Trained network with the same output size.
      networks_fn: Instead of both networks: called with the RND input
        spec, returns `(target, predictor)`, e.g.
        `tfa_explore.networks.rnd_mlp_networks` or `rnd_conv_networks`.
      optimizer: Optimizer of the predictor; default Adam(1e-4) as in the
        paper.
      observation_fn: Maps an observation (nest) to the single RND input
        tensor, e.g. `tfa_explore.networks.last_frame` for frame stacks.
        Default: the observation itself.
      coef: Weight of the intrinsic stream (paper: 1 for A_I against 2 for
        A_E).
      discount: gamma_I, of the intrinsic returns and of the return filter
        (paper: 0.99).
      non_episodic: Episode ends do not cut the intrinsic stream (paper:
        True, section 2.3).
      normalize_observations: Whiten and clip the RND inputs (paper: True).
        Only the RND networks see these statistics.
      observation_clip: Clip of the whitened RND inputs (paper: 5).
      normalize_returns: Divide rewards by the running std of intrinsic
        returns (paper: True).
      predictor_update_proportion: Fraction of each minibatch the predictor
        trains on (paper: 0.25; 1 trains on everything).
      first_visits_only: Pay r_i only on an observation's first visit in
        its episode, as far as the agent's sequence holds it (NovelD's
        episodic restriction, Zhang et al. 2021, arXiv 2110.00860; not in
        the RND paper).
      name: Module name.

    Raises:
      ValueError: Inconsistent networks or settings.
      TypeError: A network is not a TF-Agents `Network`.
    """
    super().__init__(name=name)
    if observation_fn is None and tf.nest.is_nested(observation_spec):
      raise ValueError('Nested observations need an observation_fn that '
                       'picks the single RND input tensor.')
    if not 0.0 < predictor_update_proportion <= 1.0:
      raise ValueError('predictor_update_proportion must be in (0, 1], got '
                       f'{predictor_update_proportion} (gin: intrinsic.'
                       'rnd_intrinsic_reward.predictor_update_proportion).')
    self._observation_fn = observation_fn or (lambda observation: observation)
    input_spec = self._input_spec(observation_spec)
    self._rnd_input_spec = input_spec
    if target_net is None and predictor_net is None and networks_fn:
      target_net, predictor_net = networks_fn(input_spec)
    for net_name, net in (('target_net', target_net),
                          ('predictor_net', predictor_net)):
      if not isinstance(net, network.Network):
        raise TypeError(f'{net_name} must be a tf_agents Network, got {net}.')
    target_spec = target_net.create_variables(input_spec)
    predictor_spec = predictor_net.create_variables(input_spec)
    if target_spec.shape != predictor_spec.shape:
      raise ValueError('RND target and predictor outputs differ: '
                       f'{target_spec} vs {predictor_spec}.')
    if target_net.trainable_variables:
      raise ValueError('The RND target network must have no trainable '
                       'variables (build it with trainable=False).')
    self._target_net = target_net
    self._predictor_net = predictor_net
    self._optimizer = optimizer or tf.keras.optimizers.Adam(
        learning_rate=1e-4)
    self._coef = float(coef)
    self._discount = discount
    self._non_episodic = non_episodic
    self._normalize_returns = normalize_returns
    self._predictor_update_proportion = float(predictor_update_proportion)
    self._first_visits_only = bool(first_visits_only)
    self._observation_normalizer = normalizers.RndObservationNormalizer(
        input_spec, clip_value=observation_clip,
        enabled=normalize_observations)
    self._return_normalizer = normalizers.IntrinsicReturnNormalizer(discount)
    # Slots now, so the first traced train step is traced once.
    if hasattr(self._optimizer, 'build'):
      self._optimizer.build(self._predictor_net.trainable_variables)

  def _input_spec(self, observation_spec):
    example = tensor_spec.zero_spec_nest(observation_spec, outer_dims=[1])
    return tf.TensorSpec(self._observation_fn(example).shape[1:], tf.float32)

  @property
  def stream(self):
    return IntrinsicStream(coef=self._coef, discount=self._discount,
                           non_episodic=self._non_episodic)

  @property
  def target_net(self):
    return self._target_net

  @property
  def predictor_net(self):
    return self._predictor_net

  @property
  def optimizer(self):
    """The predictor's optimizer."""
    return self._optimizer

  @property
  def observation_normalizer(self):
    return self._observation_normalizer

  @property
  def return_normalizer(self):
    return self._return_normalizer

  @property
  def input_spec(self):
    """Spec of one RND input (`raw_inputs` of one observation)."""
    return self._rnd_input_spec

  @property
  def normalize_returns(self):
    return self._normalize_returns

  @property
  def first_visits_only(self):
    return self._first_visits_only

  def raw_inputs(self, observations):
    """The RND inputs of observations (any outer dims), unnormalised."""
    return tf.cast(self._observation_fn(observations), tf.float32)

  def inputs(self, observations):
    """Normalised, clipped RND inputs of observations (any outer dims)."""
    return self._observation_normalizer.normalize(
        self.raw_inputs(observations))

  def raw_rewards(self, observations):
    """Prediction errors of observations (any outer dims), no state change."""
    inputs = self.inputs(observations)
    target, _ = self._target_net(inputs)
    predicted, _ = self._predictor_net(inputs)
    return maths.prediction_error(predicted, target)

  def first_visits(self, observations, step_types):
    """`[B, T]` bool: which observations of a sequence are new to their
    episode, as far as the sequence holds it."""
    return maths.first_visits(
        maths.observation_keys(self.raw_inputs(observations)), step_types)

  def rewards(self, experience, first=1, update_statistics=False, mask=None):
    observations = experience.observation
    raw = tf.stop_gradient(self.raw_rewards(
        tf.nest.map_structure(lambda o: o[:, first:], observations)))
    if self._first_visits_only:
      gate = self.first_visits(observations, experience.step_type)[:, first:]
      raw *= tf.cast(gate, raw.dtype)
    if not (update_statistics and self._normalize_returns):
      return IntrinsicRewards(raw=raw, normalized=self.normalized(raw))
    filtered_returns = self._return_normalizer.update(raw, mask)
    with tf.control_dependencies([filtered_returns]):
      normalized = self.normalized(raw)
    return IntrinsicRewards(raw=raw, normalized=normalized)

  def normalized(self, raw):
    """Raw rewards over the running std of intrinsic returns (unchanged
    without `normalize_returns`); no state change."""
    if not self._normalize_returns:
      return raw
    return self._return_normalizer.normalize(raw)

  def training_inputs(self, observations):
    # Inputs and target features stay fixed during the agent's update: the
    # normaliser is only updated after it, as in the paper's code.
    inputs = tf.stop_gradient(self.inputs(observations))
    targets, _ = self._target_net(inputs)
    return {'inputs': inputs, 'targets': tf.stop_gradient(targets)}

  def predictor_loss(self, inputs, targets, mask):
    """Masked mean prediction error: `sum(mask * err) / max(sum(mask), 1)`.

    `mask` is 0/1 (any outer dims of `inputs`). Only the kept samples go
    through the predictor: the same loss and gradients as masking all of
    them, at `predictor_update_proportion` of the cost.
    """
    kept = tf.where(tf.cast(mask, tf.bool))
    predicted, _ = self._predictor_net(tf.gather_nd(inputs, kept),
                                       training=True)
    errors = maths.prediction_error(predicted, tf.gather_nd(targets, kept))
    return tf.reduce_sum(errors) / tf.maximum(
        tf.cast(tf.size(errors), errors.dtype), 1.0)

  def train_step(self, inputs):
    mask = maths.predictor_update_mask(tf.shape(inputs['targets'])[:-1],
                                       self._predictor_update_proportion)
    variables = self._predictor_net.trainable_variables
    with tf.GradientTape() as tape:
      loss = self.predictor_loss(inputs['inputs'], inputs['targets'], mask)
    gradients = tape.gradient(loss, variables)
    self._optimizer.apply_gradients(zip(gradients, variables))
    return IntrinsicLoss(loss=loss, update_fraction=tf.reduce_mean(mask))

  def observe(self, observations):
    self._observation_normalizer.update(self.raw_inputs(observations))

  @property
  def acting_variables(self):
    """The observation normaliser's statistics (section 2.4)."""
    return tuple(self._observation_normalizer.variables)

  def write_summaries(self, step, rewards, weights, update_fraction,
                      moments=None):
    """As `IntrinsicReward`'s; `moments` replace the return statistics."""
    if moments is None:
      moments = {'return_std': self._return_normalizer.std(),
                 'return_mean': self._return_normalizer.mean()}
    summaries.write_intrinsic(
        step,
        raw_rewards=rewards.raw,
        normalized_rewards=rewards.normalized,
        weights=weights,
        predictor_update_fraction=update_fraction,
        **moments)
    if self._observation_normalizer.enabled:
      mean, std = self._observation_normalizer.mean_and_std()
      summaries.write_observation_normalizer(
          step, mean, std, self._observation_normalizer.count())
