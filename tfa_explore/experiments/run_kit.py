"""What every training loop shares: the run directory and what goes in it.

Both loops (`on_policy.train_eval` and the R2D2 family's learner) build
their run from these pieces, so a run directory, a resume, an evaluation
and a progress line look the same whatever the agent:

* `RunDirectory`: the layout of root_dir, its lock (one run at a time,
  `run_lock`), its summary writers and the operative gin config;
* `checkpointing.Checkpointer` (its own module): `tf.train` checkpoints
  of everything the loop names, the resume from the newest one that
  loads, and the policy export that goes with every checkpoint;
* `ProgressLog`: the progress line (rate and ETA of the last interval,
  never of start-up; episodes against the budget when a run has one);
* `env_specs`: what a loop reads of its env before building on it (specs,
  id, episode limit), from one env built and closed or the caller's;
* `episode_budget`: a run's episode budget, its own or its env's (bsuite's);
* `set_global_seeds`: a loop's process seeded from the run's seed;
* `crossed`, `evaluate_and_checkpoint_when_due` and `finish`: the
  interval test of every loop, the evaluation and checkpoint at the end
  of its iterations, and the final evaluation (`evaluation.Evaluator`)
  and checkpoint of a run (stored in the checkpoint, so a rerun of a
  finished run returns it rather than evaluating again).

root_dir layout:

    run.lock               held by the live run (`run_lock`); never delete it
    operative_config.gin   gin's operative config (also a TensorBoard text)
    train/  eval/          TensorBoard summaries
    checkpoints/           tf.train checkpoints (`checkpointing`)
    policies/greedy_policy, policies/collect_policy   PolicySaver exports

The operative config is written to a temporary name and renamed
(`utils.files`), as the exports are: a killed run leaves the last complete
one readable.
"""

import os
import time
from typing import Any, Callable, Dict, Mapping, NamedTuple, Optional, Tuple

from absl import logging
import gin
import tensorflow as tf
from tf_agents.specs import tensor_spec

from tfa_explore.environments import run_context
from tfa_explore.experiments import checkpointing
from tfa_explore.experiments import evaluation
from tfa_explore.experiments import settings as settings_lib
from tfa_explore.process import run_lock
from tfa_explore.utils import files
from tfa_explore.utils import summaries

# Subdirectories and files of root_dir (checkpoints and exports:
# `checkpointing`).
TRAIN_DIR = 'train'
EVAL_DIR = 'eval'
OPERATIVE_CONFIG = 'operative_config.gin'

# Summary writers flush at least this often (and at every progress line).
_FLUSH_MILLIS = 10_000


def set_tf_threads(num_threads: Optional[int]) -> None:
  """Sizes TensorFlow's intra- and inter-op thread pools (None: TF's own).

  On a 2-core machine the on-policy loop of a small network runs one small
  graph per env step; TF's default pools then spend more CPU waking and
  spinning threads than running ops (docs/performance.md). The pools can
  only be sized before TensorFlow runs its first op; later (a second run
  in the same process) this logs a warning and changes nothing.
  """
  if num_threads is None:
    return
  if num_threads < 1:
    raise ValueError(f'tf_threads must be >= 1 or None, got {num_threads}.')
  threading = tf.config.threading
  if (threading.get_intra_op_parallelism_threads() == num_threads and
      threading.get_inter_op_parallelism_threads() == num_threads):
    return
  try:
    threading.set_intra_op_parallelism_threads(num_threads)
    threading.set_inter_op_parallelism_threads(num_threads)
  except RuntimeError:
    logging.warning(
        'TensorFlow is already running, so tf_threads=%d does not apply in '
        'this process (it does in a fresh one).', num_threads)


def set_global_seeds(seed: int) -> None:
  """Seeds Python's, numpy's, TensorFlow's and Keras' global generators.

  A loop's process draws from all of them: TF for its ops, numpy for what
  runs outside TF (the warm-up's random actions), and Keras' unseeded
  weight initialisers for seeds drawn from Python's `random` (or Keras'
  own generator), so without those a run's initial weights depend on what
  the process ran before. numpy and Python's `random` take seeds below
  2**32 here, so the seed is reduced modulo 2**32.
  """
  tf.keras.utils.set_random_seed(seed % 2**32)


def crossed(previous: int, current: int, interval: int) -> bool:
  """Whether a multiple of `interval` lies in (previous, current]."""
  return interval > 0 and current // interval > previous // interval


def evaluate_and_checkpoint_when_due(
    previous_steps: int, current_steps: int,
    settings: settings_lib.RunSettings, budget_spent: bool,
    evaluate: Callable[[], Any], checkpoint: Callable[[], Any]) -> None:
  """The end of every loop's iteration: `evaluate()` when an
  `eval_interval` was crossed, then `checkpoint()` when a
  `checkpoint_interval` was, both between the env step counts before and
  after the iteration.

  No checkpoint once `budget_spent`: at the budget's end `finish` saves,
  once, with the final evaluation.
  """
  if crossed(previous_steps, current_steps, settings.eval_interval):
    evaluate()
  if (crossed(previous_steps, current_steps, settings.checkpoint_interval)
      and not budget_spent):
    checkpoint()


def format_duration(seconds: float) -> str:
  """H:MM:SS."""
  seconds = int(round(seconds))
  hours, rest = divmod(seconds, 3600)
  minutes, secs = divmod(rest, 60)
  return f'{hours:d}:{minutes:02d}:{secs:02d}'


class RunDirectory:
  """root_dir: its lock, paths, summary writers and operative config."""

  def __init__(self, root_dir: str):
    """Takes root_dir for this run (creating it) and opens its writers.

    Raises:
      errors.RunDirectoryError: another run holds root_dir, or it cannot be
        written (`run_lock.RunLock.acquire`).
    """
    self.root_dir = os.path.abspath(os.path.expanduser(root_dir))
    run_context.set_run_dir(self.root_dir)
    # First, before anything writes there.
    self._lock = run_lock.RunLock(self.root_dir).acquire()
    self.train_writer = tf.summary.create_file_writer(
        self.path(TRAIN_DIR), flush_millis=_FLUSH_MILLIS)
    self.eval_writer = tf.summary.create_file_writer(
        self.path(EVAL_DIR), flush_millis=_FLUSH_MILLIS)

  def path(self, *parts: str) -> str:
    return os.path.join(self.root_dir, *parts)

  def write_operative_config(self, step) -> None:
    """Writes gin's operative config to the file and to TensorBoard.

    Gin records only configurables that were called, so call this once the
    environments and the agent exist.
    """
    config_str = gin.operative_config_str()
    files.atomic_write_text(self.path(OPERATIVE_CONFIG), config_str)
    summaries.operative_config(self.train_writer, config_str, step=step)

  def flush(self) -> None:
    self.train_writer.flush()
    self.eval_writer.flush()

  def release(self) -> None:
    """Flushes, and lets another run have root_dir (`finish` calls it).

    The writers stay open: the R2D2 learner writes its last summaries
    after `finish`.
    """
    self.flush()
    self._lock.release()


class ProgressLog:
  """The progress line, every `interval` env steps.

    env steps 40,960/100,000 (41%) | 1,210 env steps/s | <fields> | ETA 0:00:48

  or, for a run with an episode budget (`num_episodes`; bsuite's),

    episodes 120/1,000 (12%) | env steps 60,000 | 1,210 env steps/s |
    2.4 episodes/s | <fields> | ETA 0:06:07

  where the env-step budget is only a cap: the run ends at whichever of
  the two comes first, and so does the ETA.

  Rates are those of the last interval, from the previous line to this
  one, and the ETA is what remains at those rates. Start-up is not a rate:
  the clock starts when the loop's first iteration ends
  (`iteration_done`), because that iteration builds and traces the loop's
  functions (tens of seconds; after a resume too). A line with no env step
  taken since the clock started (the first iteration's own) shows no rate
  and no ETA.
  """

  def __init__(self, num_env_steps: int, interval: int,
               clock: Callable[[], float] = time.monotonic,
               num_episodes: Optional[int] = None):
    """Creates the log; the clock starts at the first `iteration_done`.

    Args:
      num_env_steps: the run's env-step budget (100% and the ETA without
        an episode budget; a cap with one).
      interval: a line every `interval` env steps (`due`).
      clock: seconds, monotonic (tests pass a fake one).
      num_episodes: the run's episode budget, if it has one: the line then
        counts episodes against it.
    """
    self._num_env_steps = num_env_steps
    self._num_episodes = num_episodes
    self._interval = interval
    self._clock = clock
    # (time, env steps, episodes, {counter: value}) at the previous line,
    # or at the end of the first iteration; None before it.
    self._mark = None

  def iteration_done(self, env_steps: int,
                     counters: Optional[Mapping[str, int]] = None,
                     episodes: int = 0) -> None:
    """Called after every iteration; the first call starts the clock.

    The first call also logs that the loop runs (a run's first progress
    line may be minutes away).

    Args:
      env_steps: env steps so far.
      counters: other counts shown as rates, as in `log`.
      episodes: episodes ended so far (all envs).
    """
    if self._mark is None:
      self._mark = (self._clock(), env_steps, episodes, dict(counters or {}))
      logging.info('First iteration done at env step %s; a progress line '
                   'every %s env steps.', f'{env_steps:,}',
                   f'{self._interval:,}')

  def due(self, previous_steps: int, current_steps: int,
          episodes: int = 0) -> bool:
    return (crossed(previous_steps, current_steps, self._interval) or
            current_steps >= self._num_env_steps or
            (self._num_episodes is not None and
             episodes >= self._num_episodes))

  def log(self, env_steps: int, fields: Mapping[str, str],
          counters: Optional[Mapping[str, int]] = None,
          episodes: int = 0) -> str:
    """Logs the line and returns it.

    Args:
      env_steps: env steps so far.
      fields: {label: formatted value}, shown after the rates.
      counters: {name: count so far}, e.g. {'learner steps': 430}, shown
        as '<rate> <name>/s' over the same interval as env steps/s.
      episodes: episodes ended so far (all envs); read only with an
        episode budget.
    """
    now = self._clock()
    counters = dict(counters or {})
    steps_total, episodes_total = self._num_env_steps, self._num_episodes
    if episodes_total is None:
      parts = [f'env steps {env_steps:,}/{steps_total:,} '
               f'({100.0 * env_steps / steps_total:.0f}%)']
    else:
      parts = [f'episodes {episodes:,}/{episodes_total:,} '
               f'({100.0 * episodes / episodes_total:.0f}%)',
               f'env steps {env_steps:,}']
    # Seconds to the end at each budget's rate (none before a rate).
    etas = []
    if self._mark is not None and env_steps > self._mark[1]:
      mark_time, mark_steps, mark_episodes, mark_counters = self._mark
      seconds = max(now - mark_time, 1e-9)
      step_rate = (env_steps - mark_steps) / seconds
      parts.append(f'{step_rate:,.0f} env steps/s')
      etas.append(max(steps_total - env_steps, 0) / step_rate)
      if episodes_total is not None:
        episode_rate = (episodes - mark_episodes) / seconds
        parts.append(f'{episode_rate:,.1f} episodes/s')
        if episode_rate > 0 or episodes >= episodes_total:
          etas.append(max(episodes_total - episodes, 0) /
                      max(episode_rate, 1e-9))
      parts += [
          f'{(value - mark_counters[name]) / seconds:,.1f} {name}/s'
          for name, value in counters.items() if name in mark_counters]
    parts += [f'{label} {value}' for label, value in fields.items()]
    if etas:
      parts.append(f'ETA {format_duration(min(etas))}')
    elif env_steps < steps_total and (episodes_total is None or
                                      episodes < episodes_total):
      parts.append('rate and ETA from the next line')
    line = ' | '.join(parts)
    logging.info('%s', line)
    self._mark = (now, env_steps, episodes, counters)
    return line


class EnvSpecs(NamedTuple):
  """What a loop reads of its env before it builds anything on it.

  Attributes:
    time_step_spec: as the env gives it (a PyEnvironment's array specs, so
      a message shows what the user's env declares).
    action_spec: the same.
    env_id: the env's `env_id` (our wrappers have one), else None.
    max_episode_steps: the env's declared episode limit, else None.
  """
  time_step_spec: Any
  action_spec: Any
  env_id: Optional[str]
  max_episode_steps: Optional[int]

  def tensor_specs(self) -> Tuple[Any, Any]:
    """(time_step_spec, action_spec) as tensor specs, for an agent."""
    return (tensor_spec.from_spec(self.time_step_spec),
            tensor_spec.from_spec(self.action_spec))


def env_specs(settings: settings_lib.RunSettings, env=None) -> EnvSpecs:
  """`env`'s specs, id and episode limit.

  Without `env`, one env is built (seed `settings.seed`) for them and
  closed unstepped; a given `env` (an actor's batch) stays open.
  """
  own_env = env is None
  if own_env:
    env = settings.env_loader(seed=settings.seed)
  try:
    return EnvSpecs(env.time_step_spec(), env.action_spec(),
                    getattr(env, 'env_id', None),
                    getattr(env, 'max_episode_steps', None))
  finally:
    if own_env:
      env.close()


def episode_budget(num_episodes: Optional[int],
                   env_loader: Callable[..., Any], seed: int,
                   num_env_steps: int, setting: str) -> Optional[int]:
  """The run's episode budget: `num_episodes` if bound, else the env's own.

  An env whose task is scored over a number of episodes says so in its
  `episode_budget` attribute (bsuite's loader: bsuite's budget for the id,
  `suite_gymnasium.GymnasiumWrapper.episode_budget`); one env is built to
  read it, and closed unstepped. Logs the run's budget in one line, and a
  warning when the bound `num_episodes` is above the env's own (its log
  stops there).

  Args:
    num_episodes: the run's `num_episodes` binding (None: unbound).
    env_loader: the run's `env_loader(seed=...)`.
    seed: the run's seed.
    num_env_steps: the run's env-step budget (a cap with an episode budget).
    setting: the gin name of `num_episodes`, for the lines.

  Returns:
    The episode budget, or None (the run ends at `num_env_steps`).
  """
  env = env_loader(seed=seed)
  try:
    own = getattr(env, 'episode_budget', None)
    env_id = getattr(env, 'env_id', 'the env')
  finally:
    env.close()
  if num_episodes is None and own is None:
    return None
  if num_episodes is None:
    logging.info('Budget: %s episodes, %s\'s own (bind %s to change it); '
                 'at most %s env steps.', f'{own:,}', env_id, setting,
                 f'{num_env_steps:,}')
    return own
  logging.info('Budget: %s episodes (%s); at most %s env steps.',
               f'{num_episodes:,}', setting, f'{num_env_steps:,}')
  if own is not None and num_episodes > own:
    logging.warning('%s = %s is above %s\'s own budget of %s episodes: '
                    'its log stops there.', setting, f'{num_episodes:,}',
                    env_id, f'{own:,}')
  return num_episodes


def finish(evaluator: evaluation.Evaluator,
           checkpointer: checkpointing.Checkpointer,
           run: RunDirectory,
           env_steps: int,
           last_eval: Optional[Dict[str, float]]) -> Dict[str, float]:
  """The end of a run: an eval and a checkpoint at its last env step.

  Either is skipped if already done at this step: by the loop, or by an
  earlier run that ended here. The final evaluation is stored in the
  checkpoint, so a rerun of a finished run (which resumes at its last step
  and runs no iteration) returns that evaluation and writes nothing: no
  second, different eval value at the same step. Then root_dir is released
  for the next run (`RunDirectory.release`).

  Returns:
    The final evaluation.
  """
  if last_eval is None or last_eval['EnvironmentSteps'] != env_steps:
    last_eval = checkpointer.final_eval(env_steps)
    if last_eval is not None:
      # An earlier run ended here, so this one trained nothing.
      logging.info(
          'This run already ended at env step %s: nothing to train (a '
          'larger NUM_ENV_STEPS continues it); its final eval: average '
          'return %.2f.', f'{env_steps:,}', last_eval['AverageReturn'])
  if last_eval is None:
    last_eval = evaluator(env_steps)
  changed = checkpointer.record_final_eval(last_eval)
  if not checkpointer.saved_at(env_steps):
    checkpointer.save()
  elif changed:
    # The loop saved at this step before this evaluation was stored; the
    # exports of this step are already written.
    checkpointer.save(export_policies=False)
  evaluator.close()
  run.release()
  return last_eval
