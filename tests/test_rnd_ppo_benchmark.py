"""benchmarks/rnd_ppo_benchmark.py's reading of float32 eval summaries."""

from absl.testing import absltest
import numpy as np

import benchmark_scripts  # pylint: disable=g-bad-import-order

rnd_ppo_benchmark = benchmark_scripts.load('rnd_ppo_benchmark')


class ReachesTest(absltest.TestCase):

  def test_nine_of_ten_stored_as_float32_reaches_point_nine(self):
    stored = float(np.float32(9) / np.float32(10))
    self.assertLess(stored, 0.9)  # what the summary holds
    self.assertTrue(rnd_ppo_benchmark.reaches(stored, 0.9))

  def test_below_the_target_does_not(self):
    self.assertFalse(rnd_ppo_benchmark.reaches(
        float(np.float32(8) / np.float32(10)), 0.9))
    self.assertFalse(rnd_ppo_benchmark.reaches(-110.5, -110.0))
    self.assertTrue(rnd_ppo_benchmark.reaches(-110.0, -110.0))


if __name__ == '__main__':
  absltest.main()
