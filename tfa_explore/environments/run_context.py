"""What an env loader may need to know about the run that builds it.

* The run directory: set by every binary that runs a role
  (`set_run_dir`), and exported as an environment variable so that envs
  built in subprocesses (parallel envs, spawned R2D2 actors) see it too.
  Loaders that keep their own logs put them there (bsuite's CSV logs).
* Whether an env is an evaluation env: `Evaluator` builds its envs inside
  `evaluation()`, so a loader can keep greedy evaluation episodes out of a
  training log (bsuite counts the agent's training episodes only).
* What to do when a run ends: a suite registers a hook
  (`register_end_of_run`, e.g. bsuite's CSV writer when its loader module
  is imported) and every loop calls `end_of_run` once its training envs
  are closed, so no loop names a suite.
"""

import contextlib
import contextvars
import os
from typing import Callable, Iterator, List, Optional

# hook(root_dir, num_episodes): num_episodes is the run's own episode
# budget, or None.
EndOfRunHook = Callable[[str, Optional[int]], None]

RUN_DIR_VARIABLE = 'TFA_EXPLORE_RUN_DIR'

_EVALUATION = contextvars.ContextVar('tfa_explore_evaluation', default=False)
_END_OF_RUN_HOOKS: List[EndOfRunHook] = []


def set_run_dir(root_dir: Optional[str]) -> None:
  """Makes `root_dir` this process's (and its children's) run directory."""
  if root_dir:
    os.environ[RUN_DIR_VARIABLE] = os.path.abspath(root_dir)


def run_dir() -> Optional[str]:
  """The run directory set by `set_run_dir` here or in a parent, or None."""
  return os.environ.get(RUN_DIR_VARIABLE) or None


@contextlib.contextmanager
def evaluation() -> Iterator[None]:
  """Envs built inside are evaluation envs (`in_evaluation()` is True).

  A context variable: actor threads started elsewhere are not affected.
  """
  token = _EVALUATION.set(True)
  try:
    yield
  finally:
    _EVALUATION.reset(token)


def in_evaluation() -> bool:
  return _EVALUATION.get()


def register_end_of_run(hook: EndOfRunHook) -> None:
  """Calls `hook(root_dir, num_episodes)` at the end of every run in this
  process (once per hook, in the order registered)."""
  if hook not in _END_OF_RUN_HOOKS:
    _END_OF_RUN_HOOKS.append(hook)


def end_of_run(root_dir: str, num_episodes: Optional[int]) -> None:
  """Runs the registered end-of-run hooks for the run at `root_dir`.

  Called by the loops after their training envs are closed (R2D2's learner
  after its actors stopped), at a stop as well as at the end.
  """
  for hook in _END_OF_RUN_HOOKS:
    hook(root_dir, num_episodes)
