"""benchmarks/adam_readout.py on a checkpoint whose gradients are known.

The script runs in its own process, as a user runs it.
"""

import os
import subprocess
import sys
import tempfile

from absl.testing import absltest
import tensorflow as tf

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(REPO_ROOT, 'benchmarks', 'adam_readout.py')


class _Agent(tf.Module):

  def __init__(self):
    super().__init__()
    self.kernel = tf.Variable(tf.zeros([3, 2]))
    self.bias = tf.Variable(tf.zeros([2]))
    self._optimizer = tf.keras.optimizers.Adam(1e-3)


def _run(*args):
  return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True,
                        text=True, timeout=120, check=False)


class AdamReadoutTest(absltest.TestCase):

  def test_rms_is_the_constant_gradient_of_each_variable(self):
    agent = _Agent()
    for _ in range(7):
      with tf.GradientTape() as tape:
        # Constant gradients: 0.02 for every kernel entry, 3e-5 for the bias.
        loss = (0.02 * tf.reduce_sum(agent.kernel) +
                3e-5 * tf.reduce_sum(agent.bias))
      variables = [agent.kernel, agent.bias]
      agent._optimizer.apply_gradients(  # pylint: disable=protected-access
          zip(tape.gradient(loss, variables), variables))
    directory = tempfile.mkdtemp()
    tf.train.CheckpointManager(tf.train.Checkpoint(agent=agent), directory,
                               max_to_keep=1).save()
    result = _run(f'--checkpoint_dir={directory}')
    self.assertEqual(result.returncode, 0, result.stderr)
    rows = [line for line in result.stdout.splitlines()
            if line.startswith('| 1 ') or line.startswith('| 2 ')]
    self.assertIn(': 7 optimiser steps', result.stdout)
    self.assertEqual(rows, [
        '| 1 | (3, 2) | 2.0e-02 | 2.0e-02 | 2.0e-02 |',
        '| 2 | (2,) | 3.0e-05 | 3.0e-05 | 3.0e-05 |',
    ])

  def test_no_checkpoint_is_exit_2_and_one_line(self):
    result = _run(f'--checkpoint_dir={tempfile.mkdtemp()}')
    self.assertEqual(result.returncode, 2)
    errors = [line for line in result.stderr.splitlines()
              if line.startswith('ERROR')]
    self.assertLen(errors, 1)
    self.assertIn('no checkpoint there', errors[0])


if __name__ == '__main__':
  absltest.main()
