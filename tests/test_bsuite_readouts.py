"""benchmarks/bsuite_readouts.py on hand-made sweep directories.

The script runs as a user runs it, in its own process: its absl flags
would clash with bsuite_sweep.py's in the test process.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

from absl.testing import absltest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(REPO_ROOT, 'benchmarks', 'bsuite_readouts.py')


def _episode(time, rights, size, good=False):
  return {'time': time, 'length': size,
          'return': float(good) - 0.01 * rights / size,
          'info': {'total_bad_episodes': 0.0,
                   'denoised_return': float(good)}}


class ReadoutsTest(absltest.TestCase):

  def test_a_row_per_size_from_the_journals_in_end_order(self):
    work_dir = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, work_dir, ignore_errors=True)
    episodes_dir = os.path.join(work_dir, 'r2d2', 'deep_sea-1', 'bsuite',
                                'episodes')
    os.makedirs(episodes_dir)
    # Two envs' journals; env 1's good episode ends second of four.
    journals = {'deep_sea-1.7.0.0.jsonl': [_episode(1.0, 3, 12),
                                           _episode(4.0, 5, 12)],
                'deep_sea-1.7.1.1.jsonl': [_episode(2.0, 12, 12, good=True),
                                           _episode(3.0, 1, 12)]}
    for name, rows in journals.items():
      with open(os.path.join(episodes_dir, name), 'w') as f:
        for episode in rows:
          f.write(json.dumps(episode) + '\n')
        f.write('{"cut by a kill')
    result = subprocess.run(
        [sys.executable, SCRIPT, f'--work_dir={work_dir}', '--agent=r2d2'],
        capture_output=True, text=True, check=True)
    rows = [line for line in result.stdout.splitlines()
            if line.startswith('| r2d2')]
    # size 12: 4 episodes, 1 good (the 2nd to end), most right 12, mean
    # right (3 + 12 + 1 + 5) / 4, no intrinsic summaries.
    self.assertEqual(rows, ['| r2d2 | 12 | 4 | 1 | 2 | 12 | 5.2 | - | - |'])

  def test_memory_len_rows_give_the_wrong_shares(self):
    work_dir = tempfile.mkdtemp()
    self.addCleanup(shutil.rmtree, work_dir, ignore_errors=True)
    episodes_dir = os.path.join(work_dir, 'r2d2', 'memory_len-2', 'bsuite',
                                'episodes')
    os.makedirs(episodes_dir)
    # 250 episodes: the first 200 wrong one in two, the last 50 right.
    with open(os.path.join(episodes_dir, 'memory_len-2.7.0.0.jsonl'),
              'w') as f:
      for i in range(250):
        wrong = i < 200 and i % 2 == 0
        f.write(json.dumps({'time': float(i), 'length': 4,
                            'return': -1.0 if wrong else 1.0,
                            'info': {}}) + '\n')
    result = subprocess.run(
        [sys.executable, SCRIPT, f'--work_dir={work_dir}', '--agent=r2d2',
         '--experiment=memory_len'],
        capture_output=True, text=True, check=True)
    rows = [line for line in result.stdout.splitlines()
            if line.startswith('| r2d2')]
    # Setting 2 is memory length 3; 100 wrong of 250; the last 200 hold
    # episodes 50-249, of which 75 are wrong.
    self.assertEqual(rows, ['| r2d2 | 3 | 250 | 0.40 | 0.50 | 0.38 |'])


if __name__ == '__main__':
  absltest.main()
