"""`agents/intrinsic/` stands below both agent families and imports neither.

RND-PPO and the R2D2 family both hold its rewards; a module of it that
imported an agent family (or the experiments built on them) would tie the
other family to that one. Read from the source with `ast`, so the check
needs no TensorFlow and sees imports inside functions too.
"""

import ast
import glob
import os

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


def _package_of(path):
  """Dotted package a module file under the repository root belongs to."""
  directory = os.path.relpath(os.path.dirname(path), REPO_ROOT)
  return directory.replace(os.sep, '.')


class IntrinsicFloorTest(parameterized.TestCase):

  def test_intrinsic_imports_no_agent_family(self):
    paths = sorted(glob.glob(os.path.join(INTRINSIC_DIR, '**', '*.py'),
                             recursive=True))
    self.assertNotEmpty(paths)
    offending = []
    for path in paths:
      with open(path) as f:
        names = imported_modules(f.read(), _package_of(path))
      offending.extend((os.path.relpath(path, REPO_ROOT), name)
                       for name in names if is_agent_family(name))
    self.assertEmpty(offending)

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
