"""Gin files as every binary reads them: flags, search paths, parsing.

`parse_gin` turns gin's errors into `ConfigError` (with a hint when a file
names a renamed configurable), then checks every bound value
(`bound_values.check_bound_values`). The binaries register no
configurables: a gin file imports the module of each one it names.
"""

import contextlib
from importlib import metadata as importlib_metadata
import os
from typing import Optional, Sequence

from absl import flags
import gin

from tfa_explore import errors
from tfa_explore.config import bound_values


def define_gin_flags():
  """Defines `--gin_file` and `--gin_bindings`, which every binary takes.

  The flags belong to this module: a binary lists them in its --help with
  `flags.adopt_module_key_flags(gin_files)`.

  Returns:
    The two flag holders, (gin files, gin bindings).
  """
  return (
      flags.DEFINE_multi_string(
          'gin_file', [], 'Gin config file(s), parsed in order.'),
      flags.DEFINE_multi_string(
          'gin_bindings', [],
          "Gin bindings after the files, e.g. 'SEED=3'."))


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
  """Parses gin files then bindings, then checks every bound value.

  Raises:
    ConfigError: with gin's message (file, line, binding), or naming the
      bad value.
  """
  gin_files = [resolve_gin_file(path) for path in gin_files or []]
  gin_bindings = list(gin_bindings or [])
  _add_include_search_paths(gin_files)
  try:
    gin.parse_config_files_and_bindings(gin_files, gin_bindings)
  except (IOError, OSError) as e:
    raise errors.ConfigError(
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
    raise errors.ConfigError(
        f'Invalid gin configuration (files {gin_files}, bindings '
        f'{gin_bindings}): {e}{hint}') from e
  bound_values.check_bound_values()


@contextlib.contextmanager
def missing_binding_as_config_error(gin_files: Sequence[str],
                                    gin_bindings: Sequence[str]):
  """A gin REQUIRED left unbound is the user's error: a ConfigError.

  Gin notices one only when its configurable is called, so a binary runs
  the code that reads the config inside this.
  """
  try:
    yield
  except RuntimeError as e:
    if errors.is_missing_binding(e):
      raise errors.ConfigError(
          f'Missing gin binding (files {list(gin_files)}, bindings '
          f'{list(gin_bindings)}):\n{e}') from e
    raise


# Renamed configurables and modules: a gin file that still names the old
# one is told the new name (gin's own message says where).
RENAMED = (
    ('on_policy.train_eval', 'on_policy.Settings'),
    ('rnd_ppo.rnd_ppo_agent', 'ppo.ppo_clip_agent'),
    ('tfa_explore.experiments.rnd_ppo', 'tfa_explore.experiments.ppo'),
    ('tfa_explore.experiments.runner', 'tfa_explore.config.experiment'),
    ('tfa_explore.agents.rnd_ppo.warm_up', 'tfa_explore.experiments.warm_up'),
)


def _renamed_hint(message: str) -> str:
  """' `X` is now `Y`.' if gin's `message` is about a renamed name."""
  for old, new in RENAMED:
    if (f'{old}.' in message or f"No configurable matching '{old}'" in
        message or f"No module named '{old}'" in message or
        (f"'{old}'" in message and "doesn't have a parameter" in message)):
      return f' `{old}` is now `{new}`: rename it in the gin file.'
  return ''
