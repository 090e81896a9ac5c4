"""Gymnasium environments for TF-Agents: a generic suite and presets."""

from tfa_explore.environments import suite_gymnasium
from tfa_explore.environments.suite_gymnasium import load
