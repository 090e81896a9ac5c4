"""A quiet console for the binaries: our lines, not TensorFlow's start-up.

Left alone, a run prints TensorFlow's C++ start-up (the CUDA probe,
cuDNN/cuFFT/cuBLAS factory registration, CPU instructions, TensorRT), the
legacy `gym` package's notice (gym prints it when imported, and TF-Agents
imports gym), autograph's SyntaxWarnings about the code it generates, TF's
deprecation of `ReplayBuffer.gather_all`, and absl/TF INFO and WARNING
lines from PolicySaver and SavedModel at every checkpoint. By default the
binaries in train/ drop all of that and keep:

* every record logged by tfa_explore or by the binary itself (progress,
  evaluation, checkpoint and resume lines), prefixed with the time only;
* records at ERROR and above from any library, exceptions, and what the
  binaries print themselves (e.g. a configuration error and exit code 2).

`--verbose` (defined here, once, for every binary) leaves the console
exactly as TensorFlow and the libraries make it, for debugging; a
configuration error then also shows its traceback (`config.exits.exit_codes`).

TensorFlow reads TF_CPP_MIN_LOG_LEVEL once, when its C++ library loads, so
`configure` runs before anything imports tensorflow: each binary calls it
ahead of its other imports, reading --verbose from sys.argv itself (absl
parses flags only later, in `app.run`). Subprocesses are covered too: they
inherit the environment, and a spawned subprocess (R2D2's actor processes,
parallel envs) re-runs the binary's module as `__mp_main__` with the
parent's sys.argv, so it configures itself the same way.

Reverb's C++ lines (`[reverb/cc/...]`, R2D2 runs) have no level and no
switch: Reverb writes them to std::clog. So the binary's file descriptor 2
goes through a small separate process that drops the INFO lines Reverb
prints in a normal run and in a restore of its tables (`REVERB_INFO_LINES`),
XLA's and ALE's C++ notices (`MUTED_LINES`), and passes everything else. A
process, not a thread: it reads until every writer is gone, so a crash's
last words (an abort, a SIGKILL of the binary) still reach the console.
"""

import atexit
import contextlib
import io
import logging
import os
import subprocess
import sys
import time
from typing import Iterable, Optional, Sequence
import warnings

from absl import flags
from absl import logging as absl_logging

VERBOSE = flags.DEFINE_bool(
    'verbose', False,
    'Show everything TensorFlow, TF-Agents, gym and absl print (CUDA '
    'probes, deprecations, SavedModel lines, ...) and the traceback of a '
    'configuration error, for debugging. Must be on the command line: it '
    'is read before TensorFlow loads.')

# __name__ of a binary's module when it runs as the program: '__main__', or
# '__mp_main__' when multiprocessing's spawn re-runs it in a subprocess.
PROGRAM_MODULE_NAMES = ('__main__', '__mp_main__')

# 3 hides TF's C++ INFO, WARNING and ERROR lines: the cuDNN/cuFFT/cuBLAS
# "Unable to register factory" lines are logged at ERROR level. TF's real
# errors reach Python as exceptions, which are still shown.
TF_CPP_QUIET_LEVEL = '3'

# Warnings raised inside these packages are theirs to fix, not the user's
# (e.g. tensorflow's "Encoding a StructuredValue" UserWarning). A warning a
# library attributes to our code (stacklevel) still shows.
THIRD_PARTY_WARNING_MODULES = (
    r'(tensorflow|tensorflow_probability|tf_agents|keras|tf_keras|reverb|gym|'
    r'gymnasium|gin|absl)(\.|$)')
# Autograph compiles code into files named __autograph_generated_file*.py;
# compiling TF-Agents' `state is not ()` there raises a SyntaxWarning whose
# module is that file's path.
AUTOGRAPH_MODULES = r'.*__autograph_generated_file'


# Reverb's INFO lines in a normal run, e.g. '[reverb/cc/client.cc:165]
# Sampler and server are owned by the same process (...)', every time the
# learner reads actor progress. Other '[reverb/cc/' lines (its errors) show.
REVERB_INFO_LINES = (
    'Initializing TFRecordCheckpointer in ',
    'Loading latest checkpoint from ',
    'Started replay server on port ',
    'Sampler and server are owned by the same process',
    'Shutting down replay server',
    # At every replay checkpoint; the learner logs its own line.
    'Stored checkpoint to ',
    # A restore (tfrecord_checkpointer.cc): one line per 100 records read,
    # hundreds per resume, and a few around them. The builder logs what
    # was restored from where; a checkpoint that does not load raises.
    'Loading checkpoint from ',
    'Loading and verifying metadata of the checkpointed tables',
    'was successfully loaded and verified',
    'Successfully loaded and verified metadata for all',
    'Still reading compressed trajectory data',
    'Completed reading compressed trajectory data',
    'items have been successfully loaded from checkpoint at path',
    'Successfully loaded ',
    'No checkpoint found in ',
)

# Lines muted wherever they appear: XLA's two at a run's first compiled
# step (R2D2's jit_compile), from its own C++ logging, which
# TF_CPP_MIN_LOG_LEVEL does not reach; ALE's banner, two lines per Atari
# env it creates (16 for the 8 envs of gin/rnd_ppo/montezuma.gin).
MUTED_LINES = (
    'All log messages before absl::InitializeLog() is called are written',
    'device_compiler.h:186] Compiled cluster using XLA!',
    'A.L.E: Arcade Learning Environment (version ',
    '[Powered by Stella]',
    # The end of Reverb's "Sampler and server are owned by the same
    # process" line, alone on a line when two threads logged it at once.
    'is accessed directly without gRPC.',
)

# The line filter's program: stdin -> stdout, minus Reverb's INFO lines
# (argv before '--') and XLA's (after it). Reverb's mark is looked for
# anywhere in a line: two threads logging at once interleave their lines.
# It ignores Ctrl-C, which is for the binary: it drains the binary's last
# lines and ends when every writer has closed the pipe.
_LINE_FILTER_PROGRAM = '''
import signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
split = sys.argv.index('--')
reverb = [text.encode() for text in sys.argv[1:split]]
anywhere = [text.encode() for text in sys.argv[split + 1:]]
output = sys.stdout.buffer
try:
  for line in sys.stdin.buffer:
    if not ((b'[reverb/cc/' in line and
             any(text in line for text in reverb)) or
            any(text in line for text in anywhere)):
      output.write(line)
      output.flush()
except BrokenPipeError:
  pass
'''

# Seconds the binary waits at exit for the filter to pass its last lines.
_FILTER_DRAIN_SECONDS = 5.0


def line_filter_command(muted: Sequence[str] = REVERB_INFO_LINES,
                        muted_anywhere: Sequence[str] = MUTED_LINES):
  """The command of the line filter process (tests run it too)."""
  return [sys.executable, '-I', '-S', '-c', _LINE_FILTER_PROGRAM, *muted,
          '--', *muted_anywhere]


def _filter_stderr() -> None:
  """Sends file descriptor 2 through the line filter (module docstring).

  Subprocesses started later inherit the filtered descriptor.
  """
  if os.name != 'posix':
    return
  sys.stderr.flush()
  read_fd, write_fd = os.pipe()
  try:
    line_filter = subprocess.Popen(line_filter_command(), stdin=read_fd,
                                   stdout=sys.__stderr__.fileno())
  except OSError:
    os.close(read_fd)
    os.close(write_fd)
    return
  os.close(read_fd)
  original_stderr = os.dup(2)
  os.dup2(write_fd, 2)
  os.close(write_fd)

  def drain():
    # Our end of the pipe closes; the filter ends once the subprocesses
    # still holding it are gone too (or we stop waiting).
    try:
      sys.stderr.flush()
    except (OSError, ValueError):
      pass
    os.dup2(original_stderr, 2)
    try:
      line_filter.wait(timeout=_FILTER_DRAIN_SECONDS)
    except subprocess.TimeoutExpired:
      pass

  atexit.register(drain)


def verbose_requested(argv: Sequence[str]) -> bool:
  """Whether `argv` (sys.argv) sets --verbose, read as absl would.

  `--verbose`, `--verbose=true|1`, `--noverbose`, `--verbose=false|0`, with
  one or two dashes; the last one wins; nothing after `--` is a flag.
  """
  verbose = False
  for arg in argv[1:]:
    if arg == '--':
      break
    name, _, value = arg.lstrip('-').partition('=')
    if not arg.startswith('-'):
      continue
    if name == 'verbose':
      verbose = value.lower() not in ('false', '0', 'f', 'no', 'n') \
          if value else True
    elif name == 'noverbose' and not value:
      verbose = False
  return verbose


# Records from these files are dropped at every level: gin logs "Path not
# found" at ERROR for every place it looks for a gin file, before it raises
# the error the binaries print.
MUTED_FILES = (os.path.join('gin', 'resource_reader.py'),)


class OurRecords(logging.Filter):
  """Passes records logged from files under `our_dirs`, and any ERROR.

  Except records from `muted_files` (path endings), never passed.
  """

  def __init__(self, our_dirs: Iterable[str],
               muted_files: Sequence[str] = MUTED_FILES):
    super().__init__()
    self._prefixes = tuple(
        os.path.join(os.path.abspath(path), '') for path in our_dirs)
    self._muted = tuple(os.sep + path for path in muted_files)

  def filter(self, record: logging.LogRecord) -> bool:
    path = os.path.abspath(record.pathname)
    if path.endswith(self._muted):
      return False
    return record.levelno >= logging.ERROR or path.startswith(self._prefixes)


class ShortFormatter(logging.Formatter):
  """'12:01:02 message'; above INFO, '12:01:02 WARNING: message'.

  absl's prefix (level, date, microseconds, thread id, file:line) is for
  debugging; --verbose keeps it.
  """

  def format(self, record: logging.LogRecord) -> str:
    prefix = time.strftime('%H:%M:%S', time.localtime(record.created))
    if record.levelno > logging.INFO:
      prefix += f' {record.levelname}:'
    return f'{prefix} {super().format(record)}'


def our_directories() -> Sequence[str]:
  """tfa_explore's package directory and the running binary's directory."""
  package_dir = os.path.dirname(
      os.path.dirname(os.path.abspath(__file__)))
  directories = [package_dir]
  main_file = getattr(sys.modules.get('__main__'), '__file__', None)
  if main_file:
    directories.append(os.path.dirname(os.path.abspath(main_file)))
  return directories


def _import_gym_silently() -> None:
  """Imports the legacy gym package with its import-time notice dropped.

  gym (0.23, a TF-Agents dependency we do not use) prints "Gym has been
  unmaintained since 2022 ..." to stderr when imported; once imported, the
  later import by TF-Agents prints nothing.
  """
  with contextlib.redirect_stderr(io.StringIO()):
    try:
      import gym  # pylint: disable=g-import-not-at-top,unused-import
    except ImportError:
      pass


def quiet(our_dirs: Optional[Iterable[str]] = None,
          filter_stderr: bool = True) -> None:
  """Makes this process's console quiet (module docstring).

  Call before tensorflow is imported, else TF's C++ log level is already
  fixed; the Python-side settings take effect whenever called.

  Args:
    our_dirs: records logged from files under these directories are shown
      at every level (default: `our_directories()`).
    filter_stderr: route file descriptor 2 through the Reverb line filter
      (a subprocess inherits its parent's, so it passes False).
  """
  if filter_stderr:
    _filter_stderr()
  # An explicit setting in the user's environment wins.
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', TF_CPP_QUIET_LEVEL)
  warnings.filterwarnings('ignore', module=THIRD_PARTY_WARNING_MODULES)
  warnings.filterwarnings('ignore', category=SyntaxWarning,
                          module=AUTOGRAPH_MODULES)
  _import_gym_silently()
  # TF logs deprecations (gather_all) and SavedModel lines to the
  # 'tensorflow' logger.
  logging.getLogger('tensorflow').setLevel(logging.ERROR)
  handler = absl_logging.get_absl_handler()
  handler.addFilter(OurRecords(
      our_directories() if our_dirs is None else our_dirs))
  handler.setFormatter(ShortFormatter())
  # With a handler on the root logger before tensorflow is imported, TF
  # does not add its own (which printed each of its records twice).
  absl_logging.use_absl_handler()


def configure(module_name: str, argv: Optional[Sequence[str]] = None) -> bool:
  """Quiets the console unless --verbose; a binary's first statement.

  Args:
    module_name: the calling binary's `__name__`. Only a binary running as
      the program (or re-run by spawn in a subprocess) is configured, so a
      test that imports a binary's module changes nothing.
    argv: default sys.argv.

  Returns:
    Whether the console was made quiet.
  """
  if module_name not in PROGRAM_MODULE_NAMES:
    return False
  if verbose_requested(sys.argv if argv is None else argv):
    return False
  quiet(filter_stderr=module_name == '__main__')
  return True


def quiet_worker() -> None:
  """`quiet` for a worker process another program starts (Ray's).

  Ray's `worker_process_setup_hook`: it runs before the worker imports a
  role's module (and with it TensorFlow and gym). Our records are logged
  at INFO as in a binary; Ray's own deprecation warnings are dropped.
  """
  quiet(our_dirs=our_directories()[:1])  # the worker's main module is Ray's
  warnings.filterwarnings('ignore', module=r'ray(\.|$)')
  # absl prints "Logging before flag parsing" once for a process whose
  # flags were never parsed; a worker has none of its own.
  flags.FLAGS.mark_as_parsed()
  absl_logging.set_verbosity(absl_logging.INFO)
