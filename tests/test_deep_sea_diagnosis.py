"""The deep_sea_stochastic diagnosis tools of benchmarks/: the ablated env
(deep_sea_ablation.py) and the journal readout (bsuite_readouts.py)."""

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np

import benchmark_scripts  # pylint: disable=g-bad-import-order

ablation = benchmark_scripts.load('deep_sea_ablation')
readouts = benchmark_scripts.load('bsuite_readouts')

ID = 'bsuite/deep_sea_stochastic/0'  # size 10


def walk_right(env):
  """(return, reached the treasure) of one episode always moving right."""
  sea = env.gym.bsuite_env
  env.reset()
  found = sea._denoised_return  # pylint: disable=protected-access
  total, time_step = 0.0, None
  while time_step is None or not time_step.is_last():
    right = int(sea._action_mapping[sea._row, sea._column])  # pylint: disable=protected-access
    time_step = env.step(np.asarray(right, np.int64))
    total += float(time_step.reward)
  return total, sea._denoised_return > found  # pylint: disable=protected-access


class AblatedEnvTest(parameterized.TestCase):

  @parameterized.parameters(('none', False, False), ('noise', True, False),
                            ('slips', False, True), ('both', True, True))
  def test_keeps_what_it_says(self, keep, noisy, slippery):
    env = ablation.ablated_deep_sea(ID, keep, seed=3, record=False)
    walks = [walk_right(env) for _ in range(60)]
    # Without slips every right walk reaches the treasure; with them
    # (1/10 per move, 9 moves to make) about 61% miss it.
    short = sum(not reached for _, reached in walks)
    if slippery:
      self.assertGreater(short, 15)
    else:
      self.assertEqual(short, 0)
    # Without noise a walk that reaches the treasure earns exactly 1 less
    # its 10 moves' cost of 0.001 each; one that misses it (ending next to
    # the last column, where no noise is added) earns minus the cost.
    exact = [abs(ret - (0.99 if reached else -0.01)) < 1e-5  # float32
             for ret, reached in walks]
    if noisy:
      self.assertLess(sum(e for e, (_, r) in zip(exact, walks) if r), 3)
    else:
      self.assertTrue(all(exact))


class StochasticRowTest(absltest.TestCase):

  def episodes(self, bad, good):
    return [{'return': 0.0, 'info': {'total_bad_episodes': float(b),
                                     'denoised_return': float(g)}}
            for b, g in zip(bad, good)]

  def test_bar_is_crossed_at_the_first_episode_from_100_below_it(self):
    # 90 bad then all good: the running bad share drops below 0.8 at
    # episode 113 (90 / 113 = 0.796), never before episode 100.
    bad = [1] * 90 + [0] * 110
    good = [0] * 90 + [1] * 110
    row = readouts.deep_sea_stochastic_row(
        'agent', 'deep_sea_stochastic/0', self.episodes(bad, good), None)
    cells = [c.strip() for c in row.strip('|').split('|')]
    self.assertEqual(cells[:5], ['agent', '10', '200', '110', '0.45'])
    self.assertEqual(cells[-1], '113')

  def test_never_crossed(self):
    row = readouts.deep_sea_stochastic_row(
        'agent', 'deep_sea_stochastic/0',
        self.episodes([1] * 150, [0] * 150), None)
    self.assertTrue(row.endswith('| - |'))


if __name__ == '__main__':
  absltest.main()
