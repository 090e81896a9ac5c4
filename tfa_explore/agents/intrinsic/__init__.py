"""Intrinsic rewards as components an agent holds (RND-PPO, R2D2, R2D3).

`IntrinsicReward` is the interface and `RndIntrinsicReward` Random Network
Distillation (Burda et al. 2018); `maths`, `normalizers` and `summaries` are
their one implementation, `ngu` and `episodic` NGU's reward.
"""

from tfa_explore.agents.intrinsic.reward import IntrinsicLoss
from tfa_explore.agents.intrinsic.reward import IntrinsicReward
from tfa_explore.agents.intrinsic.reward import IntrinsicRewards
from tfa_explore.agents.intrinsic.reward import IntrinsicStream
from tfa_explore.agents.intrinsic.reward import RndIntrinsicReward
from tfa_explore.agents.intrinsic.reward import Sequences
