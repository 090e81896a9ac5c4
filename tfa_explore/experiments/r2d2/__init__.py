"""The R2D2 family (R2D2, R2D3) by role, on one machine or many.

* `settings.Settings`: the run's one gin surface (`r2d2.Settings.*`);
* `replay`: the replay strategy interface (`ReplayStrategy`) and R2D2's
  `AgentReplay` (R2D3's is `experiments.r2d3.DemonstrationReplay`);
* `builder`: the agent (`r2d2_agent_fn`, gin `agent_fn`), the server's
  tables, the weights the learner shares, the actors' writers and policies;
* `actor.run_actor`, `learner.Learner` / `run_learner`: the two loops;
* `launcher`: `train_eval` (one machine: server, actor threads or
  processes, learner) and `run_job` (the three binaries).
"""

from tfa_explore.experiments.r2d2.actor import run_actor
from tfa_explore.experiments.r2d2.builder import Builder
from tfa_explore.experiments.r2d2.builder import PROGRESS_TABLE
from tfa_explore.experiments.r2d2.builder import r2d2_agent_fn
from tfa_explore.experiments.r2d2.builder import VARIABLES_TABLE
from tfa_explore.experiments.r2d2.launcher import make_replay_server
from tfa_explore.experiments.r2d2.launcher import run_job
from tfa_explore.experiments.r2d2.launcher import serve_until_stopped
from tfa_explore.experiments.r2d2.launcher import train_eval
from tfa_explore.experiments.r2d2.learner import Learner
from tfa_explore.experiments.r2d2.learner import run_learner
from tfa_explore.experiments.r2d2.replay import AGENT_TABLE
from tfa_explore.experiments.r2d2.replay import AgentReplay
from tfa_explore.experiments.r2d2.replay import ReplayStrategy
from tfa_explore.experiments.r2d2.settings import Settings
