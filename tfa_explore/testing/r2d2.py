"""Helpers of the R2D2 and replay tests: test case, small agents, sequences."""

import functools
import os

import numpy as np
import tensorflow as tf
from tf_agents.specs import tensor_spec
from tf_agents.trajectories import trajectory as trajectory_lib

from tfa_explore.agents.intrinsic import reward as intrinsic
from tfa_explore.agents.r2d2 import agent as r2d2_agent
from tfa_explore.agents.r2d2 import config as r2d2_config
from tfa_explore.agents.r2d2_intrinsic import q_bonus
from tfa_explore.networks import recurrent_dueling_q_network as rdqn
from tfa_explore.networks import rnd_networks
from tfa_explore.testing import fake_envs

# burn-in 2, trace 4, period 2 -> sequence_length 7, overlap 5.
SMALL_CONFIG = r2d2_config.SequenceConfig(
    burn_in_steps=2, trace_length=4, replay_period=2)


class TestCase(tf.test.TestCase):
  """`tf.test.TestCase` without the method pytest mistakes for a test."""
  # tf.test.TestCase's deprecated `test_session` context manager is not a
  # test, but pytest collects it by name and reports it as skipped.
  test_session = None


def counting_env(seed=0, episode_length=5):
  """`Counting-v0` (observation = step index, reward t) of a set length."""
  return fake_envs.load_counting(seed=seed, episode_length=episode_length)


# `r2d2.r2d2_agent_fn`'s required arguments for a small agent.
FACTORY_KWARGS = dict(
    sequence_config=SMALL_CONFIG, lstm_size=8, torso_fc_layer_params=(8,),
    dueling_fc_layer_params=(8,), learning_rate=1e-3, adam_epsilon=1e-3,
    n_step=2, gamma=0.9, target_update_period=10,
    importance_sampling_exponent=0.6, priority_max_weight=0.9,
    gradient_clipping=None)


def small_network(time_step_spec, action_spec, lstm_size=8,
                  intrinsic_head=False):
  """A `RecurrentDuelingQNetwork` of 8 units per layer for the specs."""
  time_step_spec = tensor_spec.from_spec(time_step_spec)
  action_spec = tensor_spec.from_spec(action_spec)
  return rdqn.RecurrentDuelingQNetwork(
      rdqn.make_input_spec(time_step_spec.observation, action_spec),
      action_spec, torso_fc_layer_params=(8,), lstm_size=lstm_size,
      dueling_fc_layer_params=(8,), intrinsic_head=intrinsic_head)


def rnd_component(coef=2.0, normalize=False, non_episodic=False, **kwargs):
  """A small RND `IntrinsicReward` for `counting_env()`'s observations.

  `normalize` switches both normalisers; `kwargs` go to
  `RndIntrinsicReward` (e.g. `first_visits_only`).
  """
  observation_spec = tensor_spec.from_spec(counting_env().observation_spec())
  return intrinsic.RndIntrinsicReward(
      observation_spec,
      networks_fn=functools.partial(rnd_networks.rnd_mlp_networks,
                                    torso_fc_layer_params=(8,),
                                    predictor_fc_layer_params=(8,),
                                    output_dim=4),
      optimizer=tf.keras.optimizers.Adam(1e-2),
      coef=coef, discount=0.9, non_episodic=non_episodic,
      normalize_observations=normalize, normalize_returns=normalize,
      predictor_update_proportion=1.0, **kwargs)


def rnd_bonus(arms=False, **kwargs):
  """An `IntrinsicQBonus` of `rnd_component(**kwargs)`."""
  return q_bonus.IntrinsicQBonus(rnd_component(**kwargs), arms=arms)


def summary_tags(logdir):
  """The set of summary tags in the event files of `logdir`."""
  tags = set()
  for name in os.listdir(logdir):
    for event in tf.compat.v1.train.summary_iterator(
        os.path.join(logdir, name)):
      tags.update(value.tag for value in event.summary.value)
  return tags


def make_agent(env=None, sequence_config=SMALL_CONFIG, lstm_size=8,
               intrinsic_head=False, **kwargs):
  """An initialized small `R2D2Agent` for `env` (default `counting_env()`).

  `kwargs` go to `R2D2Agent`; each agent gets its own train step counter.
  `intrinsic_head`: the network's Q_I head (on with an `exploration`).
  """
  env = env or counting_env()
  intrinsic_head = intrinsic_head or kwargs.get('exploration') is not None
  time_step_spec = tensor_spec.from_spec(env.time_step_spec())
  action_spec = tensor_spec.from_spec(env.action_spec())
  network = small_network(time_step_spec, action_spec, lstm_size,
                          intrinsic_head)
  kwargs.setdefault('optimizer', tf.keras.optimizers.Adam(1e-2))
  # Not the default global step, which all agents of a test would share.
  kwargs.setdefault('train_step_counter', tf.Variable(0, dtype=tf.int64))
  agent = r2d2_agent.R2D2Agent(
      time_step_spec, action_spec, network,
      sequence_config=sequence_config, **kwargs)
  agent.initialize()
  return agent


def random_sequences(agent, step_types, seed=0):
  """A `[B, T]` Trajectory in the agent's collect_data_spec.

  Observations, rewards, actions, stored states and previous
  actions/rewards are random; step types as given; discounts 1 except 0
  on the transition into a LAST step.
  """
  rng = np.random.default_rng(seed)
  step_types = np.asarray(step_types, np.int32)
  outer = step_types.shape
  spec = agent.collect_data_spec

  def random_like(s):
    shape = outer + tuple(s.shape)
    if s.dtype.is_integer:
      # Step types are overwritten below; actions within their bounds.
      # Bounds may be arrays (image specs): their extremes will do.
      low = int(np.min(getattr(s, 'minimum', 0)))
      high = int(np.max(getattr(s, 'maximum', 2)))
      return tf.constant(rng.integers(low, high + 1, size=shape), s.dtype)
    return tf.constant(rng.normal(size=shape), s.dtype)

  trajectory = tf.nest.map_structure(random_like, spec)
  next_step_types = np.concatenate(
      [step_types[:, 1:], np.full(outer[:1] + (1,), 1, np.int32)], axis=1)
  next_step_types = np.where(step_types == 2, 0, next_step_types)
  discounts = np.where(next_step_types == 2, 0.0, 1.0).astype(np.float32)
  return trajectory._replace(
      step_type=tf.constant(step_types),
      next_step_type=tf.constant(next_step_types),
      discount=tf.constant(discounts))


def replace_at(trajectory, positions, values_fn):
  """Copy of `trajectory` whose float/int leaves get values_fn at positions.

  positions: bool `[B, T]`; values_fn(leaf_array, positions) -> new array.
  Step types are kept.
  """
  positions = np.asarray(positions, bool)

  def replace(x):
    x = x.numpy().copy()
    x[positions] = values_fn(x, positions)
    return tf.constant(x)

  replaced = tf.nest.map_structure(replace, trajectory)
  return replaced._replace(
      step_type=trajectory.step_type,
      next_step_type=trajectory.next_step_type)


def trajectory_from_steps(time_step, policy_step, next_time_step):
  """`trajectory.from_transition` (what an observer is called with)."""
  return trajectory_lib.from_transition(time_step, policy_step,
                                        next_time_step)
