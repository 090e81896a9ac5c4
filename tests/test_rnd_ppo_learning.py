"""RND-PPO reaches MountainCar's flag with the shipped gin file (slow).

Fixed seed, deterministic TF ops, the gin file's own step budget (100k env
steps) and two thresholds: at least one training episode ended at the flag
(`Metrics/TerminatedEpisodes` > 0; MountainCar only terminates there) and
the greedy policy beat -200 (the time-limit return) in some evaluation.
"""

import glob
import os
import shutil
import tempfile
import time

from absl import logging
from absl.testing import absltest
import gin
import pytest
import tensorflow as tf

from tfa_explore.experiments import runner

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MOUNTAINCAR_GIN = os.path.join(REPO_ROOT, 'gin', 'rnd_ppo', 'mountaincar.gin')
TIME_LIMIT_RETURN = -200.0  # Never reaching the flag in 200 steps.


def read_scalars(directory, tag):
  points = []
  for path in glob.glob(os.path.join(directory, 'events.out.*')):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        if value.tag == tag:
          points.append((event.step, float(tf.make_ndarray(value.tensor))))
  return sorted(points)


@pytest.mark.slow
@pytest.mark.timeout(1200)  # minutes-long by design; pytest.ini caps unit tests at 300 s
class RndPpoMountainCarLearningTest(absltest.TestCase):

  def test_reaches_the_flag(self):
    tf.config.experimental.enable_op_determinism()
    root_dir = tempfile.mkdtemp(prefix='tfa_explore_rnd_ppo_mountaincar_')
    self.addCleanup(shutil.rmtree, root_dir, ignore_errors=True)
    gin.clear_config()
    self.addCleanup(gin.clear_config)
    start = time.time()
    # The gin file's NUM_ENV_STEPS is the budget; only SEED is pinned here.
    result = runner.run(root_dir, [MOUNTAINCAR_GIN], ['SEED = 0'])
    seconds = time.time() - start
    terminated = read_scalars(os.path.join(root_dir, 'train'),
                              'Metrics/TerminatedEpisodes')
    evals = read_scalars(os.path.join(root_dir, 'eval'),
                         'Metrics/AverageReturn')
    first_flag = next((step for step, value in terminated if value > 0), None)
    best_eval = max(value for _, value in evals)
    message = (f'RND-PPO MountainCar: {int(terminated[-1][1])} episodes at '
               f'the flag, first at {first_flag} env steps; best greedy '
               f'return {best_eval}, final {result["AverageReturn"]} after '
               f'{result["EnvironmentSteps"]} env steps in {seconds:.0f} s')
    logging.info(message)
    print(message)
    self.assertLessEqual(result['EnvironmentSteps'],
                         gin.query_parameter('%NUM_ENV_STEPS') + 2048)
    self.assertIsNotNone(first_flag, message)
    self.assertGreater(terminated[-1][1], 0, message)
    self.assertGreater(best_eval, TIME_LIMIT_RETURN, message)


if __name__ == '__main__':
  absltest.main()
