"""Pure maths of intrinsic rewards (Burda et al. 2018, arXiv 1810.12894).

Stateless functions shared by every agent that holds an intrinsic reward
(RND-PPO, R2D2 and R2D3): the RND prediction error, the predictor's
sample mask, the intrinsic return filter, masked statistics and the
episodic first-visit gate.
"""

import numpy as np
import tensorflow as tf
from tf_agents.trajectories import time_step as ts

# Fixed odd 64-bit multipliers of `observation_keys` (one per input element,
# drawn once; the same on every process and run).
_KEY_SEED = 20211001


def intrinsic_return_filter(rewards, initial_state, gamma):
  """Discounted return filter `R_t = gamma * R_{t-1} + r_t` per environment.

  The paper normalises intrinsic rewards by a running std of these filtered
  returns, not of the rewards. The filter never resets at episode ends: the
  intrinsic stream is non-episodic.

  Args:
    rewards: `[B, T]` intrinsic rewards in time order.
    initial_state: `[B]` filter value before the first column.
    gamma: gamma_I.

  Returns:
    `(filtered [B, T], final_state [B])`.
  """
  rewards = tf.cast(rewards, tf.float32)

  def _forward(previous, reward):
    return gamma * previous + reward

  filtered = tf.scan(_forward, tf.transpose(rewards),
                     initializer=tf.cast(initial_state, tf.float32))
  filtered = tf.transpose(filtered)
  return filtered, filtered[:, -1]

def prediction_error(predicted_features, target_features):
  """RND intrinsic reward: mean squared error over the feature axis."""
  return tf.reduce_mean(
      tf.math.squared_difference(predicted_features,
                                 tf.stop_gradient(target_features)),
      axis=-1)

def predictor_update_mask(shape, proportion, seed=None):
  """Random 0/1 mask keeping each sample with probability `proportion`."""
  if proportion >= 1.0:
    return tf.ones(shape, tf.float32)
  return tf.cast(
      tf.random.uniform(shape, seed=seed) < proportion, tf.float32)

def masked_mean(values, mask):
  """`sum(mask * values) / max(sum(mask), 1)`: 0 when nothing is kept."""
  mask = tf.cast(mask, values.dtype)
  return tf.reduce_sum(mask * values) / tf.maximum(tf.reduce_sum(mask), 1.0)

def masked_moments(values, weights):
  """Weighted mean and variance of `values`."""
  weights = tf.cast(weights, values.dtype)
  total = tf.maximum(tf.reduce_sum(weights), 1.0)
  mean = tf.reduce_sum(weights * values) / total
  variance = tf.reduce_sum(weights * tf.square(values - mean)) / total
  return mean, variance

def observation_keys(inputs):
  """An int64 key per observation: equal observations, equal keys.

  Exact for any float32 input: the bits of each element (`tf.bitcast`)
  times a fixed random odd 64-bit multiplier, summed with wrap-around.
  Integer sums do not depend on their order, so identical observations get
  identical keys wherever they sit in the batch; distinct ones collide with
  probability about 2**-64.

  Args:
    inputs: `[B, T, ...]` float32 inputs, one observation per `[b, t]`.

  Returns:
    `[B, T]` int64 keys.
  """
  inputs = tf.convert_to_tensor(inputs, tf.float32)
  flat = tf.reshape(inputs, tf.concat([tf.shape(inputs)[:2], [-1]], axis=0))
  size = inputs.shape[2:].num_elements()
  multipliers = np.random.default_rng(_KEY_SEED).integers(
      -2**62, 2**62, size=size, dtype=np.int64) * 2 + 1
  bits = tf.cast(tf.bitcast(flat, tf.int32), tf.int64)
  return tf.reduce_sum(bits * tf.constant(multipliers), axis=-1)


def first_visits(keys, step_types):
  """Whether each observation is new to its episode within the sequence.

  NovelD's episodic restriction (Zhang et al. 2021, arXiv 2110.00860,
  section 3.1) pays the intrinsic reward of `o_{t+1}` only on its first
  visit in the episode; here the episode's memory is what the `[B, T]`
  sequence holds of it (an episode starts at a FIRST step or at the
  sequence's start).

  Args:
    keys: `[B, T]` int64 observation keys (`observation_keys`).
    step_types: `[B, T]` step types of those observations.

  Returns:
    `[B, T]` bool: no earlier step of the same episode in the row has the
    same key.
  """
  starts = tf.cast(tf.equal(step_types, ts.StepType.FIRST), tf.int32)
  episodes = tf.cumsum(starts, axis=1)
  same = tf.logical_and(
      tf.equal(keys[:, :, None], keys[:, None, :]),
      tf.equal(episodes[:, :, None], episodes[:, None, :]))
  steps = tf.range(tf.shape(keys)[1])
  earlier = steps[None, :] < steps[:, None]   # [t, s]: s before t
  return tf.logical_not(tf.reduce_any(tf.logical_and(same, earlier), axis=2))


def episodic_visit_counts(keys, is_first, memory):
  """Counts each observation's visits in its episode: one step of memory.

  The episodic memory of Never Give Up (Badia et al. 2020, arXiv
  2002.06038, section 2) with exact counts instead of its k-nearest
  neighbours of learned embeddings: MiniGrid's views are discrete, and an
  exact count is the limit of its kernel. Each environment of the batch
  holds up to K distinct keys of its current episode and their counts; a
  FIRST step empties it. Once K distinct keys are held, a new key is
  counted as a first visit and not stored.

  Args:
    keys: `[B]` int64 keys of this step's observations (`observation_keys`).
    is_first: `[B]` bool, the step starts an episode.
    memory: `{'keys': [B, K] int64, 'counts': [B, K] int32, 'size': [B]
      int32}` before this step (zeros: empty).

  Returns:
    `(counts [B] int32, memory)`: visits of each key in its episode so far,
    this one included (>= 1), and the memory after this step.
  """
  size = tf.where(is_first, tf.zeros_like(memory['size']), memory['size'])
  counts = tf.where(is_first[:, None], tf.zeros_like(memory['counts']),
                    memory['counts'])
  capacity = tf.shape(counts)[1]
  slots = tf.range(capacity)[None, :]
  held = tf.logical_and(slots < size[:, None],
                        tf.equal(memory['keys'], keys[:, None]))
  insert = tf.logical_and(tf.logical_not(tf.reduce_any(held, axis=1)),
                          size < capacity)
  inserted = tf.logical_and(tf.equal(slots, size[:, None]), insert[:, None])
  visited = tf.logical_or(held, inserted)
  counts += tf.cast(visited, counts.dtype)
  new_memory = {
      'keys': tf.where(inserted, keys[:, None], memory['keys']),
      'counts': counts,
      'size': size + tf.cast(insert, size.dtype),
  }
  visits = tf.reduce_sum(tf.where(visited, counts, tf.zeros_like(counts)),
                         axis=1)
  return tf.maximum(visits, 1), new_memory


def ngu_modulator(errors, mean, std, max_modulator):
  """NGU's life-long curiosity factor `clip(1 + (err - mu) / sigma, 1, L)`.

  Badia et al. 2020, section 2: the RND error normalised by its running
  mean and std, so an observation RND predicts worse than average
  multiplies the episodic reward by up to L (paper: 5) and the others by 1.
  """
  alpha = 1.0 + (errors - mean) / tf.maximum(std, 1e-8)
  return tf.clip_by_value(alpha, 1.0, max_modulator)
