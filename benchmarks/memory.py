r"""Memory of each shipped config, and bytes per stored R2D2 sequence.

  .venv/bin/python benchmarks/memory.py [--gin_files=gin/ppo/cartpole.gin,...]
      [--r2d2_env_steps=12000,24000] [--gin_bindings=...] [--workdir=DIR]

For every runnable gin file (default: all of gin/*/*.gin):

* **peak RSS**: `train/train_eval.py` with a short budget (one iteration of
  the on-policy loop; `--r2d2_env_steps` for the R2D2 family) and one eval
  episode; the process tree's resident memory (the binary plus its actor
  or env subprocesses; shared pages counted once per process) sampled
  every 0.2 s, its maximum printed. This is start-up, networks and
  environments, not a full replay table.
* **bytes per stored sequence** (R2D2 family): the same config run to two
  budgets; each run's last replay checkpoint: its items and the bytes of
  its chunks (Reverb's compressed data, as the server holds it in memory)
  and item records. The slope (bytes difference / items difference)
  leaves out what both hold once (the weights, the demonstrations). Times
  `replay_capacity` it is the replay's share of memory at capacity. The
  budgets must differ well beyond what a run overshoots (actors run until
  the learner, which starts at `min_size_to_sample`, sees the budget).
"""

import glob
import os
import subprocess
import sys
import tempfile
import time

from absl import app
from absl import flags
import psutil

import common

_GIN_FILES = flags.DEFINE_list(
    'gin_files', None, 'Gin files (default: every gin/*/*.gin).')
_R2D2_ENV_STEPS = flags.DEFINE_list(
    'r2d2_env_steps', ['12000', '24000'],
    'The two budgets of the R2D2-family runs (env steps).')
_GIN_BINDINGS = flags.DEFINE_multi_string(
    'gin_bindings', [], 'Added to every run, e.g. a smaller '
    'r2d2.Settings.min_size_to_sample for a short Atari run.')
_WORKDIR = flags.DEFINE_string('workdir', None,
                               'Run directories (default: a temporary one).')


def run_with_peak_rss(command, log_path):
  """(seconds, exit code, peak RSS in bytes of the process tree)."""
  start = time.time()
  peak = 0
  with open(log_path, 'w') as log:
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                               cwd=common.REPO_ROOT)
    root = psutil.Process(process.pid)
    while process.poll() is None:
      try:
        tree = [root] + root.children(recursive=True)
        rss = 0
        for member in tree:
          try:
            rss += member.memory_info().rss
          except psutil.NoSuchProcess:
            pass
        peak = max(peak, rss)
      except psutil.NoSuchProcess:
        pass
      time.sleep(0.2)
  return time.time() - start, process.returncode, peak


def replay_checkpoint(root_dir):
  """(items, bytes) of the newest complete replay checkpoint, or None.

  Items: the records of its items file (every table's items: the agent
  table's sequences, one `variables` item, queued reports). Bytes: its
  chunks (the data, compressed as the server holds it) and items files.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  done = sorted(glob.glob(os.path.join(root_dir, 'replay_checkpoints', '*',
                                       'DONE')))
  if not done:
    return None
  directory = os.path.dirname(done[-1])
  items_path = os.path.join(directory, 'items.tfrecord')
  # Reverb writes its checkpoint records ZLIB-compressed.
  items = sum(1 for _ in tf.data.TFRecordDataset(items_path,
                                                 compression_type='ZLIB'))
  return items, (os.path.getsize(items_path) +
                 os.path.getsize(os.path.join(directory, 'chunks.tfrecord')))


def is_r2d2_family(gin_file):
  return os.path.basename(os.path.dirname(gin_file)) in ('r2d2', 'r2d3')


def main(argv):
  del argv
  workdir = _WORKDIR.value or tempfile.mkdtemp(prefix='memory_')
  gin_files = _GIN_FILES.value or sorted(
      os.path.relpath(path, common.REPO_ROOT) for path in
      glob.glob(os.path.join(common.REPO_ROOT, 'gin', '*', '*.gin')))
  rows = []
  for gin_file in gin_files:
    name = os.path.splitext(gin_file.replace('gin/', '').replace('/', '_'))[0]
    if is_r2d2_family(gin_file):
      budgets = [int(steps) for steps in _R2D2_ENV_STEPS.value]
      eval_binding = 'r2d2.Settings.num_eval_episodes = 1'
    else:
      budgets = [1]  # one iteration
      eval_binding = 'on_policy.Settings.num_eval_episodes = 1'
    points = []
    peak = 0
    for budget in budgets:
      root_dir = os.path.join(workdir, f'{name}_{budget}')
      command = common.train_eval_command(
          root_dir, gin_file,
          [f'NUM_ENV_STEPS = {budget}', eval_binding] + _GIN_BINDINGS.value)
      print(' '.join(command), flush=True)
      seconds, code, run_peak = run_with_peak_rss(
          command, os.path.join(workdir, f'{name}_{budget}.log'))
      if code:
        print(f'  exit code {code}; see {root_dir}.log', flush=True)
        break
      peak = max(peak, run_peak)
      print(f'  {seconds:.0f} s, peak RSS {run_peak / 2**20:,.0f} MiB',
            flush=True)
      if is_r2d2_family(gin_file):
        points.append(replay_checkpoint(root_dir))
    per_sequence = None
    if (len(points) == 2 and None not in points and
        points[1][0] > points[0][0]):
      per_sequence = ((points[1][1] - points[0][1]) /
                      (points[1][0] - points[0][0]))
    rows.append((gin_file, peak, points, per_sequence))

  print('\n| gin file | peak RSS (MiB, process tree) | replay checkpoints: '
        'items, MiB | bytes per stored sequence |')
  print('|---|---|---|---|')
  for gin_file, peak, points, per_sequence in rows:
    replay = '; '.join(f'{n:,}, {b / 2**20:.1f}' for n, b in
                       filter(None, points)) or '-'
    print(f'| `{gin_file}` | {peak / 2**20:,.0f} | {replay} | '
          f'{f"{per_sequence:,.0f}" if per_sequence else "-"} |')
  print(f'python {sys.version.split()[0]}; runs in {workdir}')


if __name__ == '__main__':
  app.run(main)
