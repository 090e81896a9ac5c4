"""Checkpoints of a run: `tf.train` checkpoints numbered by env steps,
the resume from the newest one that loads, and the policy exports that go
with every checkpoint.

Both loops (`on_policy.train_eval` and the R2D2 family's learner) name
what their checkpoint holds; `run_kit.finish` makes a run's last one.
Under root_dir (`run_kit.RunDirectory`):

    checkpoints/           tf.train checkpoints; a resume reads the newest
                           one that loads (damaged/: those that did not)
    policies/greedy_policy, policies/collect_policy   PolicySaver exports

Optimizer state. A Keras optimizer creates its slot variables (Adam's
moments) at its first `apply_gradients`; TF's deferred restoration fills
them from the checkpoint at that moment, also inside a `tf.function`, and
`iterations` is restored at once. So a resume needs no access to the
optimizer (tests/test_run_kit.py checks Adam's slots and iteration count
after a resume of each loop).

Atomicity. TF writes a checkpoint's files under temporary names and then
rewrites the `checkpoint` state file atomically; exports are written to a
temporary name and renamed (`utils.files`), so a killed run leaves the
last complete checkpoint and export readable. Files can still be damaged
after the fact (a full disk, a copy cut short): a resume reads every value
of a checkpoint before restoring it and falls back to the next older one,
moving the damaged one to checkpoints/damaged/.
"""

import glob
import json
import os
import time
from typing import Any, Dict, Mapping, Optional

from absl import logging
import tensorflow as tf
from tf_agents.policies import policy_saver

from tfa_explore import errors
from tfa_explore.utils import files

# Subdirectories of root_dir, and the exports under POLICY_DIR.
CHECKPOINT_DIR = 'checkpoints'
DAMAGED_DIR = 'damaged'  # under CHECKPOINT_DIR: checkpoints that did not load
POLICY_DIR = 'policies'
GREEDY_POLICY = 'greedy_policy'
COLLECT_POLICY = 'collect_policy'


class Checkpointer:
  """Checkpoints (and policy exports) of a run, numbered by env steps."""

  def __init__(self,
               run,
               step_counter: tf.Variable,
               policies: Mapping[str, Any],
               train_step: tf.Variable,
               max_to_keep: int,
               **checkpointed):
    """Creates the checkpoint of `checkpointed` objects.

    Args:
      run: the run directory (`run_kit.RunDirectory`, which imports this
        module): its `path` places the checkpoints and exports.
      step_counter: the env step counter; numbers the checkpoints (it is
        not checkpointed unless also named in `checkpointed`).
      policies: {export name: TF policy} exported at every save.
      train_step: the agent's train step counter (checkpointed, and stored
        in the exports).
      max_to_keep: older checkpoints are deleted.
      **checkpointed: everything else the checkpoint holds (agent, counters,
        metrics, ...), by name.
    """
    self._run = run
    self._env_steps = step_counter
    self._train_step = train_step
    # JSON of the evaluation `finish` made at the run's last env step, so
    # that a rerun of a finished run returns it instead of evaluating (and
    # writing eval/ values) again; '' until a run finished.
    self._final_eval = tf.Variable('', dtype=tf.string, trainable=False,
                                   name='final_eval')
    self._checkpoint = tf.train.Checkpoint(train_step=train_step,
                                           final_eval=self._final_eval,
                                           **checkpointed)
    self._max_to_keep = max_to_keep
    self._manager = self._make_manager()
    self._savers = {
        name: policy_saver.PolicySaver(policy, train_step=train_step)
        for name, policy in policies.items()}

  def _make_manager(self) -> tf.train.CheckpointManager:
    # Reads the `checkpoint` state file: the checkpoints to rotate.
    return tf.train.CheckpointManager(
        self._checkpoint, self._run.path(CHECKPOINT_DIR),
        max_to_keep=self._max_to_keep, checkpoint_name='ckpt')

  @property
  def latest(self) -> Optional[str]:
    return self._manager.latest_checkpoint

  def restore(self) -> bool:
    """Restores the newest checkpoint that loads, if any; True if it did.

    Every value of a checkpoint is read before it is restored, because
    `tf.train.Checkpoint.restore` defers the values of objects that do not
    exist yet (optimizer slots: module doc) and would meet a damaged file
    only then, mid-training. A checkpoint that does not load is skipped
    with a WARNING naming it and the reason; once an older one loads, the
    skipped ones are moved to checkpoints/damaged/ (the run never deletes
    them, and a later checkpoint at the same env step cannot replace
    them). When none loads, nothing moves.

    Raises:
      errors.RunDirectoryError: there are checkpoints, but none loads.
    """
    checkpoints = self._manager.checkpoints[::-1]  # Newest first.
    if not checkpoints:
      return False
    reasons = []
    for path in checkpoints:
      try:
        _read_every_value(path)
        self._checkpoint.restore(path)
      except _DAMAGED_CHECKPOINT_ERRORS as e:
        reason = _first_line(e)
        reasons.append(f'{os.path.basename(path)}: {reason}')
        logging.warning('Skipping checkpoint %s, which does not load (%s: '
                        '%s). Trying the next older one.',
                        path, type(e).__name__, reason)
        continue
      if reasons:
        self._forget_newer_than(path)
        for damaged in checkpoints[:len(reasons)]:
          self._set_aside(damaged)
      logging.info('Resumed from checkpoint at env step %s (train step %s).',
                   f'{int(self._env_steps):,}', f'{int(self._train_step):,}')
      return True
    raise errors.RunDirectoryError(
        f'No checkpoint in {self._run.path(CHECKPOINT_DIR)} loads ('
        f'{"; ".join(reasons)}). Move that directory aside to start the run '
        'afresh.')

  def _set_aside(self, path: str) -> None:
    """Moves the files of checkpoint `path` to checkpoints/damaged/."""
    directory = self._run.path(CHECKPOINT_DIR, DAMAGED_DIR,
                               f'{os.path.basename(path)}-{int(time.time())}')
    os.makedirs(directory, exist_ok=True)
    for name in glob.glob(path + '.*'):
      os.replace(name, os.path.join(directory, os.path.basename(name)))
    logging.warning('The checkpoint that did not load is kept in %s.',
                    directory)

  def _forget_newer_than(self, restored: str) -> None:
    """Drops the checkpoints after `restored` from the state file.

    They did not load (`restore`). The manager deletes the oldest of the
    checkpoints its state file lists; unlisted, they stay on disk, and
    `restored` is the latest again (`saved_at`).
    """
    directory = self._run.path(CHECKPOINT_DIR)
    state = tf.train.get_checkpoint_state(directory)
    paths = list(state.all_model_checkpoint_paths)
    keep = paths.index(restored) + 1
    # Relative paths and the timestamps, as the manager writes them: the
    # run directory can move, and the manager only rotates checkpoints
    # whose timestamp it knows.
    tf.compat.v1.train.update_checkpoint_state(
        directory, os.path.basename(restored),
        all_model_checkpoint_paths=[os.path.basename(path)
                                    for path in paths[:keep]],
        all_model_checkpoint_timestamps=list(
            state.all_model_checkpoint_timestamps)[:keep] or None,
        last_preserved_timestamp=state.last_preserved_timestamp)
    self._manager = self._make_manager()

  def save(self, export_policies: bool = True) -> None:
    """A checkpoint at the current env step, then the policy exports."""
    self._manager.save(checkpoint_number=self._env_steps)
    if not export_policies:
      logging.info('Checkpoint saved at env step %s.',
                   f'{int(self._env_steps):,}')
      return
    for name, saver in self._savers.items():
      with files.atomic_directory(
          self._run.path(POLICY_DIR, name)) as tmp_dir:
        saver.save(tmp_dir)
    logging.info('Checkpoint and policies saved at env step %s.',
                 f'{int(self._env_steps):,}')

  def final_eval(self, env_steps: int) -> Optional[Dict[str, float]]:
    """The final evaluation of a run that ended at `env_steps`, if stored.

    Set by `record_final_eval` and restored with the checkpoint; None if
    the restored run did not finish at `env_steps`.
    """
    text = self._final_eval.numpy().decode('utf-8')
    if not text:
      return None
    results = json.loads(text)
    return results if results.get('EnvironmentSteps') == env_steps else None

  def record_final_eval(self, results: Mapping[str, float]) -> bool:
    """Stores `results` in the next checkpoint; True if they changed."""
    text = json.dumps(dict(results), sort_keys=True)
    if self._final_eval.numpy().decode('utf-8') == text:
      return False
    self._final_eval.assign(text)
    return True

  def saved_at(self, env_steps: int) -> bool:
    latest = self._manager.latest_checkpoint
    return latest is not None and latest.endswith(f'-{env_steps}')


# What reading a damaged checkpoint raises: a short .data file gives
# IndexError('Read less bytes than requested'), a flipped byte DataLossError
# (an OpError: TF stores a CRC of every tensor), a short or missing .index
# file an OpError; a value that no longer fits its variable ValueError.
_DAMAGED_CHECKPOINT_ERRORS = (tf.errors.OpError, IndexError, ValueError,
                              OSError)


def _read_every_value(checkpoint_path: str) -> None:
  """Reads every tensor of a checkpoint; raises if any does not load."""
  reader = tf.train.load_checkpoint(checkpoint_path)
  for key in reader.get_variable_to_dtype_map():
    reader.get_tensor(key)


def _first_line(error: BaseException) -> str:
  lines = str(error).strip().splitlines()
  return lines[0] if lines else repr(error)
