"""Pure maths of intrinsic rewards (Burda et al. 2018, arXiv 1810.12894).

Stateless functions shared by every agent that holds an intrinsic reward
(RND-PPO, R2D2 and R2D3): the RND prediction error, the predictor's
sample mask, the intrinsic return filter, masked statistics, the
episodic first-visit gate, and NGU's episodic memories (exact counts and
the k-NN kernel) with its action classifier's loss.
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


def episodic_knn_novelty(embeddings, is_first, memory, num_neighbors=10,
                         kernel_epsilon=1e-4, cluster_distance=0.008,
                         pseudo_count=1e-3, max_similarity=8.0,
                         distance_mean_rate=0.01):
  """NGU's episodic novelty of embeddings: one step of the k-NN memory.

  Badia et al. 2020 (arXiv 2002.06038), section 2 and appendix A.1: each
  environment keeps the embeddings of its current episode; the novelty of
  embedding e is `1 / s`, `s = sqrt(sum_i K(e, n_i)) + c` over its k
  nearest neighbours n_i, with the kernel `K = eps / (d_n + eps)` of the
  squared distance divided by a running mean of the neighbours' squared
  distances, less the cluster distance (`d_n = max(d^2 / d_m^2 - xi, 0)`),
  and 0 where `s` exceeds the maximum similarity. The step's own
  embedding counts as its nearest neighbour (K = 1), so a view far from
  all others gets `1 / (1 + c)` and one at distance 0 of n - 1 others
  `1 / (sqrt(n) + c)`: `1/sqrt(visits)`, the exact counts' value, in the
  limit of a sharp kernel. The running mean `d_m^2` is each env's, kept
  across episodes: a running average of the step means, then an
  exponential one of rate `distance_mean_rate`. Once K embeddings are held,
  new ones are compared but not stored.

  Args:
    embeddings: `[B, d]` float32 embeddings of this step's observations.
    is_first: `[B]` bool, the step starts an episode (empties the memory).
    memory: `{'embeddings': [B, K, d] float32, 'size': [B] int32,
      'distance_mean': [B] float32, 'distance_count': [B] float32}` before
      this step (zeros: empty).
    num_neighbors: k, this step's embedding included (paper: 10).
    kernel_epsilon: eps of the kernel (paper: 1e-4).
    cluster_distance: xi (paper: 0.008).
    pseudo_count: c (paper: 1e-3).
    max_similarity: s_m (paper: 8).
    distance_mean_rate: smallest weight of a step in `d_m^2`.

  Returns:
    `(novelty [B] float32, memory)`: the novelty and the memory after
    this step.
  """
  embeddings = tf.convert_to_tensor(embeddings, tf.float32)
  stored = memory['embeddings']
  size = tf.where(is_first, tf.zeros_like(memory['size']), memory['size'])
  capacity = stored.shape[1]
  slots = tf.range(capacity)[None, :]
  held = slots < size[:, None]
  squared = tf.reduce_sum(tf.square(stored - embeddings[:, None, :]), axis=-1)
  neighbors = min(num_neighbors - 1, capacity)
  if neighbors > 0:
    nearest = -tf.math.top_k(
        tf.where(held, -squared, tf.fill(tf.shape(squared), -float('inf'))),
        k=neighbors).values
    valid = tf.math.is_finite(nearest)
  else:
    nearest = tf.zeros([tf.shape(embeddings)[0], 0])
    valid = tf.zeros_like(nearest, tf.bool)
  nearest = tf.where(valid, nearest, tf.zeros_like(nearest))
  num_valid = tf.reduce_sum(tf.cast(valid, tf.float32), axis=1)
  seen = num_valid > 0
  step_mean = tf.reduce_sum(nearest, axis=1) / tf.maximum(num_valid, 1.0)
  count = memory['distance_count'] + tf.cast(seen, tf.float32)
  rate = tf.maximum(1.0 / tf.maximum(count, 1.0), distance_mean_rate)
  old_mean = memory['distance_mean']
  mean = tf.where(seen, old_mean + rate * (step_mean - old_mean), old_mean)
  normalized = tf.maximum(
      nearest / tf.maximum(mean[:, None], 1e-12) - cluster_distance, 0.0)
  kernel = tf.where(valid, kernel_epsilon / (normalized + kernel_epsilon),
                    tf.zeros_like(normalized))
  similarity = tf.sqrt(1.0 + tf.reduce_sum(kernel, axis=1)) + pseudo_count
  novelty = tf.where(similarity > max_similarity, tf.zeros_like(similarity),
                     1.0 / similarity)
  insert = size < capacity
  inserted = tf.logical_and(tf.equal(slots, size[:, None]), insert[:, None])
  new_memory = {
      'embeddings': tf.where(inserted[:, :, None], embeddings[:, None, :],
                             stored),
      'size': size + tf.cast(insert, size.dtype),
      'distance_mean': mean,
      'distance_count': count,
  }
  return novelty, new_memory


def inverse_dynamics_loss(logits, actions, mask):
  """NGU's action prediction loss: masked mean cross-entropy, and accuracy.

  Args:
    logits: `[N, A]` logits of `p(a_t | x_t, x_{t+1})`.
    actions: `[N]` int actions taken (from 0).
    mask: `[N]` 0/1, the transitions to learn from.

  Returns:
    `(loss, accuracy)` scalars over the kept transitions (0 without any).
  """
  actions = tf.cast(actions, tf.int32)
  losses = tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=actions, logits=logits)
  correct = tf.cast(tf.equal(tf.argmax(logits, axis=-1, output_type=tf.int32),
                             actions), tf.float32)
  mask = tf.cast(mask, tf.float32)
  return masked_mean(losses, mask), masked_mean(correct, mask)
