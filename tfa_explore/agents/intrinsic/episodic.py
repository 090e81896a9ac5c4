"""Episodic novelty: how new an observation is within its episode.

An acting policy keeps each env's memory of its current episode in its
state and asks `novelty(inputs, is_first, memory)` at every step; NGU's
reward (`ngu.py`) multiplies that novelty by the RND modulator. Two ways
to remember (Badia et al. 2020, section 2):

* `EpisodicCounts`: exact visit counts of each input,
  1/sqrt(visits) (`maths.episodic_visit_counts` over `observation_keys`);
* `embedding.ControllableEmbedding`: NGU's k-NN kernel over a learnt
  embedding, which `trains` (its `train_step` on replayed transitions) and
  whose weights the acting policy reads (`acting_variables`).
"""

import tensorflow as tf

from tfa_explore.agents.intrinsic import maths


class EpisodicNovelty(tf.Module):
  """Interface of an episodic novelty (the module docstring)."""

  # Whether it has a model to train on replayed transitions (`train_step`).
  trains = False

  def memory_spec(self, capacity: int):
    """One env's memory of at most `capacity` entries."""
    raise NotImplementedError

  def novelty(self, inputs, is_first, memory):
    """`(novelty [B] float32, memory)`: one step of `[B]` envs' memories.

    Args:
      inputs: `[B, ...]` this step's inputs (the RND inputs, unnormalised).
      is_first: `[B]` bool, the step starts an episode (empties the memory).
      memory: the memories before this step (`memory_spec` with a batch
        dim; zeros: empty).
    """
    raise NotImplementedError

  @property
  def acting_variables(self):
    """Variables `novelty` reads (a learner publishes them to actors)."""
    return ()

  def build_optimizer(self):
    """Creates its optimizer's slots, if it trains."""


class EpisodicCounts(EpisodicNovelty):
  """Exact visit counts: novelty 1/sqrt(visits), this visit included."""

  def __init__(self, name='episodic_counts'):
    super().__init__(name=name)

  def memory_spec(self, capacity):
    return {
        'keys': tf.TensorSpec([capacity], tf.int64),
        'counts': tf.TensorSpec([capacity], tf.int32),
        'size': tf.TensorSpec([], tf.int32),
    }

  def novelty(self, inputs, is_first, memory):
    keys = maths.observation_keys(inputs[:, None])[:, 0]
    visits, memory = maths.episodic_visit_counts(keys, is_first, memory)
    return tf.math.rsqrt(tf.cast(visits, tf.float32)), memory
