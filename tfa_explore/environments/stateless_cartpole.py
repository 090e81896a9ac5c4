"""CartPole without velocities: a partially observable task for recurrent agents.

The observation keeps the cart position and the pole angle and drops both
velocities, so a memoryless policy cannot balance the pole well; an agent
must infer velocities from its history (as in the R2D2 literature's
"stateless" CartPole).
"""

import gymnasium as gym
import numpy as np
from gymnasium.envs.classic_control import cartpole

ENV_ID = 'StatelessCartPole-v1'
_OBSERVED = np.array([0, 2])  # cart position, pole angle


class StatelessCartPoleEnv(cartpole.CartPoleEnv):
  """CartPole-v1 dynamics; observation (cart position, pole angle)."""

  def __init__(self, render_mode=None):
    super().__init__(render_mode=render_mode)
    full = self.observation_space
    self.observation_space = gym.spaces.Box(
        full.low[_OBSERVED], full.high[_OBSERVED], dtype=np.float32)

  def reset(self, *, seed=None, options=None):
    observation, info = super().reset(seed=seed, options=options)
    return observation[_OBSERVED], info

  def step(self, action):
    observation, reward, terminated, truncated, info = super().step(action)
    return observation[_OBSERVED], reward, terminated, truncated, info


def register() -> None:
  """Registers StatelessCartPole-v1 (500-step limit, like CartPole-v1)."""
  if ENV_ID not in gym.registry:
    gym.register(
        id=ENV_ID,
        entry_point=StatelessCartPoleEnv,
        max_episode_steps=500,
        reward_threshold=475.0)
