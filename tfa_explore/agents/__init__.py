"""tfa_explore agents."""

from tfa_explore.agents.rnd_ppo import RndPPOAgent
from tfa_explore.agents.rnd_ppo import warm_up_observation_normalizer
