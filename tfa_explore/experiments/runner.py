"""What the binaries share: gin parsing with readable errors, the experiment.

The gin file chooses the experiment by binding
`run_experiment.experiment = @on_policy.train_eval` (no string dispatch).
Every experiment function takes `root_dir`; its settings (`env_loader`,
`agent_fn`, `num_env_steps`, `seed`, ...) are the fields of its family's
settings dataclass (`on_policy.Settings.*`, `r2d2.Settings.*`, both
`settings.RunSettings`). Tools (play_policy, the gin-file tests) read
them with `experiment_setting`.
"""

import contextlib
import gc
from importlib import metadata as importlib_metadata
import inspect
import os
import signal
import sys
import traceback
import typing
from typing import Callable, Optional, Sequence

from absl import flags
from absl import logging
import gin

from tfa_explore import errors
from tfa_explore.process import console
from tfa_explore.process import stop_signals
from tfa_explore.process import run_lock

CONFIG_ERROR_EXIT_CODE = errors.CONFIG_ERROR_EXIT_CODE
ConfigError = errors.ConfigError


def define_gin_flags():
  """Defines `--gin_file` and `--gin_bindings`, which every binary takes.

  Returns:
    The two flag holders, (gin files, gin bindings).
  """
  return (
      flags.DEFINE_multi_string(
          'gin_file', [], 'Gin config file(s), parsed in order.'),
      flags.DEFINE_multi_string(
          'gin_bindings', [],
          "Gin bindings after the files, e.g. 'SEED=3'."))


@gin.configurable(module='runner')
def run_experiment(root_dir: str,
                   experiment: Callable[..., object] = gin.REQUIRED):
  """Runs the gin-bound experiment function in `root_dir`."""
  return experiment(root_dir=root_dir)


def _add_include_search_paths(gin_files: Sequence[str]) -> None:
  """Lets `include 'gin/ppo/mountaincar.gin'` work from any directory.

  A twin is its base file plus its own lines (`include`); includes name
  the file as from the checkout's root, the folder above `gin/` (each file
  is `gin/<agent>/<env>.gin`), so they also read as paths from there. Gin
  looks in the current directory first, then in the folders added here in
  order: the one above each file's `gin/` (a user's own tree of twins),
  then the shipped gin files' (`shipped_gin_roots`), so a user's file in
  any folder can include a shipped one.
  """
  roots = [os.path.dirname(os.path.dirname(os.path.dirname(
      os.path.abspath(path)))) for path in gin_files]
  for gin_root in roots + shipped_gin_roots():
    if gin_root not in _SEARCH_PATHS:
      gin.add_config_file_search_path(gin_root)
      _SEARCH_PATHS.add(gin_root)


_SEARCH_PATHS = set()


def checkout_gin_root() -> Optional[str]:
  """The checkout this package is imported from, if it holds `gin/`.

  None for an installed package (its gin files are under
  `installed_gin_root()`).
  """
  root = os.path.dirname(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))))
  return root if os.path.isdir(os.path.join(root, 'gin')) else None


def shipped_gin_roots() -> Sequence[str]:
  """Folders holding the shipped `gin/`: the checkout's, the installed one.

  The checkout first: in a checkout its files are the ones being edited.
  """
  return [root for root in (checkout_gin_root(), installed_gin_root())
          if root is not None]


def installed_gin_root() -> Optional[str]:
  """The folder holding `gin/` of an installed package (None if none).

  `pip install` puts the gin files under <prefix>/share/tfa_explore/gin
  (setup.py's data_files); the package's RECORD says where that is.
  """
  try:
    files = importlib_metadata.distribution('tfa_explore').files or ()
  except importlib_metadata.PackageNotFoundError:
    return None
  for file in files:
    parts = file.parts
    if 'share' in parts and parts[-1].endswith('.gin'):
      index = parts.index('share')
      if parts[index + 1:index + 3] == ('tfa_explore', 'gin'):
        root = os.path.join(str(file.locate().parent), *(
            ['..'] * (len(parts) - index - 3)))
        return os.path.normpath(root)
  return None


def resolve_gin_file(path: str) -> str:
  """`path`, or the shipped file it names ('gin/ppo/x.gin').

  A relative path that does not exist from here is looked up under the
  shipped gin folders (`shipped_gin_roots`: the checkout's, the installed
  package's), so the shipped files work from any directory, as they do in
  an `include`.
  """
  if os.path.exists(path) or os.path.isabs(path):
    return path
  for root in shipped_gin_roots():
    if os.path.exists(os.path.join(root, path)):
      return os.path.join(root, path)
  return path


def parse_gin(gin_files: Sequence[str], gin_bindings: Sequence[str]) -> None:
  """Parses gin files then bindings; raises ConfigError with gin's message."""
  gin_files = [resolve_gin_file(path) for path in gin_files or []]
  gin_bindings = list(gin_bindings or [])
  _add_include_search_paths(gin_files)
  try:
    gin.parse_config_files_and_bindings(gin_files, gin_bindings)
  except (IOError, OSError) as e:
    raise ConfigError(
        f'Cannot read gin file(s) {gin_files}: {e}') from e
  except Exception as e:  # pylint: disable=broad-except
    # Gin raises ValueError / KeyError / SyntaxError / ImportError with the
    # file, line and binding appended to the message.
    hint = _renamed_hint(str(e))
    if not hint and 'No configurable matching' in str(e):
      # The binaries register no configurables themselves.
      hint = (' A gin file imports the module of each configurable it '
              'names, e.g. `import tfa_explore.experiments.on_policy`; '
              'the shipped files under gin/ list theirs at the top.')
    raise ConfigError(
        f'Invalid gin configuration (files {gin_files}, bindings '
        f'{gin_bindings}): {e}{hint}') from e
  check_bound_values()


# Renamed configurables and modules: a gin file that still names the old
# one is told the new name (gin's own message says where).
RENAMED = (
    ('on_policy.train_eval', 'on_policy.Settings'),
    ('rnd_ppo.rnd_ppo_agent', 'ppo.ppo_clip_agent'),
    ('tfa_explore.experiments.rnd_ppo', 'tfa_explore.experiments.ppo'),
)


def _renamed_hint(message: str) -> str:
  """' `X` is now `Y`.' if gin's `message` is about a renamed name."""
  for old, new in RENAMED:
    if (f'{old}.' in message or f"No configurable matching '{old}'" in
        message or f"No module named '{old}'" in message or
        (f"'{old}'" in message and "doesn't have a parameter" in message)):
      return f' `{old}` is now `{new}`: rename it in the gin file.'
  return ''


def check_bound_values() -> None:
  """Checks every value the parsed gin config binds against the type of
  its parameter (`errors.check_annotated`): int, float, bool, str,
  Optional; floats finite.

  One pass over every binding, for every binary, right after parsing:
  a string for a number or an infinite learning rate is refused by name
  before anything is built, whatever configurable takes it. Ranges and
  combinations are the configurables' own checks, made before the run
  starts (`check_before_start`).

  Raises:
    ConfigError: naming the binding (with its scope), the value and what
      it must be.
  """
  # pylint: disable=protected-access
  for (scope, selector), parameters in gin.config._CONFIG.items():
    if selector == 'gin.macro':
      continue  # Checked where a binding uses it.
    configurable = gin.config._REGISTRY.get_match(selector)
    # pylint: enable=protected-access
    annotations = _parameter_annotations(configurable)
    name = _binding_name(scope, configurable, selector)
    for parameter, value in parameters.items():
      value = _macro_value(value)
      try:
        errors.check_annotated(f'{name}.{parameter}', value,
                               annotations.get(parameter))
      except ValueError as e:
        raise ConfigError(str(e)) from e


def _parameter_annotations(configurable):
  """{parameter: the type its value must have} of a registered configurable.

  Its annotation; for an unannotated parameter with a numeric default,
  a number (so a string such as 'nan' is refused there too).
  """
  if configurable is None:
    return {}
  target = configurable.wrapped
  if inspect.isclass(target):
    target = target.__init__
  try:
    hints = typing.get_type_hints(target)
  except Exception:  # pylint: disable=broad-except
    hints = {}  # Names only a type checker imports: defaults alone.
  try:
    parameters = inspect.signature(target).parameters
  except (TypeError, ValueError):
    return hints
  for name, parameter in parameters.items():
    default = parameter.default
    if (name not in hints and not isinstance(default, bool) and
        isinstance(default, (int, float))):
      hints[name] = float
  return hints


def _binding_name(scope: str, configurable, selector: str) -> str:
  """The configurable as a gin file names it: 'r2d2/SequenceConfig'.

  Gin keys bindings by the full selector; one registered without a
  `module=` has its Python module there, which gin files leave out.
  """
  if configurable is not None:
    module = configurable.module or ''
    selector = (configurable.name if '.' in module or not module
                else f'{module}.{configurable.name}')
  return f'{scope}/{selector}' if scope else selector


def _macro_value(value):
  """The value of a gin macro (`%NAME`), else `value` itself."""
  reference = getattr(value, 'configurable', None)
  if (isinstance(value, gin.config.ConfigurableReference) and
      reference.selector == 'gin.macro'):
    # 'X/gin.macro' for `%X` (a scoped `%s/X` keeps its scope in front).
    macro = value.scoped_selector.rpartition('/')[0]
    try:
      return gin.query_parameter(f'%{macro}')
    except ValueError:
      return value
  return value


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
  parse_gin(gin_files, gin_bindings)
  with _missing_binding_as_config_error(gin_files, gin_bindings):
    check_before_start()
  with run_lock.RunLock(root_dir):
    # The first line of a run: start-up (building, tracing) takes a while.
    logging.info('Training in %s (gin: %s); summaries: tensorboard --logdir '
                 '%s', root_dir, ' '.join(gin_files), root_dir)
    with _missing_binding_as_config_error(gin_files, gin_bindings):
      return run_experiment(root_dir=root_dir)


@contextlib.contextmanager
def _missing_binding_as_config_error(gin_files: Sequence[str],
                                     gin_bindings: Sequence[str]):
  """A gin REQUIRED left unbound is the user's error: one line, exit 2."""
  try:
    yield
  except RuntimeError as e:
    if errors.is_missing_binding(e):
      raise ConfigError(
          f'Missing gin binding (files {list(gin_files)}, bindings '
          f'{list(gin_bindings)}):\n{e}') from e
    raise


def check_before_start() -> None:
  """The bound experiment's own checks of every value, if it has them.

  An experiment function declares them as its attribute
  `check_before_start` (a function of no arguments that reads the gin
  config and raises ConfigError), so the runner calls them before it
  takes root_dir's lock and logs the run's first line.
  """
  try:
    reference = gin.query_parameter('run_experiment.experiment')
  except ValueError:
    return  # Unbound: `run_experiment` names the missing binding.
  configurable = getattr(reference, 'configurable', None)
  check = getattr(getattr(configurable, 'wrapper', None),
                  'check_before_start', None)
  if check is not None:
    check()


def parse_flags(argv: Sequence[str]) -> Sequence[str]:
  """absl's flag parsing for the binaries (`app.run(..., flags_parser=)`);
  a bad flag exits with code 2 and one line, as a bad gin value does
  (absl's own parser exits 1)."""
  try:
    return flags.FLAGS(argv)
  except flags.Error as e:
    print(f'ERROR: {e} (--helpshort lists the flags)', file=sys.stderr)
    sys.exit(CONFIG_ERROR_EXIT_CODE)


def exit_with_config_error(error: ConfigError) -> None:
  """Prints `ERROR: <message>` (the traceback first with --verbose); exit 2.

  No traceback by default: the message says what to fix
  (`errors.user_message` drops gin's "In call to configurable" lines).
  """
  if flags.FLAGS.is_parsed() and console.VERBOSE.value:
    traceback.print_exception(error)
  print(f'ERROR: {errors.user_message(error)}', file=sys.stderr)
  sys.exit(CONFIG_ERROR_EXIT_CODE)


def main_or_exit(root_dir: str, gin_files: Sequence[str],
                 gin_bindings: Sequence[str]) -> None:
  """`run`; a ConfigError exits with code 2 (`exit_with_config_error`)."""
  try:
    run(root_dir, gin_files, gin_bindings)
  except ConfigError as e:
    exit_with_config_error(e)
  except stop_signals.RunStopped as e:
    exit_stopped(e)
  except KeyboardInterrupt:
    exit_interrupted()


def exit_interrupted() -> None:
  """Ctrl-C where no loop holds the signals (`stop_signals.StopSignals`:
  start-up, an actor): nothing to save; one line, exit 130."""
  logging.warning('Stopped by SIGINT outside a training loop: nothing to '
                  'save.')
  sys.exit(128 + signal.SIGINT)


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
