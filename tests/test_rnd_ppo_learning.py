"""RND-PPO learns with the shipped gin files (slow).

Fixed seed, deterministic TF ops, a step budget and thresholds:

* MountainCar, the gin file's own budget (100k env steps): at least one
  training episode ended at the flag (`Metrics/TerminatedEpisodes` > 0;
  MountainCar only terminates there) and the greedy policy beat -200 (the
  time-limit return) in some evaluation.
* MiniGrid MultiRoom (6 rooms), the shortest task its PPO twin does not
  solve in 1M env steps (docs/rnd_ppo.md; its greedy success is 0.00 at
  every evaluation there): with the first-visit gate the greedy policy
  reaches the goal in >= 5 of 10 episodes of some evaluation within
  153,600 env steps. Two runs of this test on one machine gave 0.4, 0.7,
  0.8 and 0.4, 0.6, 1.0 at the three evaluations: the run is not
  bit-reproducible even with deterministic ops (the episode counts differ
  from the first evaluation on), hence the margin.
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

from tfa_explore import config

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MOUNTAINCAR_GIN = os.path.join(REPO_ROOT, 'gin', 'rnd_ppo', 'mountaincar.gin')
MULTIROOM_GIN = os.path.join(REPO_ROOT, 'gin', 'rnd_ppo',
                             'minigrid_multiroom_n6s5.gin')
MULTIROOM_BUDGET = 153600  # env steps: 75 iterations of 16 envs x 128
MULTIROOM_SUCCESS = 0.5    # greedy success of some eval; the twin's best in 1M: 0.0
TIME_LIMIT_RETURN = -200.0  # Never reaching the flag in 200 steps.


def read_scalars(directory, tag):
  points = []
  for path in glob.glob(os.path.join(directory, 'events.out.*')):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        if value.tag == tag:
          points.append((event.step, float(tf.make_ndarray(value.tensor))))
  return sorted(points)


class _LearningTest(absltest.TestCase):

  def train(self, gin_file, bindings):
    """Trains with deterministic ops in a temporary root; returns its logs.

    Returns:
      `(result of config.run, seconds, root_dir)`.
    """
    tf.config.experimental.enable_op_determinism()
    root_dir = tempfile.mkdtemp(prefix='tfa_explore_rnd_ppo_learning_')
    self.addCleanup(shutil.rmtree, root_dir, ignore_errors=True)
    gin.clear_config()
    self.addCleanup(gin.clear_config)
    start = time.time()
    result = config.run(root_dir, [gin_file], bindings)
    return result, time.time() - start, root_dir


@pytest.mark.slow
@pytest.mark.timeout(1200)  # minutes-long by design; pytest.ini caps other tests at 900 s
class RndPpoMountainCarLearningTest(_LearningTest):

  def test_reaches_the_flag(self):
    # The gin file's NUM_ENV_STEPS is the budget; only SEED is pinned here.
    result, seconds, root_dir = self.train(MOUNTAINCAR_GIN, ['SEED = 0'])
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


@pytest.mark.slow
@pytest.mark.timeout(1200)
class RndPpoMultiRoomLearningTest(_LearningTest):

  def test_greedy_policy_reaches_the_goal(self):
    result, seconds, root_dir = self.train(
        MULTIROOM_GIN, ['SEED = 0', f'NUM_ENV_STEPS = {MULTIROOM_BUDGET}'])
    terminated = read_scalars(os.path.join(root_dir, 'train'),
                              'Metrics/TerminatedEpisodes')
    success = read_scalars(os.path.join(root_dir, 'eval'),
                           'Metrics/SuccessRate')
    best = max(value for _, value in success)
    message = (f'RND-PPO MultiRoom: {int(terminated[-1][1])} goal episodes '
               f'in training; greedy success {[v for _, v in success]} '
               f'at {[s for s, _ in success]} env steps, in {seconds:.0f} s')
    logging.info(message)
    print(message)
    self.assertLessEqual(result['EnvironmentSteps'], MULTIROOM_BUDGET + 2048)
    self.assertGreaterEqual(best, MULTIROOM_SUCCESS, message)


if __name__ == '__main__':
  absltest.main()
