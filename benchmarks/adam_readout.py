r"""How large a run's gradients are, read from Adam's slots in a checkpoint.

  python benchmarks/adam_readout.py --checkpoint_dir=runs/r2d2_pong/checkpoints

Adam keeps v, a running mean of each weight's squared gradient; with
beta_2 = 0.999 and t steps, sqrt(v / (1 - 0.999^t)) is the gradient's RMS.
Against Adam's epsilon it says whether the optimiser normalises the steps
(RMS >> epsilon) or damps them to about lr * RMS / epsilon. Prints one line
per trainable variable (the network's, in the checkpoint's order): its
shape and the median, 90th percentile and maximum RMS over its entries.
Reads the checkpoint only (no agent is built); it assumes the Keras Adam
layout of TF 2.15 (m and v of variable k at `_variables/2k-1` and `/2k`).
"""

import re
import sys

from absl import app
from absl import flags
import numpy as np

_CHECKPOINT_DIR = flags.DEFINE_string(
    'checkpoint_dir', None, 'A run\'s checkpoints/ folder (its latest).')
_BETA_2 = flags.DEFINE_float('beta_2', 0.999, 'Adam\'s beta_2.')

_SLOT = re.compile(r'agent/_optimizer/_variables/(\d+)/\.ATTRIBUTES/VARIABLE_VALUE')


def main(argv):
  del argv
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  path = tf.train.latest_checkpoint(_CHECKPOINT_DIR.value or '')
  if path is None:
    print(f'ERROR: --checkpoint_dir={_CHECKPOINT_DIR.value}: no checkpoint '
          'there.', file=sys.stderr)
    return 2
  reader = tf.train.load_checkpoint(path)
  slots = sorted(int(m.group(1)) for m in map(
      _SLOT.fullmatch, reader.get_variable_to_shape_map()) if m)
  steps = int(reader.get_tensor(
      'agent/_optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE'))
  correction = 1.0 - _BETA_2.value ** max(steps, 1)
  print(f'{path}: {steps:,} optimiser steps')
  print('| variable | shape | RMS median | RMS p90 | RMS max |')
  print('|---|---|---|---|---|')
  for k in range(1, len(slots) // 2 + 1):
    v = reader.get_tensor(
        f'agent/_optimizer/_variables/{2 * k}/.ATTRIBUTES/VARIABLE_VALUE')
    rms = np.sqrt(v / correction)
    print(f'| {k} | {tuple(v.shape)} | {np.median(rms):.1e} | '
          f'{np.percentile(rms, 90):.1e} | {rms.max():.1e} |')
  return 0


if __name__ == '__main__':
  flags.mark_flag_as_required('checkpoint_dir')
  app.run(lambda argv: sys.exit(main(argv)))
