r"""Where the heads of a bootstrapped R2D2 run on deep_sea would walk.

  python benchmarks/deep_sea_heads.py --run_dir=runs/boot_deep_sea_10 \
      [--checkpoints=all|latest]

For each checkpoint of the run (oldest first), restores the agent
(`r2d2_rollouts.restore_run`) and walks every head of its
`EnsembleQNetwork`, and Q_E, greedily through the run's deep_sea env with
its wind switched off (deterministic moves, no reward noise: the walk each
head *wants*, apart from the luck of the slips). Prints one row per
checkpoint:

* `depth` per head: the "right" moves the head makes along the diagonal
  before its first "left" (N: it walks to the treasure);
* `gap`: per head, Q_k(right) - Q_k(left) at the start cell, in the
  rescaled units the agent learns in;
* the same for Q_E, the greedy policy that is evaluated and saved;
* over the heads: the mean gap on the first half of the diagonal (walking
  right), and the mean max Q on column 0 below the start (walking left:
  the region early episodes end in; its true value is about 0, as the
  stochastic env's noise there has mean 0);
* with --along, per head: its gap at every diagonal cell (walking
  right), and its max Q at every cell of column 0 (walking left: the
  region every early episode ends in, where the stochastic env adds its
  reward noise at the last row).

With slips (deep_sea_stochastic), a head with depth N reaches the treasure
with probability (1 - 1/N)^(N - 1); a head that turns left at depth d < N
leaves the diagonal by choice, a "bad" episode for bsuite's analysis.
"""

import glob
import os

from absl import app
from absl import flags
import numpy as np

from tfa_explore.networks import recurrent_dueling_q_network as rdqn
from tfa_explore.networks import ensemble_q_network

# Registers deep_sea_ablation.py's env loader: its runs restore too.
import deep_sea_ablation  # pylint: disable=unused-import
import r2d2_rollouts  # benchmarks/r2d2_rollouts.py, next to this script.

# --run_dir: r2d2_rollouts' flag (a bootstrapped R2D2 run here).
_ALONG = flags.DEFINE_bool(
    'along', False, 'Also print every head\'s gap at each diagonal cell.')
_CHECKPOINTS = flags.DEFINE_enum('checkpoints', 'all', ['all', 'latest'],
                                 'Checkpoints to read.')


def _deep_sea(env):
  """The bsuite DeepSea inside the run's env loader's wrappers."""
  return env.gym.bsuite_env


def _cells(agent, env, head, choose):
  """Walks one episode of the deterministic env with `choose(q_values,
  right)` picking each action; yields (row, column, right, q_values) of
  `head` (None: Q_E) at every cell before the step."""
  network = agent.q_network
  sea = _deep_sea(env)
  time_step = env.reset()
  state = network.get_initial_state(1)
  prev_action = 0
  while not time_step.is_last():
    heads, state = r2d2_rollouts.network_step(network, time_step,
                                              prev_action, state)
    if head is None:
      q_values = heads[rdqn.EXTRINSIC].numpy()[0, 0]
    else:
      q_values = heads[ensemble_q_network.ENSEMBLE].numpy()[0, 0, head]
    row, column = sea._row, sea._column  # pylint: disable=protected-access
    right = int(sea._action_mapping[row, column])  # pylint: disable=protected-access
    yield row, column, right, q_values
    prev_action = choose(q_values, right)
    time_step = env.step(np.asarray(prev_action, np.int64))


def along(agent, env, head, go_right):
  """Per cell of a walk that always moves right (the diagonal) or always
  left (column 0): (Q(right) - Q(left), max Q) of `head` (None: Q_E)."""
  choose = (lambda q, right: right) if go_right else (
      lambda q, right: 1 - right)
  return [(float(q[right] - q[1 - right]), float(np.max(q)))
          for _, _, right, q in _cells(agent, env, head, choose)]


def walk(agent, env, head):
  """(depth, gap at the start) of greedy `head` (None: Q_E) on env."""
  size = _deep_sea(env)._size  # pylint: disable=protected-access
  depth, gap, on_path = 0, None, True
  for row, column, right, q_values in _cells(
      agent, env, head, lambda q, right: int(np.argmax(q))):
    if gap is None:
      gap = float(q_values[right] - q_values[1 - right])
    if on_path and row == column:
      if int(np.argmax(q_values)) == right:
        depth += 1
      else:
        on_path = False
  return min(depth, size), gap




def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  pattern = os.path.join(flags.FLAGS.run_dir, 'checkpoints', 'ckpt-*.index')
  names = sorted((os.path.basename(p)[:-len('.index')]
                  for p in glob.glob(pattern)),
                 key=lambda name: int(name.split('-')[1]))
  if _CHECKPOINTS.value == 'latest':
    names = names[-1:]
  if not names:
    raise app.UsageError(f'No checkpoint matches {pattern}.')
  print('| checkpoint (env steps) | Q_E depth, gap | head depths | '
        'head gaps | heads\' mean gap, first half of the diagonal | '
        'heads\' mean max Q, column 0 below the start |')
  print('|---|---|---|---|---|---|')
  for name in names:
    agent, env = r2d2_rollouts.restore_run(flags.FLAGS.run_dir, name)
    sea = _deep_sea(env)
    sea._deterministic = True  # pylint: disable=protected-access
    num_heads = agent.q_network.num_heads
    q_depth, q_gap = walk(agent, env, None)
    walks = [walk(agent, env, k) for k in range(num_heads)]
    depths = ' '.join(str(d) for d, _ in walks)
    gaps = ' '.join(f'{g:+.2f}' for _, g in walks)
    diagonal = [along(agent, env, k, True) for k in range(num_heads)]
    column = [along(agent, env, k, False) for k in range(num_heads)]
    half = len(diagonal[0]) // 2
    shallow = np.mean([[g for g, _ in cells[:half]] for cells in diagonal])
    left = np.mean([[v for _, v in cells[1:]] for cells in column])
    print(f'| {name} | {q_depth}, {q_gap:+.2f} | {depths} | {gaps} | '
          f'{shallow:+.3f} | {left:+.3f} |', flush=True)
    if _ALONG.value:
      for k in [None] + list(range(num_heads)):
        gaps = ' '.join(f'{g:+.2f}' for g, _ in along(agent, env, k, True))
        left = ' '.join(f'{v:+.2f}' for _, v in along(agent, env, k, False))
        print(f'    {"Q_E" if k is None else f"head {k}"}: diagonal gaps '
              f'{gaps}; max Q down column 0 {left}')


if __name__ == '__main__':
  app.run(main)
