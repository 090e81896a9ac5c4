"""One run per root_dir: the lock refuses a second process, not a dead one.

The holder is a `python -c` subprocess that takes the lock and sleeps, so
the test can SIGKILL it and see that the kernel dropped the lock.
"""

import fcntl
import gc
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap

from absl.testing import absltest

from tfa_explore import errors
from tfa_explore.process import run_lock

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Takes the lock, says so, and holds it until killed.
_HOLDER = textwrap.dedent('''
    import sys, time
    from tfa_explore.process import run_lock
    lock = run_lock.RunLock(sys.argv[1]).acquire()
    print('locked', flush=True)
    time.sleep(600)
''')


def is_free(root_dir):
  """Whether a new open file description can flock root_dir's lock file."""
  fd = os.open(os.path.join(root_dir, run_lock.LOCK_FILE), os.O_RDWR)
  try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return True
  except BlockingIOError:
    return False
  finally:
    os.close(fd)  # Also drops the flock this took.


class RunLockTest(absltest.TestCase):

  def make_dir(self):
    path = tempfile.mkdtemp(prefix='tfa_explore_test_')
    self.addCleanup(shutil.rmtree, path, ignore_errors=True)
    return path

  def root_dir(self):
    return os.path.join(self.make_dir(), 'run')

  def start_holder(self, root_dir):
    holder = subprocess.Popen(
        [sys.executable, '-c', _HOLDER, root_dir], cwd=REPO_ROOT,
        stdout=subprocess.PIPE, text=True)

    def stop():
      if holder.poll() is None:
        holder.kill()
      holder.wait(timeout=30)
      holder.stdout.close()
    self.addCleanup(stop)
    self.assertEqual(holder.stdout.readline().strip(), 'locked')
    return holder

  def test_a_second_process_is_refused_until_the_holder_is_killed(self):
    root_dir = self.root_dir()
    holder = self.start_holder(root_dir)
    with self.assertRaises(errors.RunDirectoryError) as raised:
      run_lock.RunLock(root_dir).acquire()
    message = str(raised.exception)
    self.assertIn(f'root_dir {root_dir} is in use by another run', message)
    self.assertIn(f'pid {holder.pid} on host ', message)
    self.assertIn('python', message)  # The holder's command.
    self.assertNotIn('\n', message)
    # A ConfigError: the binaries print it as one line and exit 2.
    self.assertIsInstance(raised.exception, errors.ConfigError)

    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    lock = run_lock.RunLock(root_dir).acquire()  # No stale lock.
    self.assertTrue(lock.held)
    lock.release()
    self.assertTrue(is_free(root_dir))

  def test_one_process_takes_it_again_and_frees_it_after_the_last(self):
    root_dir = self.root_dir()
    # The binary's runner holds it, then the loop's RunDirectory takes it.
    outer = run_lock.RunLock(root_dir).acquire()
    inner = run_lock.RunLock(root_dir + os.sep).acquire()
    self.assertFalse(is_free(root_dir))
    inner.release()
    self.assertFalse(is_free(root_dir))  # The outer taker still holds it.
    outer.release()
    self.assertTrue(is_free(root_dir))
    outer.release()  # Releasing twice is harmless.
    # A second run in the same process, one after the other.
    with run_lock.RunLock(root_dir) as again:
      self.assertTrue(again.held)
      self.assertFalse(is_free(root_dir))
    self.assertTrue(is_free(root_dir))

  def test_a_garbage_collected_taker_frees_it(self):
    root_dir = self.root_dir()
    run_lock.RunLock(root_dir).acquire()  # Not kept.
    gc.collect()
    self.assertTrue(is_free(root_dir))

  def test_an_unwritable_root_dir_is_named(self):
    parent_file = os.path.join(self.make_dir(), 'a_file')
    with open(parent_file, 'w') as f:
      f.write('not a directory')
    root_dir = os.path.join(parent_file, 'run')
    with self.assertRaisesRegex(
        errors.RunDirectoryError,
        f'root_dir {root_dir} cannot be written: Not a directory'):
      run_lock.RunLock(root_dir).acquire()


if __name__ == '__main__':
  absltest.main()
