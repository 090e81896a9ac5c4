"""What the tests of whole runs share: binaries, waits, a run's events.

The distributed families' tests (`test_r2d2_experiment.py`,
`test_on_policy_distributed.py`, `test_ray_launcher.py`, R2D3's) run the
binaries as a user does, wait on processes they started and read what a
run wrote to TensorBoard.
"""

import glob
import os
import subprocess
import sys
import time

import tensorflow as tf

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_binary(name, *flags, timeout=600):
  """Runs train/<name> with `flags` to its end, from the checkout's root.

  Returns:
    Its `subprocess.CompletedProcess`, stdout and stderr as text.
  """
  return subprocess.run(
      [sys.executable, os.path.join(REPO_ROOT, 'train', name), *flags],
      capture_output=True, text=True, timeout=timeout, cwd=REPO_ROOT,
      check=False)


def assert_one_error_line(test, result, message):
  """Asserts `result` exited with code 2 and one `ERROR:` line that holds
  `message` (the exit-code policy of a user's error); returns the line."""
  test.assertEqual(result.returncode, 2, result.stderr[-3000:])
  errors_printed = [line for line in result.stderr.splitlines()
                    if line.startswith('ERROR:')]
  test.assertLen(errors_printed, 1, result.stderr[-3000:])
  test.assertIn(message, errors_printed[0])
  return errors_printed[0]


def wait_until(test, condition, process, timeout_seconds, logs):
  """Polls `condition()` every 0.2 s until it holds.

  Fails `test` with `logs()` (the processes' output) if `process` (a
  `subprocess.Popen`) exits first or `timeout_seconds` pass.
  """
  deadline = time.time() + timeout_seconds
  while not condition():
    test.assertIsNone(process.poll(), logs())
    test.assertLess(time.time(), deadline, logs())
    time.sleep(0.2)


def read_events(directory):
  """{tag: [(step, value)]} of all event files in `directory`."""
  events = {}
  for path in sorted(glob.glob(os.path.join(directory, 'events.out.*'))):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        events.setdefault(value.tag, []).append(
            (event.step, tf.make_ndarray(value.tensor)))
  return events
