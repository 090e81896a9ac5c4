"""Stopping a run on SIGINT or SIGTERM without losing it.

Ctrl-C sends SIGINT; schedulers (Slurm, Kubernetes, Ray) stop jobs with
SIGTERM. Either one, caught by `StopSignals` around a training loop, lets
the loop finish its iteration, save a checkpoint and raise `RunStopped`,
which the binaries turn into one line and exit code 128 + the signal.
"""

import os
import signal
import threading

from absl import logging


class RunStopped(Exception):
  """A run stopped by SIGINT or SIGTERM after saving its progress.

  The binaries exit with 128 + the signal's number (130, 143), as a shell
  reports a process ended by it, after one line saying what was saved.
  """

  def __init__(self, signum: int, env_steps: int):
    self.signum = signum
    self.env_steps = env_steps
    super().__init__(
        f'Stopped by {signal.Signals(signum).name} at env step '
        f'{env_steps:,}; a checkpoint was saved there: run the same command '
        'again to resume.')

  @property
  def exit_code(self) -> int:
    return 128 + self.signum


class StopSignals:
  """SIGINT and SIGTERM ask the loop to stop, instead of killing the run.

  A context manager around a training loop: the first signal sets
  `signum` (the loop checks `requested` once per iteration, saves a
  checkpoint and raises `RunStopped`); a second one, of either kind, ends
  the process at once. Schedulers (Slurm, Kubernetes, Ray) stop jobs with
  SIGTERM, Ctrl-C sends SIGINT. Outside the main thread (an embedded
  loop) nothing is installed: Python allows handlers only there.

  The second signal gets the kernel's default action (the process ends,
  killed by that signal: no traceback, the shell reports 130 or 143),
  installed by the first one and kept after the block: a Python handler
  would run only once the main thread is back from the C++ call it may
  be blocked in (a checkpoint, a Reverb call, joining actors), and after
  the block Python's own SIGINT handler would raise KeyboardInterrupt in
  the middle of the save.
  """

  SIGNALS = (signal.SIGINT, signal.SIGTERM)

  def __init__(self):
    self.signum = None
    self._previous = {}

  @property
  def requested(self) -> bool:
    return self.signum is not None

  def _handle(self, signum, frame):
    del frame
    if self.signum is not None:
      # A second signal that came before the kernel's action was in place.
      signal.signal(signum, signal.SIG_DFL)
      os.kill(os.getpid(), signum)
      return
    self.signum = signum
    for other in self.SIGNALS:
      signal.signal(other, signal.SIG_DFL)
    logging.warning('%s: stopping after this iteration, with a checkpoint '
                    '(send it again to stop at once).',
                    signal.Signals(signum).name)

  def __enter__(self) -> 'StopSignals':
    if threading.current_thread() is threading.main_thread():
      for signum in self.SIGNALS:
        self._previous[signum] = signal.signal(signum, self._handle)
    return self

  def __exit__(self, *exc_info) -> None:
    if self.signum is None:
      for signum, handler in self._previous.items():
        signal.signal(signum, handler)
    # Else the process is saving and ending: a second signal still ends
    # it at once.
    self._previous = {}
