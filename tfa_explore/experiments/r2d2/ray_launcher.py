"""R2D2-family runs on a Ray cluster (`pip install tfa_explore[ray]`).

The family's roles (`launcher.ROLES`) on the shared Ray launcher
(`experiments/distributed/ray_launch.py`, which says how roles are
placed, restarted and counted); resources per role are
`r2d2.RayResources`.
"""

from typing import Dict, Optional

from tfa_explore.experiments.distributed import ray_launch
from tfa_explore.experiments.r2d2 import launcher
from tfa_explore.experiments.r2d2 import settings as r2d2_settings

RayResources = r2d2_settings.RayResources


def train_eval(root_dir: str, ray_address: Optional[str] = None,
               settings: Optional[r2d2_settings.Settings] = None,
               resources: Optional[RayResources] = None,
               verbose: bool = False) -> Dict[str, float]:
  """Runs the gin-configured R2D2/R2D3 experiment on a Ray cluster
  (`ray_launch.train_eval` with the R2D2 roles)."""
  return ray_launch.train_eval(root_dir, ray_address, settings, resources,
                               verbose, roles=launcher.ROLES)
