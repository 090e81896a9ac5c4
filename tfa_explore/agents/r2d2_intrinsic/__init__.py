"""Intrinsic rewards as exploration bonuses of the R2D2 family (R2D2, R2D3).

`IntrinsicQBonus` (an `r2d2.exploration.ExplorationBonus`) learns an
intrinsic reward from `agents.intrinsic` (RND's) with a second Q head,
Q_I, and acts on both heads through `ExploringPolicy`; `NguQBonus` does
the same with NGU's reward, its episodic memory kept by
`EpisodicExploringPolicy`. `q_bonus.py` says how. The rewards themselves
stay in `agents.intrinsic`, which both agent families stand on.
"""

from tfa_explore.agents.r2d2_intrinsic.q_bonus import EpisodicExploringPolicy
from tfa_explore.agents.r2d2_intrinsic.q_bonus import ExploringPolicy
from tfa_explore.agents.r2d2_intrinsic.q_bonus import IntrinsicQBonus
from tfa_explore.agents.r2d2_intrinsic.q_bonus import NguQBonus
