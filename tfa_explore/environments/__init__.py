"""Gymnasium environments for TF-Agents: a generic suite and presets.

Importing this package registers the gin configurables
`suite_gymnasium.load`, `atari.load` and `minigrid.load`, so gin files can
refer to them; ALE and MiniGrid themselves are imported on first use.
"""

from tfa_explore.environments import atari
from tfa_explore.environments import minigrid
from tfa_explore.environments import suite_gymnasium
from tfa_explore.environments.suite_gymnasium import load
