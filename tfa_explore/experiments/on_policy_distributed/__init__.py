"""The on-policy loop (PPO, RND-PPO) with its collection on actors.

`on_policy.distributed_train_eval` (gin) runs `on_policy.Settings` as a
Reverb server, `on_policy.Distributed.num_actors` actors and a learner
(`launcher.py`); the role binaries and Ray run the same roles (`ROLES`).

* `settings`: `on_policy.Distributed`, `on_policy.RayResources`, `Setup`;
* `builder`: the agent, the tables, what the learner publishes
  (`SharedState`), the actors' `RolloutWriter`, the learner's
  `RolloutReader`;
* `actor.run_actor`, `learner.Learner` / `run_learner`: the two loops.
"""

from tfa_explore.experiments.on_policy_distributed.launcher import distributed_train_eval
from tfa_explore.experiments.on_policy_distributed.launcher import ROLES
from tfa_explore.experiments.on_policy_distributed.settings import Distributed
from tfa_explore.experiments.on_policy_distributed.settings import Setup
