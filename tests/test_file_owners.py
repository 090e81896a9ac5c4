"""tools/file_owners.py (the wheel check's): two distributions that install
one file with different contents are found, on fake installed metadata."""

import importlib.util
from importlib import metadata
import os

_SCRIPT = os.path.join(os.path.dirname(__file__), '..', 'tools',
                       'file_owners.py')
_spec = importlib.util.spec_from_file_location('file_owners', _SCRIPT)
file_owners = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(file_owners)


def _distribution(site_packages, name, files):
  """A `.dist-info` in `site_packages` whose RECORD lists `files`
  ({path: hash}); the distribution importlib.metadata reads from it."""
  info = site_packages / f'{name.replace("-", "_")}-1.0.dist-info'
  info.mkdir()
  (info / 'METADATA').write_text(
      f'Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n')
  record = [f'{path},sha256={digest},10' for path, digest in files.items()]
  record.append(f'{info.name}/RECORD,,')
  (info / 'RECORD').write_text('\n'.join(record) + '\n')
  return metadata.PathDistribution(info)


def test_one_module_from_two_distributions_is_found(tmp_path):
  distributions = [
      _distribution(tmp_path, 'pygame', {
          'pygame/__init__.py': 'aaa', 'pygame/base.so': 'bbb',
          'pygame/font.ttf': 'same', 'pygame/__pycache__/x.pyc': 'p1'}),
      _distribution(tmp_path, 'pygame-ce', {
          'pygame/__init__.py': 'ccc', 'pygame/base.so': 'ddd',
          'pygame/font.ttf': 'same', 'pygame/__pycache__/x.pyc': 'p2'}),
      _distribution(tmp_path, 'numpy', {'numpy/__init__.py': 'eee'}),
  ]
  shared = file_owners.shared_files(distributions)
  # Identical contents (font.ttf) and bytecode are not clashes.
  assert shared == {
      str(tmp_path / 'pygame' / '__init__.py'): ['pygame', 'pygame-ce'],
      str(tmp_path / 'pygame' / 'base.so'): ['pygame', 'pygame-ce'],
  }
  assert file_owners.clash_lines(shared) == [
      'pygame and pygame-ce install 2 of the same files with different '
      f'contents, e.g. {tmp_path / "pygame" / "__init__.py"}']


def test_the_same_file_from_two_distributions_passes(tmp_path):
  # tensorflow and tensorboard both write the `tensorboard` script.
  distributions = [
      _distribution(tmp_path, 'tensorflow', {'../../bin/tensorboard': 'x',
                                             'tensorflow/a.py': 'y'}),
      _distribution(tmp_path, 'tensorboard', {'../../bin/tensorboard': 'x',
                                              'tensorboard/a.py': 'z'}),
  ]
  assert file_owners.shared_files(distributions) == {}
  assert file_owners.clash_lines({}) == []

