"""The contract of an experiment, and `run`: what train/train_eval.py does.

The gin file chooses the experiment by binding
`run_experiment.experiment = @on_policy.train_eval` (no string dispatch).
Each family declares its experiment (`declare_experiment`): the
`train_eval(root_dir)` the gin file names and its checks before the run
(a distributed family: also its roles, which the role binaries and Ray
run).
Its settings (`env_loader`, `agent_fn`, `num_env_steps`, `seed`, ...) are
the fields of its family's settings dataclass (`on_policy.Settings.*`,
`r2d2.Settings.*`, both `settings.RunSettings`); tools (play_policy, the
gin-file tests) read them with `experiment_setting`.
"""

from typing import Any, Callable, Dict, NamedTuple, Optional, Sequence

from absl import logging
import gin

from tfa_explore import errors
from tfa_explore.config import gin_files as gin_files_lib
from tfa_explore.process import run_lock


class Experiment(NamedTuple):
  """What an experiment gives the runner (`run`).

  Attributes:
    train_eval: the gin configurable `run_experiment.experiment` names
      (`@on_policy.train_eval`); called as `train_eval(root_dir=)` once
      root_dir is locked, it returns the final evaluation.
    check_before_start: no arguments; reads the parsed gin config and
      raises `ConfigError` at the first bad value (its settings, one env and
      the agent built on its specs). Called before root_dir is locked and
      the run's first line logged, so a refused run writes nothing.
    roles: for an experiment that also runs as separate processes (a
      Reverb server, actors, a learner: the role binaries and Ray), its
      `experiments.distributed.roles.Roles`; None for one process only.
  """
  train_eval: Callable[..., object]
  check_before_start: Callable[[], None]
  roles: Optional[Any] = None


# Every declared experiment by its gin configurable (the wrapper gin
# passes for `@<module>.train_eval`).
_EXPERIMENTS: Dict[Callable[..., object], Experiment] = {}


def declare_experiment(
    train_eval: Callable[..., object],
    check_before_start: Callable[[], None],
    roles: Optional[Any] = None) -> Experiment:
  """Declares `train_eval` (a gin configurable) an experiment.

  A family's module calls it once, beside the two functions (and its
  `roles`, if it runs as several processes); only a declared experiment
  can be bound to `run_experiment.experiment`.
  """
  experiment = Experiment(train_eval, check_before_start, roles)
  _EXPERIMENTS[train_eval] = experiment
  return experiment


@gin.configurable(module='runner')
def run_experiment(root_dir: str,
                   experiment: Callable[..., object] = gin.REQUIRED):
  """Runs the gin-bound experiment function in `root_dir`."""
  return experiment(root_dir=root_dir)


def bound_experiment() -> Optional[Experiment]:
  """The experiment `run_experiment.experiment` names (None if unbound:
  `run_experiment` names the missing binding when it is called).

  Raises:
    ConfigError: the binding names a function no family declared.
  """
  try:
    reference = gin.query_parameter('run_experiment.experiment')
  except ValueError:
    return None
  configurable = getattr(reference, 'configurable', None)
  experiment = _EXPERIMENTS.get(getattr(configurable, 'wrapper', None))
  if experiment is None:
    declared = ', '.join(sorted(
        f'{known.train_eval.__module__}.{known.train_eval.__name__}'
        for known in _EXPERIMENTS.values()))
    bound = getattr(reference, 'selector', reference)
    raise errors.ConfigError(
        f'run_experiment.experiment = @{bound} is no declared experiment '
        f'(declared: {declared}).')
  return experiment


def check_before_start() -> None:
  """The bound experiment's own checks of every value
  (`Experiment.check_before_start`)."""
  experiment = bound_experiment()
  if experiment is not None:
    experiment.check_before_start()


def experiment_setting(name: str):
  """The value bound to the experiment's setting `name`, e.g. 'env_loader'.

  The experiment `<module>.train_eval` is configured by `<module>.Settings`
  (`on_policy.Settings.env_loader`, `r2d2.Settings.env_loader`).
  """
  selector = gin.query_parameter('run_experiment.experiment').selector
  module = selector.rpartition('.')[0]
  return gin.query_parameter(f'{module}.Settings.{name}')


def run(root_dir: str, gin_files: Sequence[str],
        gin_bindings: Sequence[str]) -> Optional[object]:
  """Parses gin and runs the experiment; raises ConfigError on bad config.

  Every value is checked first (`check_before_start`), so a run refused
  as the user's error prints no other line and leaves root_dir as it
  found it. root_dir is then locked for the whole run (`run_lock`) before
  anything is built, so a second run on it (or an unwritable root_dir) is
  refused at once, before an R2D2 run starts its replay server and
  actors.
  """
  gin_files_lib.parse_gin(gin_files, gin_bindings)
  as_config_error = gin_files_lib.missing_binding_as_config_error
  with as_config_error(gin_files, gin_bindings):
    check_before_start()
  with run_lock.RunLock(root_dir):
    # The first line of a run: start-up (building, tracing) takes a while.
    logging.info('Training in %s (gin: %s); summaries: tensorboard --logdir '
                 '%s', root_dir, ' '.join(gin_files), root_dir)
    with as_config_error(gin_files, gin_bindings):
      return run_experiment(root_dir=root_dir)
