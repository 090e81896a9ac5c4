r"""Peak memory and time of train/play_policy.py, GIF and MP4.

  .venv/bin/python benchmarks/play_policy_memory.py [--root_dir=RUN]
      [--num_episodes=2] [--formats=gif,mp4] [--binary=train/play_policy.py]

Runs the binary once per format on a trained run (default: a tiny one,
`train/train_eval.py --gin_file=gin/ppo/cartpole.gin
--gin_bindings='NUM_ENV_STEPS=2048'` into a temporary directory; its greedy
CartPole episodes are short, ~80 frames; a solved run's are 500) and prints,
for each: peak RSS, wall time, seconds to the binary's first stderr line,
the output's size, and the 1-minute load average before and after. Peak
RSS is the binary's own (and its descendants') maximum resident set, from
`os.wait4` (per child: `getrusage(RUSAGE_CHILDREN)` is the maximum over
every child waited for so far, the training run included). --binary
measures another version, e.g. a copy of an older play_policy.py.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

from absl import app
from absl import flags

import common

_ROOT_DIR = flags.DEFINE_string(
    'root_dir', None, 'A trained run (default: train a tiny CartPole PPO '
    'run into a temporary directory).')
_NUM_EPISODES = flags.DEFINE_integer('num_episodes', 2, 'Episodes recorded.')
_FORMATS = flags.DEFINE_list('formats', ['gif', 'mp4'], 'Output formats.')
_BINARY = flags.DEFINE_string(
    'binary', os.path.join(common.REPO_ROOT, 'train', 'play_policy.py'),
    'The play_policy.py to measure.')

CARTPOLE_GIN = os.path.join(common.REPO_ROOT, 'gin', 'ppo', 'cartpole.gin')


def tiny_run(root_dir):
  """Trains CartPole PPO for 2048 env steps into `root_dir`."""
  command = common.train_eval_command(root_dir, CARTPOLE_GIN,
                                      ['NUM_ENV_STEPS=2048'])
  common.run_logged(command, os.path.join(root_dir, 'train_eval.log'))


def measure(command):
  """Runs `command`; its console lines, the time of the first, and usage.

  Returns:
    (stderr lines, seconds to the first or None, wall seconds, exit code,
    peak RSS in bytes). Stdout (the video's path) is dropped.
  """
  start = time.time()
  first_line = None
  lines = []
  process = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, cwd=common.REPO_ROOT,
                             text=True)
  for line in process.stderr:
    if first_line is None:
      first_line = time.time() - start
    lines.append(line.rstrip('\n'))
  process.stderr.close()
  _, status, usage = os.wait4(process.pid, 0)
  seconds = time.time() - start
  process.returncode = os.waitstatus_to_exitcode(status)
  # ru_maxrss is in kilobytes on Linux.
  return lines, first_line, seconds, process.returncode, usage.ru_maxrss * 1024


def record_command(root_dir, output, num_episodes):
  return [sys.executable, _BINARY.value, f'--root_dir={root_dir}',
          f'--output={output}', f'--num_episodes={num_episodes}']


def report(fmt, lines, first_line, seconds, code, peak_rss, output, loads):
  for line in lines:
    print(f'  | {line}')
  size = os.path.getsize(output) if os.path.exists(output) else 0
  first = f'{first_line:.1f} s' if first_line is not None else 'none'
  print(f'{fmt}: exit {code}, peak RSS {peak_rss / 2**20:.0f} MiB, wall '
        f'{seconds:.1f} s, first line after {first}, output '
        f'{size / 2**10:.0f} KiB, load average {loads[0]:.2f} before, '
        f'{loads[1]:.2f} after', flush=True)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  workdir = tempfile.mkdtemp(prefix='play_policy_memory_')
  try:
    root_dir = _ROOT_DIR.value
    if root_dir is None:
      root_dir = os.path.join(workdir, 'run')
      tiny_run(root_dir)
    print(f'binary {_BINARY.value}, run {root_dir}, '
          f'{_NUM_EPISODES.value} episodes', flush=True)
    for fmt in _FORMATS.value:
      output = os.path.join(workdir, f'video.{fmt}')
      load_before = os.getloadavg()[0]
      result = measure(record_command(root_dir, output, _NUM_EPISODES.value))
      report(fmt, *result, output, (load_before, os.getloadavg()[0]))
  finally:
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == '__main__':
  app.run(main)
