"""R2D3 (Paine et al. 2019): R2D2 learning from demonstrations.

* `agent.R2D3Agent`: `R2D2Agent` whose loss adds the 1-step TD, the
  large-margin (demonstration steps only) and L2 terms of DQfD; trains on
  `agent.MixedSequences` (sequences with an `is_demo` flag);
  `agent.pretrain`: demonstration-only pre-training, no environment.
* `losses`: the pure maths (large-margin loss, L2).
* `summaries`: its TensorBoard tags.

Demonstration files, their sequences and the two-table replay live in
`tfa_explore.replay.demonstrations` and `tfa_explore.replay.mixed_dataset`.
"""

from tfa_explore.agents.r2d3.agent import MixedSequences
from tfa_explore.agents.r2d3.agent import pretrain
from tfa_explore.agents.r2d3.agent import R2D3Agent
from tfa_explore.agents.r2d3.agent import R2D3LossInfo
