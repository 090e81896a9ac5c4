"""The intrinsic reward component built from gin, for every agent.

`intrinsic.rnd_intrinsic_reward` builds the RND component
(`tfa_explore.agents.intrinsic.RndIntrinsicReward`); an agent factory
binds it as `intrinsic_reward = @intrinsic.rnd_intrinsic_reward` and calls
it with the environment's observation spec: `rnd_ppo.rnd_ppo_agent`
(RND-PPO) and `r2d2.r2d2_agent_fn` (R2D2 and R2D3 with an exploration
bonus). Every setting that changes results is `gin.REQUIRED`, except
R2D2's episodic memory (NGU's reward), off unless a file binds it.
"""

from typing import Callable, Optional

import gin
import tensorflow as tf

from tfa_explore.agents.intrinsic import reward as intrinsic

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
    episodic_memory_size: int = 0,
    max_modulator: float = 5.0,
    observation_fn: Optional[Callable[[tf.Tensor], tf.Tensor]] = None,
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
      max_modulator=max_modulator)
