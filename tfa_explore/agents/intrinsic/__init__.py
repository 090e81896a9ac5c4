"""Intrinsic rewards as components an agent holds (RND-PPO, R2D2, R2D3).

`IntrinsicReward` is the interface, `RndIntrinsicReward` Random Network
Distillation (Burda et al. 2018) and `NoIntrinsicReward` the null version;
`maths`, `normalizers` and `summaries` are their one implementation.
"""

from tfa_explore.agents.intrinsic.reward import IntrinsicReward
from tfa_explore.agents.intrinsic.reward import IntrinsicRewards
from tfa_explore.agents.intrinsic.reward import NoIntrinsicReward
from tfa_explore.agents.intrinsic.reward import RndIntrinsicReward
