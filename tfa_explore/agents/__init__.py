"""tfa_explore agents: TF-Agents `TFAgent`s for hard exploration.

* `RndPPOAgent`: PPO-Clip with Random Network Distillation (Burda et al.
  2018); `RndIntrinsicReward` is its intrinsic reward component, whose
  input statistics `experiments.warm_up` sets before training (it steps
  an environment, so it stands with the loops). Any `IntrinsicReward`
  (six members) takes RND's place.
* `R2D2Agent`: recurrent replay distributed DQN (Kapturowski et al. 2019),
  trained on `PrioritizedSequences` with stored recurrent state; it can
  hold the same intrinsic rewards as an exploration bonus.
* `R2D3Agent`: R2D2 learning from demonstrations (Paine et al. 2019).
* `EpochLoopPPOClipAgent`: TF-Agents' `PPOClipAgent` with its epochs in a
  graph loop (the same updates, traced once in seconds).

Each has a page under `docs/`.
"""

from tfa_explore.agents.intrinsic import IntrinsicReward
from tfa_explore.agents.intrinsic import RndIntrinsicReward
from tfa_explore.agents.ppo_clip import EpochLoopPPOClipAgent
from tfa_explore.agents.r2d2 import PrioritizedSequences
from tfa_explore.agents.r2d2 import R2D2Agent
from tfa_explore.agents.r2d2 import SequenceConfig
from tfa_explore.agents.r2d3 import MixedSequences
from tfa_explore.agents.r2d3 import R2D3Agent
from tfa_explore.agents.rnd_ppo import RndPPOAgent
