"""RND-PPO: PPO with Random Network Distillation (Burda et al. 2018)."""

# The component RND-PPO holds, also under this package's name.
from tfa_explore.agents.intrinsic import IntrinsicReward
from tfa_explore.agents.intrinsic import RndIntrinsicReward
from tfa_explore.agents.rnd_ppo.agent import RndPPOAgent
from tfa_explore.agents.rnd_ppo.agent import RndPPOLossInfo
