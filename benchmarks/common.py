"""What the benchmark scripts share: running train_eval, reading its logs.

Imported by the scripts next to it (`python benchmarks/<name>.py` puts this
directory on sys.path). TensorFlow is imported only when event files are
read, so --help and the job launchers stay light.
"""

import glob
import os
import subprocess
import sys
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAIN_EVAL = os.path.join(REPO_ROOT, 'train', 'train_eval.py')


def read_scalars(directory):
  """{tag: [(step, wall_time, value)]} of the event files in `directory`.

  Sorted by step (a resumed run appends a second event file); text
  summaries such as `operative_config` are skipped. A missing directory
  gives {}.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  scalars = {}
  for path in sorted(glob.glob(os.path.join(directory, 'events.out.*'))):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        try:
          number = float(tf.make_ndarray(value.tensor))
        except (TypeError, ValueError):
          continue
        scalars.setdefault(value.tag, []).append(
            (event.step, event.wall_time, number))
  return {tag: sorted(points, key=lambda point: point[0])
          for tag, points in scalars.items()}


def train_eval_command(root_dir, gin_file, bindings=()):
  """The train/train_eval.py command line of one run."""
  return [sys.executable, TRAIN_EVAL, f'--root_dir={root_dir}',
          f'--gin_file={gin_file}'] + [
              f'--gin_bindings={binding}' for binding in bindings]


def run_logged(command, log_path, check=True):
  """Runs `command` from the repo root, output to `log_path`.

  Returns:
    (seconds, exit code).

  Raises:
    subprocess.CalledProcessError: if `check` and the command failed.
  """
  print(' '.join(command), flush=True)
  os.makedirs(os.path.dirname(os.path.abspath(log_path)), exist_ok=True)
  start = time.time()
  with open(log_path, 'w') as log:
    code = subprocess.call(command, stdout=log, stderr=subprocess.STDOUT,
                           cwd=REPO_ROOT)
  seconds = time.time() - start
  if check and code:
    raise subprocess.CalledProcessError(code, command)
  return seconds, code
