"""R2D2 (Kapturowski et al. 2019): recurrent replay distributed DQN.

* `config.SequenceConfig`: burn-in, trace, replay period; the sequence
  length and stride every other part uses.
* `losses`: the pure maths of the learner (value rescaling, n-step
  double-Q targets, sequence priorities, importance weights, the TD loss).
* `inputs`: what the agent reads: specs, a replayed batch
  (`PrioritizedSequences`), the policy info stored with it.
* `learning`: stored-state unroll with burn-in, step masks, and
  `sequence_td_errors`: the TD errors of a sequence for any n from one
  unroll of the online and target networks (shared by the learner, R2D3's
  loss and the actors' initial priorities).
* `policy`: greedy policy that stores its recurrent state and previous
  action/reward in policy info; epsilon-greedy collect policy; the actors'
  epsilon schedule.
* `exploration`: the seam of an exploration bonus, and its default, none.
* `agent.R2D2Agent` (its loss from public parts a subclass reuses:
  `td_errors`, `sequence_loss_weights`, `td_loss`, `sequence_priorities`,
  `td_loss_info`); `summaries`: its TensorBoard tags.
"""

from tfa_explore.agents.r2d2.agent import R2D2Agent
from tfa_explore.agents.r2d2.agent import R2D2LossInfo
from tfa_explore.agents.r2d2.config import SequenceConfig
from tfa_explore.agents.r2d2.inputs import PrioritizedSequences
from tfa_explore.agents.r2d2.policy import actor_epsilon
