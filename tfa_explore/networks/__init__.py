"""Networks of tfa_explore agents."""

from tfa_explore.networks.dual_value_network import DualValueNetwork
from tfa_explore.networks.ensemble_q_network import EnsembleQNetwork
from tfa_explore.networks.epsilon_soft import EpsilonSoftProjectionNetwork
from tfa_explore.networks.rnd_networks import last_frame
from tfa_explore.networks.rnd_networks import rnd_conv_networks
from tfa_explore.networks.rnd_networks import rnd_mlp_networks
from tfa_explore.networks.rnd_networks import RndNetwork
from tfa_explore.networks.recurrent_dueling_q_network import RecurrentDuelingQNetwork
from tfa_explore.networks.shared_torso import ActorHeadNetwork
from tfa_explore.networks.shared_torso import make_torso
from tfa_explore.networks.shared_torso import ValueHeadNetwork
