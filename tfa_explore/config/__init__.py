"""What the binaries share, below every loop: gin files, checks, exits.

* `gin_files`: the `--gin_file`/`--gin_bindings` flags, parsing with
  readable errors, include search paths (a user's tree, the checkout's and
  the installed `gin/`), hints for renamed configurables;
* `bound_values`: every bound value against its parameter's type, right
  after parsing (the one reader of gin's private registry);
* `experiment`: the contract of an experiment (`Experiment`: its run and
  its checks before the run), `run_experiment` (gin
  `run_experiment.experiment`) and `run`, what train/train_eval.py runs;
* `exits`: the one exit-code policy of every binary (2 for the user's
  error, 128 + n for a stop by signal n).

It imports no agent, loop, environment or replay module
(tests/test_import_layers.py): the loops declare themselves to it.
"""

from tfa_explore.config import bound_values
from tfa_explore.config import exits
from tfa_explore.config import experiment
from tfa_explore.config import gin_files
from tfa_explore.config.bound_values import check_bound_values
from tfa_explore.config.experiment import check_before_start
from tfa_explore.config.experiment import declare_experiment
from tfa_explore.config.experiment import Experiment
from tfa_explore.config.experiment import experiment_setting
from tfa_explore.config.experiment import run
from tfa_explore.config.exits import exit_codes
from tfa_explore.config.exits import parse_flags
from tfa_explore.config.gin_files import define_gin_flags
from tfa_explore.config.gin_files import parse_gin
from tfa_explore.config.gin_files import RENAMED
from tfa_explore.config.gin_files import resolve_gin_file
from tfa_explore.config.gin_files import shipped_gin_roots
