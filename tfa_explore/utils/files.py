"""Atomic file and directory writes.

A run can be killed at any moment (preemption, Ctrl-C, OOM). Readers of the
run directory (resume, play_policy, TensorBoard) must then see either the
previous complete file or the new complete one, never a half-written one.
Both helpers write next to the destination (same filesystem, so `os.replace`
is an atomic rename) and only then move the result into place.
"""

import contextlib
import os
import shutil
import tempfile
from typing import Iterator


def atomic_write_text(path: str, text: str) -> None:
  """Writes `text` to `path` so readers see the old or the new file only."""
  directory = os.path.dirname(os.path.abspath(path))
  os.makedirs(directory, exist_ok=True)
  fd, tmp_path = tempfile.mkstemp(
      dir=directory, prefix=f'.{os.path.basename(path)}.tmp-')
  try:
    with os.fdopen(fd, 'w') as f:
      f.write(text)
      f.flush()
      os.fsync(f.fileno())
    os.replace(tmp_path, path)
  except BaseException:
    with contextlib.suppress(FileNotFoundError):
      os.remove(tmp_path)
    raise


@contextlib.contextmanager
def atomic_directory(path: str) -> Iterator[str]:
  """Yields a temporary directory that replaces `path` when the block exits.

  Used for SavedModel exports, which are directories of several files. A
  kill inside the block leaves only a hidden `.name.tmp-*` directory (removed
  by the next successful export); `path` keeps the previous export. POSIX
  has no atomic swap of two non-empty directories, so the old export is
  first renamed aside: between those two renames (microseconds) `path` is
  absent, and `previous_export(path)` finds the complete old copy.

  Args:
    path: The final directory, e.g. root_dir/policies/greedy_policy.

  Yields:
    The temporary directory to write into.
  """
  parent = os.path.dirname(os.path.abspath(path))
  name = os.path.basename(os.path.normpath(path))
  os.makedirs(parent, exist_ok=True)
  _remove_stale(parent, name)
  tmp_dir = tempfile.mkdtemp(dir=parent, prefix=f'.{name}.tmp-')
  try:
    yield tmp_dir
  except BaseException:
    shutil.rmtree(tmp_dir, ignore_errors=True)
    raise
  old_dir = os.path.join(parent, f'.{name}.old')
  if os.path.exists(path):
    shutil.rmtree(old_dir, ignore_errors=True)
    os.replace(path, old_dir)
  os.replace(tmp_dir, path)
  shutil.rmtree(old_dir, ignore_errors=True)


def previous_export(path: str) -> str:
  """Returns `path` or, if a swap was interrupted, the complete old copy."""
  if os.path.exists(path):
    return path
  parent = os.path.dirname(os.path.abspath(path))
  old_dir = os.path.join(parent, f'.{os.path.basename(os.path.normpath(path))}.old')
  if os.path.exists(old_dir):
    return old_dir
  raise FileNotFoundError(f'No export at {path}.')


def _remove_stale(parent: str, name: str) -> None:
  for entry in os.listdir(parent):
    if entry.startswith(f'.{name}.tmp-'):
      shutil.rmtree(os.path.join(parent, entry), ignore_errors=True)
