"""Intrinsic rewards and exploration bonuses built from gin, for every agent.

`intrinsic.rnd_intrinsic_reward` builds RND's reward
(`tfa_explore.agents.intrinsic.RndIntrinsicReward`), called with the
environment's observation spec: RND-PPO binds it as
`ppo.ppo_clip_agent.intrinsic_reward`, R2D2's bonuses as their reward.
The R2D2 family's exploration bonuses (`r2d2.r2d2_agent_fn.exploration`,
called with the observation and action specs):
`intrinsic.intrinsic_q_bonus` (an intrinsic reward learnt by Q_I) and
`intrinsic.ngu_bonus` (NGU's reward: RND's modulator times an episodic
novelty of exact counts or of `intrinsic.controllable_embedding`). Every
setting that changes results is `gin.REQUIRED`, except the paper's k-NN
kernel constants.
"""

from typing import Callable, Optional, Sequence

import gin
import tensorflow as tf

from tfa_explore.agents.intrinsic import embedding as embedding_lib
from tfa_explore.agents.intrinsic import episodic
from tfa_explore.agents.intrinsic import ngu
from tfa_explore.agents.intrinsic import reward as intrinsic
from tfa_explore.agents.r2d2_intrinsic import q_bonus
from tfa_explore.networks import rnd_networks

REQUIRED = gin.REQUIRED


@gin.configurable(module='intrinsic', denylist=['observation_spec'])
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
    observation_fn: Optional[Callable[[tf.Tensor], tf.Tensor]] = None,
) -> intrinsic.RndIntrinsicReward:
  """Builds the RND intrinsic reward (creates its networks' variables).

  Args:
    observation_spec: The environment's observation spec (passed by
      `ppo.ppo_clip_agent` and R2D2's bonuses).
    coef: Weight of the intrinsic stream: of A_I in RND-PPO's combined
      advantage, beta of R2D2's h^-1(Q_E) + beta h^-1(Q_I).
    discount: gamma_I, of the intrinsic returns and their running std.
    non_episodic: Episode ends do not cut the intrinsic stream (RND-PPO's
      own value head; R2D2's Q_I shares Q_E's episode ends and needs
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
    observation_fn: Picks the RND input from the observation (e.g.
      `@last_frame` for frame stacks); None: the observation itself.

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
      first_visits_only=first_visits_only)


@gin.configurable(module='intrinsic',
                  denylist=['observation_spec', 'action_spec'])
def intrinsic_q_bonus(observation_spec, action_spec,
                      reward_fn: Callable[..., object] = REQUIRED,
                      arms: bool = REQUIRED) -> q_bonus.IntrinsicQBonus:
  """R2D2's bonus: an intrinsic reward learnt by the Q network's Q_I head.

  Args:
    observation_spec: The environment's observation spec (passed by
      `r2d2.r2d2_agent_fn`).
    action_spec: The agent's action spec (unused by RND's reward).
    reward_fn: Builds the reward from `observation_spec=`, e.g.
      `@intrinsic.rnd_intrinsic_reward`; its `coef` is beta, its
      `discount` gamma_I of Q_I's targets.
    arms: Each actor slot acts with its own beta from 0 to coef (NGU's
      arms); False: every slot with beta = coef.
  """
  del action_spec
  return q_bonus.IntrinsicQBonus(reward_fn(observation_spec=observation_spec),
                                 arms=arms)


@gin.configurable(module='intrinsic',
                  denylist=['observation_spec', 'action_spec'])
def ngu_bonus(observation_spec, action_spec,
              rnd_fn: Callable[..., object] = REQUIRED,
              memory_size: int = REQUIRED,
              max_modulator: float = REQUIRED,
              arms: bool = REQUIRED,
              embedding_fn: Optional[Callable[..., object]] = None
              ) -> q_bonus.NguQBonus:
  """R2D2's bonus with NGU's reward (Badia et al. 2020, section 2).

  Args:
    observation_spec: The environment's observation spec (passed by
      `r2d2.r2d2_agent_fn`).
    action_spec: The agent's action spec (the embedding's classifier).
    rnd_fn: Builds the RND part from `observation_spec=`, e.g.
      `@intrinsic.rnd_intrinsic_reward` with `normalize_returns` and
      `first_visits_only` False; its `coef` is beta, its `discount` gamma_I.
    memory_size: Distinct observations the actors' policies remember per
      episode.
    max_modulator: L, the clip of the RND modulator (paper: 5).
    arms: As `intrinsic_q_bonus`.
    embedding_fn: None (the memory counts exact observations), or
      `@intrinsic.controllable_embedding` (not called: gin passes the
      function): NGU's learnt embedding and its k-NN.
  """
  rnd = rnd_fn(observation_spec=observation_spec)
  num_actions = int(action_spec.maximum) - int(action_spec.minimum) + 1
  novelty = (embedding_fn(rnd.input_spec, num_actions) if embedding_fn
             else episodic.EpisodicCounts())
  return q_bonus.NguQBonus(
      ngu.NguReward(rnd, novelty, memory_size, max_modulator,
                    action_minimum=int(action_spec.minimum)),
      arms=arms)


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

  Bind `intrinsic.ngu_bonus.embedding_fn = @intrinsic.controllable_embedding`;
  the bonus calls it with RND's input spec and the number of actions.

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
