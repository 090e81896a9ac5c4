"""tables.start_server: a damaged newest replay checkpoint does not block;
the previous one, kept beside Reverb's directory, is restored instead."""

import os
import shutil
import tempfile
import time

from absl.testing import absltest
from absl.testing import parameterized
import reverb

from tfa_explore.replay import tables


def _queue():
  return [reverb.Table.queue('queue', 100)]


class StartServerTest(parameterized.TestCase):

  def _dir(self):
    path = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, path, ignore_errors=True)
    for suffix in (tables.DAMAGED_SUFFIX, tables.KEPT_SUFFIX):
      self.addCleanup(shutil.rmtree, path + suffix, ignore_errors=True)
    return path

  def _wait_until_kept(self, checkpoint_dir, path):
    """Waits for the server's keeper to link `path` (it polls each second)."""
    kept = os.path.join(checkpoint_dir + tables.KEPT_SUFFIX,
                        os.path.basename(path), 'DONE')
    deadline = time.monotonic() + 120  # a hang guard, not a timing check
    while not os.path.exists(kept):
      self.assertLess(time.monotonic(), deadline, f'{kept} never appeared')
      time.sleep(0.1)

  def _checkpoint_with(self, checkpoint_dir, num_items):
    server, _ = tables.start_server(_queue, None, checkpoint_dir)
    client = reverb.Client(f'localhost:{server.port}')
    for i in range(num_items):
      client.insert([i], {'queue': 1.0})
    path = client.checkpoint()
    server.stop()
    return path

  @parameterized.parameters(False, True)
  def test_it_says_once_where_it_listens(self, with_checkpoints):
    with self.assertLogs('absl', level='INFO') as logs:
      server, _ = tables.start_server(
          _queue, None, self._dir() if with_checkpoints else None)
    self.addCleanup(server.stop)
    lines = [line for line in logs.output if 'Replay server listening' in line]
    self.assertLen(lines, 1)
    self.assertIn(f'port {server.port} of every network interface, without '
                  'authentication', lines[0])

  def test_restores_a_good_checkpoint(self):
    checkpoint_dir = self._dir()
    path = self._checkpoint_with(checkpoint_dir, 7)
    server, restored_from = tables.start_server(_queue, None, checkpoint_dir)
    self.addCleanup(server.stop)
    self.assertEqual(restored_from, path.rstrip('/'))
    info = reverb.Client(f'localhost:{server.port}').server_info()
    self.assertEqual(info['queue'].current_size, 7)

  @parameterized.parameters('tables.tfrecord', 'chunks.tfrecord')
  def test_a_damaged_one_is_moved_aside_and_the_server_starts(self, name):
    checkpoint_dir = self._dir()
    path = self._checkpoint_with(checkpoint_dir, 7)
    with open(os.path.join(path, name), 'r+b') as f:
      f.write(b'\xff' * 32)
    with self.assertLogs('absl', level='WARNING') as logs:
      server, restored_from = tables.start_server(_queue, None,
                                                  checkpoint_dir)
    self.addCleanup(server.stop)
    self.assertIsNone(restored_from)
    (warning,) = logs.records
    aside = os.path.join(checkpoint_dir + tables.DAMAGED_SUFFIX,
                         os.path.basename(path))
    self.assertIn(f'Replay checkpoint {path} does not load',
                  warning.getMessage())
    self.assertIn('corrupted record', warning.getMessage())
    self.assertIn(aside, warning.getMessage())
    self.assertIn('empty tables', warning.getMessage())
    self.assertTrue(os.path.exists(os.path.join(aside, name)))
    self.assertEqual(tables.complete_checkpoints(checkpoint_dir), [])
    client = reverb.Client(f'localhost:{server.port}')
    self.assertEqual(client.server_info()['queue'].current_size, 0)
    # It checkpoints again as usual.
    client.insert([1], {'queue': 1.0})
    client.checkpoint()
    self.assertLen(tables.complete_checkpoints(checkpoint_dir), 1)

  def test_the_previous_checkpoint_is_kept_and_restored(self):
    checkpoint_dir = self._dir()
    server, _ = tables.start_server(_queue, None, checkpoint_dir)
    client = reverb.Client(f'localhost:{server.port}')
    for i in range(7):
      client.insert([i], {'queue': 1.0})
    first = client.checkpoint()
    self._wait_until_kept(checkpoint_dir, first)
    client.insert([7], {'queue': 1.0})
    second = client.checkpoint()
    self._wait_until_kept(checkpoint_dir, second)
    server.stop()
    # Reverb deleted the first; its kept links still hold it.
    self.assertEqual(tables.complete_checkpoints(checkpoint_dir), [second])
    self.assertLen(
        tables.complete_checkpoints(checkpoint_dir + tables.KEPT_SUFFIX), 2)
    with open(os.path.join(second, 'chunks.tfrecord'), 'r+b') as f:
      f.write(b'\xff' * 32)
    with self.assertLogs('absl', level='WARNING') as logs:
      server, restored_from = tables.start_server(_queue, None,
                                                  checkpoint_dir)
    self.addCleanup(server.stop)
    # The kept copy of the first, not the directory Reverb writes to.
    self.assertEqual(restored_from, os.path.join(
        checkpoint_dir + tables.KEPT_SUFFIX,
        os.path.basename(first.rstrip('/'))))
    (warning,) = logs.records
    self.assertIn(f'Replay checkpoint {second} does not load',
                  warning.getMessage())
    self.assertIn('starts from the previous checkpoint', warning.getMessage())
    self.assertIn(os.path.basename(first), warning.getMessage())
    info = reverb.Client(f'localhost:{server.port}').server_info()
    self.assertEqual(info['queue'].current_size, 7)

  def test_without_a_checkpoint_dir_errors_are_not_caught(self):
    with self.assertRaises(ValueError):
      tables.start_server(lambda: [reverb.Table.queue('queue', 0)], None,
                          None)


if __name__ == '__main__':
  absltest.main()
