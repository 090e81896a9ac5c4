#!/usr/bin/env python3
r"""What our agents' runs in a bsuite sweep did, id by id.

Reads the runs of a `bsuite_sweep.py` work dir (`<work_dir>/<agent>/
<experiment>-<setting>/`): their bsuite journals (every training episode
in the order it ended, `tfa_explore.environments.bsuite_journal.read_journals`)
and, where the run wrote them, its TensorBoard summaries. Prints one
markdown row per (agent, id), the id's setting from bsuite's sweep.

`--experiment=deep_sea`, per size N:
* episodes run, good episodes (reached the treasure) and the first;
* the most "right" moves in one episode (each costs 0.01 / N; N of them
  reach the treasure), and their mean over the last 100 episodes: how far
  right the agent walks, as deep as the returns tell;
* with an intrinsic reward, its batch mean and maximum (normalised) at
  the first and last summaries: whether the replayed batches still hold
  anything novel.

`--experiment=deep_sea_stochastic`, per size N: episodes run, good
episodes (the treasure's denoised reward), the share of bad episodes
(bsuite's: a "left" while on the diagonal; a slip off it is not bad) over
the run, its first and last 200, the good share of the last 200, and the
first episode from 100 on where the running bad share is below bsuite's
0.8 bar (its analysis reads that only at its logarithmic rows).

`--experiment=memory_len`, per memory length: episodes run and the share
answered wrong (return -1) over the run, its first 200 and its last 200
episodes: whether the agent came to remember the context, and when.

    python benchmarks/bsuite_readouts.py --work_dir=runs/bsuite_deep_sea \
        --agent=r2d2_rnd --agent=r2d2
"""

import functools
import glob
import os
import sys
import types

# Before TensorFlow is imported (by the package, and the summary reader).
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')

# pylint: disable=g-import-not-at-top
from absl import app
from absl import flags
from absl import logging
from bsuite import sweep

from tfa_explore.environments import bsuite_journal
# pylint: enable=g-import-not-at-top

MOVE_COST = 0.01  # bsuite deep_sea's unscaled cost of a "right" move
WINDOW = 200  # memory_len: episodes at the start and at the end
INTRINSIC_TAGS = ('Intrinsic/reward_normalized_mean',
                  'Intrinsic/reward_normalized_max')


def reached_treasure(episode):
  return episode['info'].get('denoised_return', 0.0) > 0.5


def right_moves(episode, size):
  """'right' moves of an episode, from its return (1 more if treasure)."""
  return round((float(reached_treasure(episode)) - episode['return']) *
               size / MOVE_COST)


def intrinsic_summaries(run_dir):
  """{tag: (first, last)} of the run's intrinsic scalars, or {}."""
  paths = glob.glob(os.path.join(run_dir, '**', 'events.out.tfevents.*'),
                    recursive=True)
  if not paths:
    return {}
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  values = {tag: [] for tag in INTRINSIC_TAGS}
  for path in paths:
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        if value.tag in values:
          values[value.tag].append(
              (event.step, float(tf.make_ndarray(value.tensor))))
  return {tag: (min(v)[1], max(v)[1]) for tag, v in values.items() if v}


def memory_len_row(agent, bsuite_id, played, run_dir):
  del run_dir
  wrong = [episode['return'] < 0 for episode in played]

  def share(values):
    return f'{sum(values) / len(values):.2f}'

  cells = [agent, str(sweep.SETTINGS[bsuite_id]['memory_length']),
           f'{len(played):,}', share(wrong), share(wrong[:WINDOW]),
           share(wrong[-WINDOW:])]
  return '| ' + ' | '.join(cells) + ' |'


def deep_sea_row(agent, bsuite_id, played, run_dir):
  size = sweep.SETTINGS[bsuite_id]['size']
  good = [i for i, episode in enumerate(played) if reached_treasure(episode)]
  rights = [right_moves(episode, size) for episode in played]
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


def is_bad(episode):
  """bsuite's 'bad' episode: a "left" while on the diagonal."""
  return episode['info'].get('total_bad_episodes', 0.0) > 0.5


def deep_sea_stochastic_row(agent, bsuite_id, played, run_dir):
  """Good and bad episodes in windows, and where bsuite's bar is crossed."""
  del run_dir
  size = sweep.SETTINGS[bsuite_id]['size']
  bad = [is_bad(episode) for episode in played]
  good = [reached_treasure(episode) for episode in played]
  solved, total = '-', 0
  for index, flag in enumerate(bad):
    total += flag
    # deep_sea_stochastic's analysis: from episode 100 on, bad share < 0.8
    # (on bsuite's logarithmic rows; every episode here).
    if index + 1 >= 100 and total / (index + 1) < 0.8:
      solved = f'{index + 1:,}'
      break

  def share(values):
    return f'{sum(values) / len(values):.2f}' if values else '-'

  cells = [agent, str(size), f'{len(played):,}', str(sum(good)),
           share(bad), share(bad[:WINDOW]), share(bad[-WINDOW:]),
           share(good[-WINDOW:]), solved]
  return '| ' + ' | '.join(cells) + ' |'


def define_flags():
  """The script's flags, defined only when it runs: tests import this
  module beside bsuite_sweep.py, whose flags share names with these."""
  return types.SimpleNamespace(
      work_dir=flags.DEFINE_string('work_dir', None, 'The sweep\'s work dir.',
                                   required=True),
      agents=flags.DEFINE_multi_string('agent', [], 'Agent names (dirs).'),
      experiment=flags.DEFINE_enum(
          'experiment', 'deep_sea',
          ['deep_sea', 'deep_sea_stochastic', 'memory_len'],
          'The sweep\'s bsuite experiment.'))


def main(flag, argv):
  del argv
  logging.set_verbosity(logging.ERROR)  # TensorFlow's summary reader
  experiment = flag.experiment.value
  if experiment == 'deep_sea':
    print('| agent | size | episodes | good | first good | most right '
          '| mean right, last 100 | r_i batch mean | r_i batch max |')
    print('|---|---|---|---|---|---|---|---|---|')
    row = deep_sea_row
  elif experiment == 'deep_sea_stochastic':
    print(f'| agent | size | episodes | good | bad | bad, first {WINDOW} | '
          f'bad, last {WINDOW} | good, last {WINDOW} | bad share < 0.8 at |')
    print('|---|---|---|---|---|---|---|---|---|')
    row = deep_sea_stochastic_row
  else:
    print(f'| agent | memory length | episodes | wrong | wrong, first '
          f'{WINDOW} | wrong, last {WINDOW} |')
    print('|---|---|---|---|---|---|')
    row = memory_len_row
  for agent in flag.agents.value:
    runs = []
    for run_dir in glob.glob(os.path.join(flag.work_dir.value, agent, '*')):
      for bsuite_id, played in bsuite_journal.read_journals(run_dir).items():
        name, setting = bsuite_id.split('/')
        if name == experiment and played:
          runs.append((int(setting), bsuite_id, played, run_dir))
    for _, bsuite_id, played, run_dir in sorted(runs, key=lambda r: r[0]):
      print(row(agent, bsuite_id, played, run_dir))
  return 0


if __name__ == '__main__':
  sys.exit(app.run(functools.partial(main, define_flags())))
