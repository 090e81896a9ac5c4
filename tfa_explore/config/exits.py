"""The exit-code policy of every binary, in one place.

| what ended the process | exit code | what the user sees |
|---|---|---|
| a bad flag, gin file, binding or value (`ConfigError`) | 2 | one `ERROR:` line (the traceback first with --verbose) |
| SIGINT/SIGTERM in a loop, run saved (`stop_signals.RunStopped`) | 128 + n | one line on what was saved |
| SIGINT/SIGTERM to a replay server, tables saved (`signal_exit_code`) | 128 + n | one line on what was saved |
| Ctrl-C outside a loop (start-up, an actor) | 130 | one line: nothing to save |

A binary runs its work inside `exit_codes()` and parses its flags with
`parse_flags`; work that ends on a signal without raising (the replay
server's) returns `signal_exit_code` for the binary to exit with.
"""

import contextlib
import gc
import signal
import sys
import traceback
from typing import Sequence

from absl import flags
from absl import logging

from tfa_explore import errors
from tfa_explore.process import console
from tfa_explore.process import stop_signals


@contextlib.contextmanager
def exit_codes():
  """Ends the process by the policy above when its body raises one of the
  user's errors or a stop; other exceptions pass through."""
  try:
    yield
  except errors.ConfigError as e:
    exit_with_config_error(e)
  except stop_signals.RunStopped as e:
    exit_stopped(e)
  except KeyboardInterrupt:
    exit_interrupted()


def parse_flags(argv: Sequence[str]) -> Sequence[str]:
  """absl's flag parsing for the binaries (`app.run(..., flags_parser=)`);
  a bad flag exits with code 2 and one line, as a bad gin value does
  (absl's own parser exits 1)."""
  try:
    return flags.FLAGS(argv)
  except flags.Error as e:
    print(f'ERROR: {e} (--helpshort lists the flags)', file=sys.stderr)
    sys.exit(errors.CONFIG_ERROR_EXIT_CODE)


def exit_with_config_error(error: errors.ConfigError) -> None:
  """Prints `ERROR: <message>` (the traceback first with --verbose); exit 2.

  No traceback by default: the message says what to fix
  (`errors.user_message` drops gin's "In call to configurable" lines).
  """
  if flags.FLAGS.is_parsed() and console.VERBOSE.value:
    traceback.print_exception(error)
  print(f'ERROR: {errors.user_message(error)}', file=sys.stderr)
  sys.exit(errors.CONFIG_ERROR_EXIT_CODE)


def signal_exit_code(signum: int) -> int:
  """128 + `signum` (130, 143): as a shell reports a process the signal
  ended, for a process that caught it and stopped in order."""
  return 128 + signum


def exit_interrupted() -> None:
  """Ctrl-C where no loop holds the signals (`stop_signals.StopSignals`:
  start-up, an actor): nothing to save; one line, exit 130."""
  logging.warning('Stopped by SIGINT outside a training loop: nothing to '
                  'save.')
  sys.exit(signal_exit_code(signal.SIGINT))


def exit_stopped(stopped: stop_signals.RunStopped) -> None:
  """One line on what was saved; exit 128 + the signal (130, 143).

  The stopped run's frames, which only the exception's traceback still
  holds (the R2D2 learner with its Reverb clients and sample iterator, the
  replay server, the envs), are freed first, while TensorFlow and Reverb
  are whole, rather than in the interpreter's clean-up at exit, where
  C++ objects with threads of their own are destroyed in no set order
  (a stopped R2D2 run was seen to abort there after its last line).
  """
  stopped.__traceback__ = None
  gc.collect()
  # Gin appends an "In call to configurable" line to the message for every
  # configurable the exception left.
  logging.warning('%s', errors.user_message(stopped))
  sys.exit(stopped.exit_code)
