r"""Diagnostic: deep_sea's observation after the last move shows the column.

bsuite's deep_sea returns the same all-zero observation after either move
from the last row, so a state-novelty bonus cannot tell the last move's
outcomes apart. Imported from a gin binding, this module patches the
package's bsuite adapter to put a one at (0, column reached) instead (row
0 holds only (0, 0) otherwise); rewards and bsuite's journal are
untouched. It changes bsuite's task, so its runs are trials, never
results:

    PYTHONPATH=benchmarks python train/train_eval.py --root_dir=runs/x \
        --gin_file=gin/rnd_ppo/bsuite_deep_sea.gin \
        --gin_bindings="import deep_sea_visible_last" \
        --gin_bindings="BSUITE_ID='bsuite/deep_sea/7'" \
        --gin_bindings="NUM_EPISODES=1000"
"""

from tfa_explore.environments import bsuite

_STEP = bsuite.BsuiteGymEnv.step


def _step(self, action):
  observation, reward, terminated, truncated, info = _STEP(self, action)
  env = self.bsuite_env
  column = getattr(env, '_column', 0)
  if (terminated or truncated) and column > 0 and not observation.any():
    observation = observation.copy()
    observation[column] = 1.0  # flat index of cell (0, column)
  return observation, reward, terminated, truncated, info


bsuite.BsuiteGymEnv.step = _step
