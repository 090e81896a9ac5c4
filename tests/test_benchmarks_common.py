"""benchmarks/common.py: the CPU description every speed figure names, and
the reading of float32 eval summaries against a target."""

import os
import sys
import tempfile
from unittest import mock

from absl.testing import absltest
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'benchmarks'))
import common  # pylint: disable=g-import-not-at-top,wrong-import-position


class CpuDescriptionTest(absltest.TestCase):

  def _cpuinfo(self, text):
    handle, path = tempfile.mkstemp(prefix='cpuinfo_')
    with os.fdopen(handle, 'w') as f:
      f.write(text)
    self.addCleanup(os.remove, path)
    return path

  def test_model_and_the_vector_extensions_it_has(self):
    path = self._cpuinfo(
        'processor\t: 0\nmodel name\t: Some CPU 7\n'
        'flags\t\t: fpu sse4_2 avx avx2 fma\n\n'
        'processor\t: 1\nmodel name\t: Some CPU 7\n'
        'flags\t\t: fpu sse4_2 avx avx2 fma\n')
    with mock.patch.dict(os.environ, {}, clear=True):
      text = common.cpu_description(path)
    self.assertStartsWith(text, 'Some CPU 7 (')
    self.assertIn('vector extensions: sse4_2 avx avx2 fma)', text)
    self.assertNotIn('avx512', text)
    self.assertNotIn('set:', text)

  def test_a_cap_on_the_instruction_set_is_named(self):
    path = self._cpuinfo('model name\t: Some CPU\nflags\t: avx2 avx512f\n')
    with mock.patch.dict(os.environ, {'ONEDNN_MAX_CPU_ISA': 'AVX2'},
                         clear=True):
      text = common.cpu_description(path)
    self.assertIn('avx2 avx512f', text)
    self.assertTrue(text.endswith('set: ONEDNN_MAX_CPU_ISA=AVX2'))

  def test_an_unreadable_cpuinfo_says_so(self):
    text = common.cpu_description('/nonexistent/cpuinfo')
    self.assertStartsWith(text, 'CPU model unknown (')
    self.assertIn('not read', text)


class ReachesTest(absltest.TestCase):

  def test_nine_of_ten_stored_as_float32_reaches_point_nine(self):
    stored = float(np.float32(9) / np.float32(10))
    self.assertLess(stored, 0.9)  # what the summary holds
    self.assertTrue(common.reaches(stored, 0.9))

  def test_below_the_target_does_not(self):
    self.assertFalse(common.reaches(float(np.float32(8) / np.float32(10)),
                                    0.9))
    self.assertFalse(common.reaches(-110.5, -110.0))
    self.assertTrue(common.reaches(-110.0, -110.0))


if __name__ == '__main__':
  absltest.main()
