"""Atomic writes keep the previous complete file/directory on failure."""

import os
import shutil
import tempfile

from absl.testing import absltest

from tfa_explore.utils import files


class AtomicFilesTest(absltest.TestCase):

  def setUp(self):
    super().setUp()
    self.dir = tempfile.mkdtemp(prefix='tfa_explore_files_')
    self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)

  def test_atomic_write_text_replaces(self):
    path = os.path.join(self.dir, 'sub', 'config.gin')
    files.atomic_write_text(path, 'a = 1\n')
    files.atomic_write_text(path, 'a = 2\n')
    with open(path) as f:
      self.assertEqual(f.read(), 'a = 2\n')
    self.assertEqual(os.listdir(os.path.dirname(path)), ['config.gin'])

  def test_atomic_directory_replaces_and_cleans(self):
    path = os.path.join(self.dir, 'policies', 'greedy_policy')
    with files.atomic_directory(path) as tmp:
      self.assertNotEqual(tmp, path)
      self.assertFalse(os.path.exists(path))
      with open(os.path.join(tmp, 'v'), 'w') as f:
        f.write('1')
    with files.atomic_directory(path) as tmp:
      with open(os.path.join(tmp, 'v'), 'w') as f:
        f.write('2')
      # Readers still see the complete first export while writing.
      with open(os.path.join(path, 'v')) as f:
        self.assertEqual(f.read(), '1')
    with open(os.path.join(path, 'v')) as f:
      self.assertEqual(f.read(), '2')
    self.assertEqual(os.listdir(os.path.dirname(path)), ['greedy_policy'])

  def test_failed_export_keeps_previous(self):
    path = os.path.join(self.dir, 'greedy_policy')
    with files.atomic_directory(path) as tmp:
      with open(os.path.join(tmp, 'v'), 'w') as f:
        f.write('good')
    with self.assertRaises(RuntimeError):
      with files.atomic_directory(path) as tmp:
        with open(os.path.join(tmp, 'v'), 'w') as f:
          f.write('half')
        raise RuntimeError('killed mid-export')
    with open(os.path.join(path, 'v')) as f:
      self.assertEqual(f.read(), 'good')
    self.assertEqual(os.listdir(self.dir), ['greedy_policy'])

  def test_previous_export_after_interrupted_swap(self):
    path = os.path.join(self.dir, 'greedy_policy')
    # State after a kill between the two renames of a swap.
    os.makedirs(os.path.join(self.dir, '.greedy_policy.old'))
    self.assertEqual(files.previous_export(path),
                     os.path.join(self.dir, '.greedy_policy.old'))
    os.makedirs(path)
    self.assertEqual(files.previous_export(path), path)
    with self.assertRaises(FileNotFoundError):
      files.previous_export(os.path.join(self.dir, 'collect_policy'))


if __name__ == '__main__':
  absltest.main()
