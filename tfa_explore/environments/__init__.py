"""Gymnasium environments for TF-Agents: a generic suite and presets.

* `load` (= `suite_gymnasium.load`): any registered gymnasium id as a
  TF-Agents `PyEnvironment`; `suite_gymnasium.GymnasiumWrapper` wraps an
  env object of your own.
* `atari.load`, `minigrid.load`: the presets (Machado et al. 2018 Atari;
  MiniGrid as one uint8 array).
* `bsuite.load`: a bsuite experiment ('bsuite/deep_sea/3') with bsuite's
  own CSV log under the run directory (the `[bsuite]` extra).
* `make_batched_env`: copies of an env stepped as one batch (in-process or
  one subprocess each), env i seeded `seed + i`.
* The presets' observation encodings, for acting with an exported policy
  on a plain gymnasium env (docs/exported_policies.md):
  `encode_minigrid_observation` (= `minigrid.encode_observation`, one
  observation -> the uint8 array) and `preprocess_atari_env`
  (= `atari.preprocess_env`, wrappers of an ALE env made with
  `frameskip=1`). The loaders use these same functions.

Importing this package registers the gin configurables
`suite_gymnasium.load`, `atari.load`, `minigrid.load` and `bsuite.load`,
so gin files can refer to them; MiniGrid and bsuite are imported on first
use, and ALE only by TF-Agents' own `tf_agents.environments` package, which
imports `ale_py` if it is installed (tfa_explore registers ALE ids with
gymnasium on first use).
"""

from tfa_explore.environments import atari
from tfa_explore.environments import bsuite
from tfa_explore.environments import minigrid
from tfa_explore.environments import suite_gymnasium
from tfa_explore.environments.atari import preprocess_env as preprocess_atari_env
from tfa_explore.environments.batched import make_batched_env
from tfa_explore.environments.minigrid import encode_observation as encode_minigrid_observation
from tfa_explore.environments.suite_gymnasium import load
