"""The intrinsic reward component built from gin, for every agent.

`intrinsic.rnd_intrinsic_reward` builds the RND component
(`tfa_explore.agents.intrinsic.RndIntrinsicReward`); an agent factory
binds it as `intrinsic_reward = @intrinsic.rnd_intrinsic_reward` and calls
it with the environment's observation spec: `rnd_ppo.rnd_ppo_agent`
(RND-PPO) and `r2d2.r2d2_agent_fn` (R2D2 and R2D3 with an exploration
bonus). `intrinsic.controllable_embedding` builds NGU's learned embedding
for R2D2's episodic memory. Every setting that changes results is
`gin.REQUIRED`, except R2D2's episodic memory (NGU's reward) and its
embedding, off unless a file binds them, and the paper's k-NN kernel
constants.
"""

from typing import Callable, Optional, Sequence

import gin
import tensorflow as tf

from tfa_explore.agents.intrinsic import embedding as embedding_lib
from tfa_explore.agents.intrinsic import reward as intrinsic
from tfa_explore.networks import rnd_networks

REQUIRED = gin.REQUIRED


@gin.configurable(module='intrinsic',
                  denylist=['observation_spec', 'action_spec'])
def rnd_intrinsic_reward(
    observation_spec,
    coef: float = REQUIRED,
    discount: float = REQUIRED,
    non_episodic: bool = REQUIRED,
    normalize_returns: bool = REQUIRED,
    normalize_observations: bool = REQUIRED,
    observation_clip: float = REQUIRED,
    networks_fn: Callable[..., tuple] = REQUIRED,
    learning_rate: float = REQUIRED,
    adam_epsilon: float = REQUIRED,
    predictor_update_proportion: float = REQUIRED,
    first_visits_only: bool = REQUIRED,
    episodic_memory_size: int = 0,
    max_modulator: float = 5.0,
    observation_fn: Optional[Callable[[tf.Tensor], tf.Tensor]] = None,
    episodic_embedding_fn: Optional[Callable[..., object]] = None,
    action_spec=None,
) -> intrinsic.RndIntrinsicReward:
  """Builds the RND intrinsic reward (creates its networks' variables).

  Args:
    observation_spec: The environment's observation spec (passed by the
      agent factory: `rnd_ppo.rnd_ppo_agent`, `r2d2.r2d2_agent_fn`).
    coef: Weight of the intrinsic stream: of A_I in RND-PPO's combined
      advantage, beta of R2D2's reward r_e + beta * r_i.
    discount: gamma_I, of the intrinsic returns and their running std.
    non_episodic: Episode ends do not cut the intrinsic stream (RND-PPO's
      own value head; R2D2 mixes r_i into one episodic return and needs
      False).
    normalize_returns: Divide intrinsic rewards by the running std of
      intrinsic returns.
    normalize_observations: Whiten the RND inputs by their running mean and
      std (the paper's section 2.4); only the RND networks see it.
    observation_clip: Clip of the whitened RND inputs.
    networks_fn: `spec -> (target, predictor)`, e.g. `@rnd_mlp_networks`.
    learning_rate: Adam learning rate of the predictor (constant: its loss
      is non-stationary by design).
    adam_epsilon: Adam epsilon of the predictor.
    predictor_update_proportion: Share of each minibatch the predictor
      trains on.
    first_visits_only: Pay r_i only on an observation's first visit in its
      episode within the agent's sequence (a rollout, a replayed sequence;
      NovelD's episodic restriction).
    episodic_memory_size: 0, or NGU's reward for R2D2 and R2D3: the actors'
      policies count each observation's visits in its episode (up to this
      many distinct observations) and r_i = 1/sqrt(visits) times the RND
      modulator; needs normalize_returns and first_visits_only False.
    max_modulator: L, the clip of NGU's RND modulator (paper: 5).
    observation_fn: Picks the RND input from the observation (e.g.
      `@last_frame` for frame stacks); None: the observation itself.
    episodic_embedding_fn: None (the episodic memory counts exact
      observations), or `@intrinsic.controllable_embedding` (not called:
      gin passes the function): NGU's learned embedding and its k-NN.
    action_spec: The agent's action spec (passed by R2D2's factory; the
      embedding's classifier needs it).

  Returns:
    A `RndIntrinsicReward`.
  """
  return intrinsic.RndIntrinsicReward(
      observation_spec,
      networks_fn=networks_fn,
      optimizer=tf.keras.optimizers.Adam(learning_rate=learning_rate,
                                         epsilon=adam_epsilon),
      observation_fn=observation_fn,
      coef=coef,
      discount=discount,
      non_episodic=non_episodic,
      normalize_observations=normalize_observations,
      observation_clip=observation_clip,
      normalize_returns=normalize_returns,
      predictor_update_proportion=predictor_update_proportion,
      first_visits_only=first_visits_only,
      episodic_memory_size=episodic_memory_size,
      max_modulator=max_modulator,
      episodic_embedding_fn=episodic_embedding_fn,
      action_spec=action_spec)


@gin.configurable(module='intrinsic',
                  denylist=['input_spec', 'num_actions'])
def controllable_embedding(
    input_spec,
    num_actions,
    fc_layer_params: Sequence[int] = REQUIRED,
    embedding_dim: int = REQUIRED,
    inverse_fc_layer_params: Sequence[int] = REQUIRED,
    learning_rate: float = REQUIRED,
    adam_epsilon: float = REQUIRED,
    num_neighbors: int = REQUIRED,
    kernel_epsilon: float = 1e-4,
    cluster_distance: float = 0.008,
    pseudo_count: float = 1e-3,
    max_similarity: float = 8.0,
) -> embedding_lib.ControllableEmbedding:
  """NGU's controllable state f and its action classifier h (MLPs).

  Bind `intrinsic.rnd_intrinsic_reward.episodic_embedding_fn =
  @intrinsic.controllable_embedding`; the intrinsic reward calls it with
  its input spec and the number of actions.

  Args:
    input_spec: Spec of the intrinsic reward's input (unnormalised).
    num_actions: Actions h chooses from.
    fc_layer_params: f's leaky-ReLU hidden layers.
    embedding_dim: d, f's linear output (paper: 32).
    inverse_fc_layer_params: h's ReLU hidden layers over (f(x_t),
      f(x_{t+1})) (paper: one of 128).
    learning_rate: Adam learning rate of f and h (paper: 5e-4).
    adam_epsilon: Adam epsilon of f and h.
    num_neighbors: k of the kernel, the step's own embedding included
      (paper: 10).
    kernel_epsilon: eps of the kernel (paper: 1e-4).
    cluster_distance: xi (paper: 0.008).
    pseudo_count: c (paper: 1e-3).
    max_similarity: s_m (paper: 8).

  Returns:
    A `ControllableEmbedding`.
  """
  return embedding_lib.ControllableEmbedding(
      input_spec,
      num_actions,
      embedding_net=rnd_networks.RndNetwork(
          input_spec, torso_fc_layer_params=tuple(fc_layer_params),
          output_dim=embedding_dim, name='EmbeddingNetwork'),
      inverse_net=rnd_networks.RndNetwork(
          tf.TensorSpec([2 * embedding_dim], tf.float32),
          head_fc_layer_params=tuple(inverse_fc_layer_params),
          output_dim=num_actions, name='InverseDynamicsNetwork'),
      optimizer=tf.keras.optimizers.Adam(learning_rate=learning_rate,
                                         epsilon=adam_epsilon),
      num_neighbors=num_neighbors,
      kernel_epsilon=kernel_epsilon,
      cluster_distance=cluster_distance,
      pseudo_count=pseudo_count,
      max_similarity=max_similarity)
