"""Deep exploration for the R2D2 family by bootstrapped heads with priors.

`BootstrappedHeads` (an `r2d2.exploration.ExplorationBonus`) with the
`networks.EnsembleQNetwork` it acts and learns on; `ensemble.py` says how.
"""

from tfa_explore.agents.bootstrap.ensemble import BootstrappedHeads
from tfa_explore.agents.bootstrap.ensemble import HeadFollowingPolicy
