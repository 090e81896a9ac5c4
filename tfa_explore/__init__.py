"""tfa_explore: hard-exploration agents (RND-PPO, R2D2, R2D3) for TF-Agents."""

__version__ = '0.1.0'
