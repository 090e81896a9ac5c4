"""What each layer of the package may import, read from the source.

* `agents/intrinsic/` stands below both agent families and imports
  neither: RND-PPO and the R2D2 family both hold its rewards, and a module
  of it that imported an agent family (or the experiments built on them)
  would tie the other family to that one.
* The agents and the generic loops (`agents/`, `experiments/`) name no env
  suite: a suite's end-of-run work reaches the loops through
  `run_context.register_end_of_run`, so the next suite touches no generic
  module.
* `process/` (console, run lock, stop signals, retries) imports no agent,
  experiment or environment: the loops stand on it, not it on them.
* `config/` (gin files, bound-value checks, the experiment contract, exit
  codes) imports no agent, experiment or environment either: the loops
  declare their experiments to it.
* Every shipped gin file imports the modules its configurables come from
  (itself or through its includes): the binaries register none.

Read with `ast`, so the import checks need no TensorFlow and see imports
inside functions too.
"""

import ast
import glob
import importlib
import os
import re

from absl.testing import absltest
from absl.testing import parameterized

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INTRINSIC = 'tfa_explore.agents.intrinsic'
INTRINSIC_DIR = os.path.join(REPO_ROOT, *INTRINSIC.split('.'))


def imported_modules(source, package):
  """Every dotted name `source` imports, read as a module of `package`.

  A `from` import gives its module and each imported name under it:
  `from tfa_explore.agents import r2d2` names the family only in the
  second.
  """
  names = []
  for node in ast.walk(ast.parse(source)):
    if isinstance(node, ast.Import):
      names.extend(alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
      base = node.module or ''
      if node.level:
        anchor = package.split('.')
        anchor = anchor[:len(anchor) - (node.level - 1)]
        base = '.'.join(anchor + ([base] if base else []))
      names.append(base)
      names.extend(f'{base}.{alias.name}' for alias in node.names)
  return names


def is_agent_family(name):
  """An agent family, or the experiments that build them, by dotted name."""
  if name == 'tfa_explore.experiments' or name.startswith(
      'tfa_explore.experiments.'):
    return True
  if not name.startswith('tfa_explore.agents.'):
    return False
  # Anything under agents/ but intrinsic/: r2d2, r2d2_intrinsic, r2d3,
  # bootstrap, rnd_ppo, ppo_clip.
  return not (name == INTRINSIC or name.startswith(INTRINSIC + '.'))


# Env suites: modules of `tfa_explore.environments` for one family of envs.
SUITES = tuple(f'tfa_explore.environments.{name}' for name in (
    'atari', 'bsuite', 'bsuite_journal', 'experts', 'minigrid'))
GENERIC_DIRS = ('tfa_explore/agents', 'tfa_explore/experiments')


def is_suite(name):
  return any(name == suite or name.startswith(suite + '.')
             for suite in SUITES)


def module_path(name):
  """The source file of a tfa_explore module (dotted name), or None."""
  base = os.path.join(REPO_ROOT, *name.split('.'))
  for path in (base + '.py', os.path.join(base, '__init__.py')):
    if os.path.isfile(path):
      return path
  return None


def imported_closure(names):
  """tfa_explore modules loaded by importing `names`: their parent
  packages and everything they import, transitively."""
  seen, stack = set(), list(names)
  while stack:
    name = stack.pop()
    parts = name.split('.')
    for end in range(1, len(parts) + 1):
      module = '.'.join(parts[:end])
      if module in seen or not module.startswith('tfa_explore'):
        continue
      path = module_path(module)
      if path is None:
        continue
      seen.add(module)
      package = module if path.endswith('__init__.py') else '.'.join(
          module.split('.')[:-1])
      with open(path) as f:
        stack.extend(imported_modules(f.read(), package))
  return seen


def gin_imports(path):
  """The modules a gin file imports, with those of its includes."""
  with open(path) as f:
    text = f.read()
  names = re.findall(r'^import ([\w.]+)', text, re.M)
  for include in re.findall(r"^include '([^']+)'", text, re.M):
    names.extend(gin_imports(os.path.join(REPO_ROOT, include)))
  return names


def gin_configurables(path):
  """Configurable names a gin file binds or references (scopes dropped)."""
  with open(path) as f:
    text = re.sub(r'#.*', '', f.read())
  names = re.findall(r'^([\w./]+)\.\w+\s*=', text, re.M)
  names += re.findall(r'@([\w./]+)', text)
  return {name.rpartition('/')[2] for name in names}


def _package_of(path):
  """Dotted package a module file under the repository root belongs to."""
  directory = os.path.relpath(os.path.dirname(path), REPO_ROOT)
  return directory.replace(os.sep, '.')


def imports_under(directories, forbidden):
  """(file, module) of every import under `directories` that `forbidden`
  names; raises if a directory holds no module."""
  offending = []
  for directory in directories:
    paths = sorted(glob.glob(os.path.join(directory, '**', '*.py'),
                             recursive=True))
    if not paths:
      raise FileNotFoundError(f'No modules under {directory}.')
    for path in paths:
      with open(path) as f:
        names = imported_modules(f.read(), _package_of(path))
      offending.extend((os.path.relpath(path, REPO_ROOT), name)
                       for name in names if forbidden(name))
  return offending


class ImportLayersTest(parameterized.TestCase):

  def test_intrinsic_imports_no_agent_family(self):
    self.assertEmpty(imports_under([INTRINSIC_DIR], is_agent_family))

  def test_agents_and_loops_import_no_env_suite(self):
    self.assertEmpty(imports_under(
        [os.path.join(REPO_ROOT, directory) for directory in GENERIC_DIRS],
        is_suite))

  @parameterized.parameters('process', 'config')
  def test_plumbing_imports_no_agent_experiment_or_env(self, package):
    def above_plumbing(name):
      return any(name == top or name.startswith(top + '.') for top in (
          'tfa_explore.agents', 'tfa_explore.experiments',
          'tfa_explore.environments', 'tfa_explore.networks',
          'tfa_explore.replay'))
    self.assertEmpty(imports_under(
        [os.path.join(REPO_ROOT, 'tfa_explore', package)], above_plumbing))

  def test_the_suite_check_sees_a_suite_import(self):
    names = imported_modules(
        'from tfa_explore.environments import bsuite as bsuite_env',
        'tfa_explore.experiments')
    self.assertTrue(any(map(is_suite, names)))
    self.assertFalse(is_suite('tfa_explore.environments.run_context'))

  def test_gin_files_import_their_configurables_modules(self):
    paths = sorted(glob.glob(os.path.join(REPO_ROOT, 'gin', '**', '*.gin'),
                             recursive=True))
    self.assertNotEmpty(paths)
    for path in paths:
      for name in gin_imports(path):
        importlib.import_module(name)
    import gin  # pylint: disable=g-import-not-at-top
    missing = []
    for path in paths:
      loaded = imported_closure(gin_imports(path))
      for name in sorted(gin_configurables(path)):
        configurable = gin.config._REGISTRY.get_match(name)  # pylint: disable=protected-access
        module = getattr(getattr(configurable, 'wrapped', None),
                         '__module__', '')
        if module.startswith('tfa_explore') and module not in loaded:
          missing.append((os.path.relpath(path, REPO_ROOT), name, module))
    self.assertEmpty(missing)

  def test_the_closure_follows_imports_and_parent_packages(self):
    loaded = imported_closure(['tfa_explore.experiments.ppo'])
    self.assertIn('tfa_explore.agents.rnd_ppo.agent', loaded)
    self.assertIn('tfa_explore.experiments', loaded)
    self.assertNotIn('tfa_explore.experiments.r2d2', loaded)

  @parameterized.parameters(
      ('import tfa_explore.agents.r2d2.learning', True),
      ('from tfa_explore.agents import r2d2', True),
      ('from tfa_explore.agents.r2d2_intrinsic import q_bonus', True),
      ('from tfa_explore.agents.rnd_ppo import agent', True),
      ('from tfa_explore import experiments', True),
      ('from tfa_explore.experiments.r2d2 import builder', True),
      ('from ..r2d2 import policy', True),
      ('def f():\n  from tfa_explore.agents.bootstrap import ensemble', True),
      ('from tfa_explore.agents.intrinsic import maths', False),
      ('from . import normalizers', False),
      ('from tfa_explore.networks import rnd_networks', False),
  )
  def test_every_import_form_is_read(self, source, names_a_family):
    names = imported_modules(source, INTRINSIC)
    self.assertEqual(any(map(is_agent_family, names)), names_a_family)


if __name__ == '__main__':
  absltest.main()
