"""NGU's controllable state and its episodic k-NN memory.

Never Give Up (Badia et al. 2020, arXiv 2002.06038, section 2 and
appendix A.1) counts an episode's visits in an embedding f(x) trained only
to predict the action between two consecutive observations: a classifier
h(f(x_t), f(x_{t+1})) -> p(a_t). What the agent's actions cannot change
gives that classifier nothing, so f need not tell such observations apart
and the episodic novelty stops paying for them.

`ControllableEmbedding` holds f, h and their optimizer. As an
`episodic.EpisodicNovelty` of NGU's reward (`ngu.NguReward`) it lets the
acting policy keep each episode's embeddings (`memory_spec`, `novelty`:
`maths.episodic_knn_novelty`) and the agent's learner train f and h on
replayed transitions (`train_step`). The acting policy reads f's weights
(`acting_variables`), so a distributed learner publishes them with the
Q-network's.
"""

from typing import Optional

import tensorflow as tf
from tf_agents.networks import network
from tf_agents.typing import types

from tfa_explore.agents.intrinsic import episodic
from tfa_explore.agents.intrinsic import maths


class ControllableEmbedding(episodic.EpisodicNovelty):
  """f and h of NGU's inverse dynamics, with the k-NN settings."""

  trains = True

  def __init__(self,
               input_spec: tf.TensorSpec,
               num_actions: int,
               embedding_net: network.Network,
               inverse_net: network.Network,
               optimizer: Optional[types.Optimizer] = None,
               num_neighbors: int = 10,
               kernel_epsilon: float = 1e-4,
               cluster_distance: float = 0.008,
               pseudo_count: float = 1e-3,
               max_similarity: float = 8.0,
               name: str = 'controllable_embedding'):
    """Creates the networks' variables.

    Defaults are the paper's (its table of hyperparameters).

    Args:
      input_spec: Spec of one input, the intrinsic reward's (unnormalised)
        view of an observation.
      num_actions: Actions the classifier chooses from.
      embedding_net: f, `input -> [d]`.
      inverse_net: h, `[2 d] (f(x_t), f(x_{t+1})) -> [num_actions]` logits.
      optimizer: Of f and h together; default Adam(5e-4), the paper's.
      num_neighbors: k of the memory's kernel, the step's own included.
      kernel_epsilon: eps of the kernel.
      cluster_distance: xi of the kernel.
      pseudo_count: c of `1 / (sqrt(sum K) + c)`.
      max_similarity: s_m: no novelty above it.
      name: Module name.

    Raises:
      ValueError: The networks' outputs do not fit together.
    """
    super().__init__(name=name)
    if num_neighbors < 1:
      raise ValueError(f'num_neighbors must be >= 1, got {num_neighbors} '
                       '(gin: intrinsic.controllable_embedding.num_neighbors).')
    embedding_spec = embedding_net.create_variables(input_spec)
    if embedding_spec.shape.rank != 1:
      raise ValueError('The embedding network must give a vector per input, '
                       f'got {embedding_spec}.')
    dim = int(embedding_spec.shape[0])
    logits_spec = inverse_net.create_variables(
        tf.TensorSpec([2 * dim], tf.float32))
    if logits_spec.shape.as_list() != [num_actions]:
      raise ValueError(f'The inverse network must give {num_actions} logits '
                       f'(one per action), got {logits_spec}.')
    self._embedding_net = embedding_net
    self._inverse_net = inverse_net
    self._embedding_dim = dim
    self._optimizer = optimizer or tf.keras.optimizers.Adam(5e-4)
    self._knn = dict(num_neighbors=int(num_neighbors),
                     kernel_epsilon=float(kernel_epsilon),
                     cluster_distance=float(cluster_distance),
                     pseudo_count=float(pseudo_count),
                     max_similarity=float(max_similarity))

  @property
  def embedding_dim(self) -> int:
    return self._embedding_dim

  @property
  def embedding_net(self) -> network.Network:
    return self._embedding_net

  @property
  def inverse_net(self) -> network.Network:
    return self._inverse_net

  @property
  def acting_variables(self):
    """f's variables: what an acting policy reads."""
    return tuple(self._embedding_net.variables)

  def embed(self, inputs, training=False):
    """f of inputs (any outer dims)."""
    embeddings, _ = self._embedding_net(inputs, training=training)
    return embeddings

  def memory_spec(self, capacity: int):
    """One env's memory of `maths.episodic_knn_novelty`."""
    return {
        'embeddings': tf.TensorSpec([capacity, self._embedding_dim],
                                    tf.float32),
        'size': tf.TensorSpec([], tf.int32),
        'distance_mean': tf.TensorSpec([], tf.float32),
        'distance_count': tf.TensorSpec([], tf.float32),
    }

  def novelty(self, inputs, is_first, memory):
    """`(novelty [B], memory)` of `[B, ...]` inputs: one step of the memory."""
    return maths.episodic_knn_novelty(self.embed(inputs), is_first, memory,
                                      **self._knn)

  def loss(self, inputs, next_inputs, actions, mask, training=False):
    """`(loss, accuracy)` of predicting `[N]` actions from `[N, ...]` pairs."""
    features = tf.concat([self.embed(inputs, training),
                          self.embed(next_inputs, training)], axis=-1)
    logits, _ = self._inverse_net(features, training=training)
    return maths.inverse_dynamics_loss(logits, actions, mask)

  def build_optimizer(self):
    if hasattr(self._optimizer, 'build'):
      self._optimizer.build(self._trainable_variables())

  def _trainable_variables(self):
    return (self._embedding_net.trainable_variables +
            self._inverse_net.trainable_variables)

  def train_step(self, inputs, next_inputs, actions, mask):
    """One optimiser step of f and h; returns `(loss, accuracy)`."""
    variables = self._trainable_variables()
    with tf.GradientTape() as tape:
      loss, accuracy = self.loss(inputs, next_inputs, actions, mask,
                                 training=True)
    gradients = tape.gradient(loss, variables)
    self._optimizer.apply_gradients(zip(gradients, variables))
    return loss, accuracy
