r"""What an R2D2 run on bsuite's memory_len remembers: a linear probe.

  python benchmarks/r2d2_memory_probe.py --run_dir=runs/memlen/r2d2/memory_len-14 \
      [--checkpoint=ckpt-26000] [--episodes=400] [--epsilon=0]

memory_len shows a +1/-1 context at an episode's first observations and
asks for it L steps later. This restores the run's agent from its latest
(or the given) checkpoint (as `r2d2_rollouts.py` does), acts `--episodes`
episodes in the run's env (its eval seed) with the greedy policy (or
epsilon-greedy) and records the recurrent state after every observation.
It prints, per step t of the episode:

* `probe`: the share of held-out episodes whose context a linear read-out
  of the state at t gets right (least squares on +1/-1, fitted on the
  first half of the episodes, scored on the second), over the whole state
  and over each part (the LSTM's h, which the Q head reads, and c): 1.0
  means the state still holds the context, 0.5 that it is gone; and how
  far apart the mean h of the two contexts lie (greedy acting on this
  deterministic task gives two trajectories only, so the probe is only
  telling with `--epsilon` > 0, whose random actions vary the states);
* at the decision step also the share the agent itself answers right and
  its mean |Q(right) - Q(wrong)| (rescaled).

A context the probe reads at the decision step but the agent answers at
chance is stored and not used; a probe at 0.5 means the state lost it (or
never stored it).
"""

import os
import sys

from absl import app
from absl import flags
import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import r2d2_rollouts  # pylint: disable=g-import-not-at-top,wrong-import-position
from tfa_explore.networks import recurrent_dueling_q_network as rdqn  # pylint: disable=g-import-not-at-top,wrong-import-position

# --run_dir, --checkpoint and --episodes are r2d2_rollouts'.
RUN_DIR = r2d2_rollouts.RUN_DIR
CHECKPOINT = r2d2_rollouts.CHECKPOINT
EPISODES = r2d2_rollouts._EPISODES  # pylint: disable=protected-access
flags.FLAGS.set_default('episodes', 400)
EPSILON = flags.DEFINE_float('epsilon', 0.0, 'Exploration rate to act with.')
CONTEXT_INDEX = 2  # memory_len's observation: [time, query, context]
# The parts of an LSTM's state, in TF-Agents' order: h is the cell's output
# (what the Q head reads), c its memory.
PART_NAMES = ('h (output)', 'c (cell)')


def _episode(agent, env, epsilon, rng):
  """(context, [state after each observation], actions, decision Q)."""
  network = agent.q_network
  action_spec = env.action_spec()
  time_step = env.reset()
  context = float(np.ravel(time_step.observation)[CONTEXT_INDEX])
  state = network.get_initial_state(1)
  prev_action, states, actions, q_values = 0, [], [], None
  while not time_step.is_last():
    heads, state = r2d2_rollouts.network_step(network, time_step,
                                              prev_action, state)
    states.append([np.ravel(s.numpy()) for s in tf.nest.flatten(state)])
    q_values = heads[rdqn.EXTRINSIC].numpy()[0, 0]
    action = int(np.argmax(q_values))
    if rng.random() < epsilon:
      action = int(rng.integers(len(q_values)))
    time_step = env.step(np.asarray(action + action_spec.minimum,
                                    action_spec.dtype))
    actions.append(action)
    prev_action = action
  return context, states, actions, q_values


def probe_accuracy(features, labels):
  """Held-out accuracy of a least-squares linear read-out of +1/-1 labels."""
  half = len(labels) // 2
  design = np.hstack([features, np.ones((len(labels), 1))])
  weights, *_ = np.linalg.lstsq(design[:half], labels[:half], rcond=None)
  predicted = np.sign(design[half:] @ weights)
  return float(np.mean(predicted == labels[half:]))


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  agent, env = r2d2_rollouts.restore_run(RUN_DIR.value, CHECKPOINT.value)
  rng = np.random.default_rng(0)
  episodes = [_episode(agent, env, EPSILON.value, rng)
              for _ in range(EPISODES.value)]
  labels = np.array([context for context, *_ in episodes])
  length = len(episodes[0][1])
  # The decision is the last action: right when it is 1 for context +1.
  answered = np.array([actions[-1] for _, _, actions, _ in episodes])
  right = np.mean((answered == 1) == (labels > 0))
  margins = [abs(q[1] - q[0]) for *_, q in episodes]
  print(f'{RUN_DIR.value}: {len(episodes)} episodes of {length} steps, '
        f'contexts +1 {np.mean(labels > 0):.2f}')
  num_parts = len(episodes[0][1][0])
  print(f'| step | probe, whole state | {" | ".join(PART_NAMES[:num_parts])} '
        '| h: distance of the contexts\' means |')
  print('|---|---|' + '---|' * (num_parts + 1))
  for step in range(length):
    parts = [np.stack([states[step][part] for _, states, _, _ in episodes])
             for part in range(num_parts)]
    row = [probe_accuracy(np.hstack(parts), labels)] + [
        probe_accuracy(part, labels) for part in parts] + [np.linalg.norm(
            parts[0][labels > 0].mean(0) - parts[0][labels < 0].mean(0))]
    print(f'| {step} | ' + ' | '.join(f'{value:.2f}' for value in row) + ' |')
  print(f'decision step {length - 1}: answered right {right:.2f}, '
        f'mean |Q(1) - Q(0)| {np.mean(margins):.3f} (rescaled)')


if __name__ == '__main__':
  app.run(main)
