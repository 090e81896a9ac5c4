"""R2D2's bootstrapped heads explore deep where epsilon-greedy does not (slow).

bsuite's deep_sea at size 10 (`bsuite/deep_sea/0`): only ten "right"
moves in a row, each cell with its own action mapping, reach the
treasure; a random walk does so once in 2^10 episodes. The shipped file
`gin/r2d2_bootstrap/bsuite_deep_sea.gin` trains through the whole
single-machine pipeline for 800 episodes with seed 0 and must reach the
treasure in at least 100 of them, as bsuite's own test asks of a size
(fewer than 90% bad episodes); on the same budget the file's base, plain
R2D2 (`gin/r2d2/bsuite_deep_sea.gin`), must not (its best run of sweep 3
reached it in 0 of 1,000). Its runs at 1,000 episodes found the treasure
first at episodes 314-403 and walked it every episode after
(benchmarks/results/bsuite/, sweep 4); the actor thread makes a run's
interleaving vary, hence the margin.
"""

import os
import shutil
import tempfile

from absl.testing import absltest
import gin
import pytest

from tfa_explore import config
from tfa_explore.environments import bsuite_journal

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EPISODES = 800


def _good_episodes(gin_file):
  root_dir = tempfile.mkdtemp()
  try:
    gin.clear_config()
    config.run(root_dir, [os.path.join(REPO_ROOT, gin_file)], [
        "BSUITE_ID = 'bsuite/deep_sea/0'", f'NUM_EPISODES = {EPISODES}',
        'r2d2.Settings.checkpoint_interval = 1000000000'])
    episodes = bsuite_journal.read_journals(root_dir)['deep_sea/0']
    return sum(1 for episode in episodes[:EPISODES]
               if episode['return'] > 0.5)
  finally:
    gin.clear_config()
    shutil.rmtree(root_dir, ignore_errors=True)


@pytest.mark.slow
class BootstrappedDeepSeaTest(absltest.TestCase):

  def test_bootstrapped_heads_find_and_keep_the_treasure(self):
    self.assertGreaterEqual(
        _good_episodes('gin/r2d2_bootstrap/bsuite_deep_sea.gin'),
        EPISODES // 10)

  def test_epsilon_greedy_r2d2_does_not(self):
    self.assertLess(_good_episodes('gin/r2d2/bsuite_deep_sea.gin'),
                    EPISODES // 10)


if __name__ == '__main__':
  absltest.main()
