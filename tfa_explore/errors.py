"""The errors a run reports to the user, and how to recognise them.

At the package's root and importing nothing of it, so every floor
(environments, agents, replay, experiments, the binaries) can raise a
`ConfigError` without importing the one above it.
"""

import contextlib
import math
import numbers
import re
import typing

# Exit code of a binary whose configuration cannot run (absl uses 1 for
# crashes, argparse-style usage errors use 2).
CONFIG_ERROR_EXIT_CODE = 2


class ConfigError(Exception):
  """A run that cannot start as configured; the user must fix something.

  A bad gin file, binding or value, or a bad input the configuration names
  (root_dir, env id, demonstration file). The binaries print its message
  as one `ERROR:` line and exit with `CONFIG_ERROR_EXIT_CODE`, without a
  traceback (`--verbose` shows it), so the message must say what is wrong
  and where (the gin parameter, the path).
  """


class RunDirectoryError(ConfigError):
  """root_dir cannot hold this run.

  Another live run holds it (`run_lock`), it cannot be written, or none of
  its checkpoints loads.
  """


def is_missing_binding(error: BaseException) -> bool:
  """Whether `error` is gin's complaint about an unbound `gin.REQUIRED`.

  Gin only notices a missing required binding when the configurable is
  called, and says so in a RuntimeError('Required bindings for ...'); this
  is the one place that reads its message.
  """
  return (isinstance(error, RuntimeError) and
          'Required bindings for' in str(error))


# The line gin appends to an exception's message for every configurable
# the exception passes through, e.g. "\n  In call to configurable 'load'
# (<function load at 0x7f...>)", with " in scope 'r2d2'" for a scoped one.
_GIN_CALL_LINE = re.compile(r"\n\s*In call to configurable '[^']*' \([^\n]*")


def user_message(error: BaseException) -> str:
  """`error`'s message as one line, without gin's "In call to
  configurable" lines.

  Those lines name Python functions and addresses, which tell a user
  nothing the message (naming the gin parameter) does not. Gin's parse
  errors span lines (the message, then "In bindings string line 1", then
  the binding); they are joined, so the binaries print one line whatever
  raised.
  """
  text = ''
  for line in _GIN_CALL_LINE.sub('', str(error)).splitlines():
    line = line.strip()
    if line:
      text = line if not text else (
          f'{text} {line}' if text[-1] in '.:;,!?)' else f'{text}: {line}')
  return text


@contextlib.contextmanager
def values_of(configurable: str):
  """Makes a `ValueError` raised inside a `ConfigError` naming `configurable`.

  Wraps a gin factory's construction of an optimizer or an agent, whose
  constructors check their settings (e.g. `num_epochs must be >= 1, got
  0`): a bad gin value then ends the run as the user's error (exit code 2,
  one line) before anything trains, instead of as a traceback.
  """
  try:
    yield
  except ValueError as e:
    raise ConfigError(f'{configurable}: {user_message(e)}') from e


def check_count(name: str, value, minimum: int = 1) -> None:
  """Raises ValueError unless `value` is an integer >= `minimum`.

  A gin value of the wrong type (`NUM_ENV_STEPS = "abc"`) is named here,
  with its type, instead of failing later in a comparison.
  """
  if isinstance(value, bool) or not isinstance(value, numbers.Integral):
    raise ValueError(f'{name} must be an integer >= {minimum}, got '
                     f'{value!r} ({type(value).__name__}).')
  if value < minimum:
    raise ValueError(f'{name} must be >= {minimum}, got {value}.')


def check_number(name: str, value, above=None) -> None:
  """Raises ValueError unless `value` is a finite real number (not a bool),
  and > `above` if given.

  Finite: inf passes any `> 0` check and nan fails every comparison
  silently, so both would end the run later as a TensorFlow error.
  """
  if isinstance(value, bool) or not isinstance(value, numbers.Real):
    raise ValueError(f'{name} must be a finite number, got {value!r} '
                     f'({type(value).__name__}).')
  if not math.isfinite(value):
    raise ValueError(f'{name} must be a finite number, got {value!r}.')
  if above is not None and not value > above:
    raise ValueError(f'{name} must be > {above}, got {value}.')


_KINDS = {int: 'an integer', float: 'a finite number', bool: 'True or False',
          str: 'a string'}


def check_annotated(name: str, value, annotation) -> None:
  """Raises ValueError unless `value` fits the parameter type `annotation`.

  The types a gin file can bind as literals: int, float, bool, str and
  Optional of them; every float must be finite, whatever its annotation
  (an unannotated parameter included). Anything else (references,
  containers, other types) is left to the code that takes it.
  """
  allows_none = False
  if typing.get_origin(annotation) is typing.Union:
    members = [a for a in typing.get_args(annotation) if a is not type(None)]
    allows_none = len(members) < len(typing.get_args(annotation))
    annotation = members[0] if len(members) == 1 else None
  if value is None:
    if annotation in (int, float, bool, str) and not allows_none:
      raise ValueError(f'{name} must be {_KINDS[annotation]}, got None.')
    return
  if annotation is int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
      raise ValueError(f'{name} must be an integer, got {value!r} '
                       f'({type(value).__name__}).')
  elif annotation is float:
    check_number(name, value)
  elif annotation is bool:
    if not isinstance(value, bool):
      raise ValueError(f'{name} must be True or False, got {value!r} '
                       f'({type(value).__name__}).')
  elif annotation is str:
    if not isinstance(value, str):
      raise ValueError(f'{name} must be a string, got {value!r} '
                       f'({type(value).__name__}).')
  elif isinstance(value, float):
    check_number(name, value)
