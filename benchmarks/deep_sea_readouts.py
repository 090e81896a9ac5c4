#!/usr/bin/env python3
r"""What our agents' deep_sea runs explored, size by size.

Reads the runs of a `bsuite_sweep.py` work dir (`<work_dir>/<agent>/
deep_sea-<setting>/`): each env's bsuite journal (every training episode
in the order it ended) and, where the run wrote them, its TensorBoard
summaries. Prints one markdown row per (agent, size):

* episodes run, good episodes (reached the treasure) and the first;
* the most "right" moves in one episode (each costs 0.01 / N; N of them
  reach the treasure), and their mean over the last 100 episodes: how far
  right the agent walks, as deep as the returns tell;
* with an intrinsic reward, its batch mean and maximum (normalised) at
  the first and last summaries: whether the replayed batches still hold
  anything novel.

    python benchmarks/deep_sea_readouts.py --work_dir=runs/bsuite_deep_sea \
        --agent=r2d2_rnd --agent=r2d2
"""

import glob
import json
import os
import re
import sys

from absl import app
from absl import flags
from absl import logging

_WORK_DIR = flags.DEFINE_string('work_dir', None, 'The sweep\'s work dir.',
                                required=True)
_AGENTS = flags.DEFINE_multi_string('agent', [], 'Agent names (dirs).')

MOVE_COST = 0.01  # bsuite deep_sea's unscaled cost of a "right" move
SETTING = re.compile(r'deep_sea-(\d+)$')
INTRINSIC_TAGS = ('Intrinsic/reward_normalized_mean',
                  'Intrinsic/reward_normalized_max')


def size_of(setting):
  """deep_sea's size of a bsuite setting (sweep.py: 10, 12, ..., 50)."""
  return 10 + 2 * setting


def episodes(run_dir):
  """Every journaled episode of the run, in the order they ended."""
  found = []
  for path in glob.glob(os.path.join(run_dir, 'bsuite', 'episodes',
                                     '*.jsonl')):
    with open(path) as f:
      for line in f:
        try:
          found.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut by a kill
          continue
  return sorted(found, key=lambda episode: episode['time'])


def right_moves(episode, size):
  """'right' moves of an episode, from its return (1 more if treasure)."""
  good = episode['info'].get('denoised_return', 0.0) > 0.5
  return round((float(good) - episode['return']) * size / MOVE_COST)


def intrinsic_summaries(run_dir):
  """{tag: (first, last)} of the run's intrinsic scalars, or {}."""
  paths = glob.glob(os.path.join(run_dir, '**', 'events.out.tfevents.*'),
                    recursive=True)
  if not paths:
    return {}
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  values = {tag: [] for tag in INTRINSIC_TAGS}
  for path in paths:
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        if value.tag in values:
          values[value.tag].append(
              (event.step, float(tf.make_ndarray(value.tensor))))
  return {tag: (min(v)[1], max(v)[1]) for tag, v in values.items() if v}


def row(agent, setting, run_dir):
  size = size_of(setting)
  played = episodes(run_dir)
  if not played:
    return None
  good = [i for i, e in enumerate(played)
          if e['info'].get('denoised_return', 0.0) > 0.5]
  rights = [right_moves(e, size) for e in played]
  last = rights[-100:]
  cells = [agent, str(size), f'{len(played):,}', str(len(good)),
           f'{good[0] + 1:,}' if good else '-', f'{max(rights)}',
           f'{sum(last) / len(last):.1f}']
  summaries = intrinsic_summaries(run_dir)
  for tag in INTRINSIC_TAGS:
    first_last = summaries.get(tag)
    cells.append(f'{first_last[0]:.3f} -> {first_last[1]:.3f}'
                 if first_last else '-')
  return '| ' + ' | '.join(cells) + ' |'


def main(argv):
  del argv
  logging.set_verbosity(logging.ERROR)  # TensorFlow's summary reader
  print('| agent | size | episodes | good | first good | most right '
        '| mean right, last 100 | r_i batch mean | r_i batch max |')
  print('|---|---|---|---|---|---|---|---|---|')
  for agent in _AGENTS.value:
    runs = []
    for run_dir in glob.glob(os.path.join(_WORK_DIR.value, agent, '*')):
      match = SETTING.search(run_dir)
      if match:
        runs.append((int(match.group(1)), run_dir))
    for setting, run_dir in sorted(runs):
      line = row(agent, setting, run_dir)
      if line:
        print(line)
  return 0


if __name__ == '__main__':
  sys.exit(app.run(main))
