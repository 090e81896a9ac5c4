"""One run per root_dir: a lock that a dead run does not leave behind.

Two runs writing the same root_dir would interleave their checkpoints and
summaries. A run holds `fcntl.flock` on `root_dir/run.lock` while it runs;
the kernel drops the lock when the holder's process ends however it ends
(SIGKILL, a crash, a reboot), so a killed run never leaves it stuck and no
one ever deletes the file (deleting a lock file that another process may
be opening lets two runs each lock a different file). The holder writes its
pid, host, start time and command into the file, for the message of the run
it refuses.

The lock belongs to the process: the binary's runner takes it before it
builds anything, then the loop's `run_kit.RunDirectory` takes it again,
which in the same process only counts. It is free again once every taker
released it (or was garbage collected), so a test can run two loops on one
root_dir one after the other.

flock is advisory and local to a kernel; on NFS, Linux emulates it with
byte-range locks the server enforces across machines. A file system
without locks gets a warning and the run goes on unlocked.
"""

import dataclasses
import datetime
import errno
import fcntl
import json
import os
import socket
import sys
import threading
import weakref

from absl import logging

from tfa_explore import errors

LOCK_FILE = 'run.lock'


@dataclasses.dataclass
class _Held:
  fd: int
  takers: int


# {lock file path: what this process holds}; guarded by _REGISTRY_LOCK.
_HELD = {}
_REGISTRY_LOCK = threading.Lock()


def _holder_record() -> str:
  return json.dumps({
      'pid': os.getpid(),
      'host': socket.gethostname(),
      'started': datetime.datetime.now().isoformat(timespec='seconds'),
      'command': ' '.join([os.path.basename(sys.executable)] + sys.argv),
  })


def _describe_holder(fd: int) -> str:
  """'pid 123 on host h since ...: command', from the holder's record."""
  try:
    record = json.loads(os.pread(fd, 1 << 16, 0).decode('utf-8'))
    description = (f'pid {record["pid"]} on host {record["host"]} since '
                   f'{record["started"]}: {record["command"]}')
  except (OSError, ValueError, KeyError, TypeError):
    # The holder has locked the file but not written its record yet.
    return 'a process that is starting'
  return ' '.join(description.split())  # One line, whatever argv held.


def _release_path(path: str) -> None:
  with _REGISTRY_LOCK:
    held = _HELD.get(path)
    if held is None:
      return
    held.takers -= 1
    if held.takers:
      return
    del _HELD[path]
    try:
      # An empty file: no stale holder for whoever reads it next.
      os.ftruncate(held.fd, 0)
    except OSError:
      pass
    os.close(held.fd)  # Drops the flock.


class RunLock:
  """The lock of one root_dir; `acquire` / `release`, or a `with` block."""

  def __init__(self, root_dir: str):
    self.root_dir = os.path.abspath(os.path.expanduser(root_dir))
    self.path = os.path.join(self.root_dir, LOCK_FILE)
    self._release = None  # A weakref.finalize while this object holds it.

  @property
  def held(self) -> bool:
    return self._release is not None and self._release.alive

  def acquire(self) -> 'RunLock':
    """Creates root_dir if needed and takes its lock; returns self.

    Raises:
      errors.RunDirectoryError: root_dir cannot be created or written, or
        another process holds its lock (the message names root_dir and
        that process: pid, host, command).
    """
    if self.held:
      return self
    # One entry per file, however the caller spelled its path.
    key = os.path.realpath(self.path)
    with _REGISTRY_LOCK:
      held = _HELD.get(key)
      if held is not None:
        held.takers += 1
      else:
        _HELD[key] = _Held(self._lock_file(), takers=1)
    # Released when this object is garbage collected, at the latest.
    self._release = weakref.finalize(self, _release_path, key)
    return self

  def release(self) -> None:
    """Gives the lock up (once every taker in this process did)."""
    if self._release is not None:
      self._release()
      self._release = None

  def __enter__(self) -> 'RunLock':
    return self.acquire()

  def __exit__(self, *exc_info) -> None:
    self.release()

  def _lock_file(self) -> int:
    """Opens, locks and signs the lock file; its descriptor."""
    try:
      os.makedirs(self.root_dir, exist_ok=True)
      fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as e:
      raise errors.RunDirectoryError(
          f'root_dir {self.root_dir} cannot be written: '
          f'{e.strerror or e} ({e.filename or self.path}).') from e
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
      if e.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
        holder = _describe_holder(fd)
        os.close(fd)
        raise errors.RunDirectoryError(
            f'root_dir {self.root_dir} is in use by another run, {holder}. '
            'Wait for it to end or stop it, or choose another --root_dir.'
        ) from e
      logging.warning('Cannot lock %s (%s): nothing stops a second run on '
                      'this root_dir.', self.path, e.strerror or e)
      return fd
    try:
      os.ftruncate(fd, 0)
      os.pwrite(fd, _holder_record().encode('utf-8'), 0)
    except OSError as e:
      os.close(fd)
      raise errors.RunDirectoryError(
          f'root_dir {self.root_dir} cannot be written: {e.strerror or e} '
          f'({self.path}).') from e
    return fd
