"""train/record_video.py turns a run's saved policy into GIF / MP4."""

import os
import shutil
import subprocess
import sys
import tempfile

from absl.testing import absltest
import cv2
import gin
from PIL import Image
import pytest

from tfa_explore.experiments import runner

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.path.join(REPO_ROOT, 'train', 'record_video.py')
CARTPOLE_GIN = os.path.join(REPO_ROOT, 'gin', 'ppo', 'cartpole.gin')


@pytest.mark.integration
class RecordVideoTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.root_dir = tempfile.mkdtemp(prefix='tfa_explore_video_')
    gin.clear_config()
    # A short in-process run is enough: the video only needs a policy.
    runner.run(cls.root_dir, [CARTPOLE_GIN], [
        'NUM_ENV_STEPS = 128',
        'on_policy.train_eval.num_envs = 2',
        'on_policy.train_eval.rollout_length = 64',
        'on_policy.train_eval.num_eval_episodes = 1',
        'ppo.ppo_clip_agent.num_epochs = 1',
    ])
    gin.clear_config()

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.root_dir, ignore_errors=True)
    super().tearDownClass()

  def record(self, *args):
    return subprocess.run(
        [sys.executable, BINARY, f'--root_dir={self.root_dir}', *args],
        capture_output=True, text=True, timeout=300, cwd=REPO_ROOT,
        check=False)

  def test_gif(self):
    output = os.path.join(self.root_dir, 'videos', 'two.gif')
    result = self.record(f'--output={output}', '--num_episodes=2', '--fps=50')
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    self.assertEqual(result.stdout.strip(), output)
    steps = [int(line.rsplit(' ', 2)[-2]) for line in result.stderr.splitlines()
             if 'Episode ' in line and ' steps.' in line]
    self.assertLen(steps, 2)
    with Image.open(output) as gif:
      self.assertEqual(gif.format, 'GIF')
      # CartPole's rgb_array frames are 600x400.
      self.assertEqual(gif.size, (600, 400))
      # Each episode: reset frame + one per step; 16 separator frames (50
      # fps // 3), 20 ms each. Pillow merges identical consecutive frames
      # (adding up their durations), so count time, not frames.
      expected_frames = sum(steps) + 2 + 16
      self.assertGreater(gif.n_frames, 2)
      total_ms = 0
      for index in range(gif.n_frames):
        gif.seek(index)
        total_ms += gif.info['duration']
      self.assertEqual(total_ms, 20 * expected_frames)

  def test_mp4(self):
    output = os.path.join(self.root_dir, 'videos', 'one.mp4')
    result = self.record(f'--output={output}', '--num_episodes=1')
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    capture = cv2.VideoCapture(output)
    try:
      self.assertTrue(capture.isOpened())
      ok, frame = capture.read()
      self.assertTrue(ok)
      self.assertEqual(frame.shape, (400, 600, 3))
      self.assertGreater(int(capture.get(cv2.CAP_PROP_FRAME_COUNT)), 1)
    finally:
      capture.release()

  def test_not_a_run_directory(self):
    empty = tempfile.mkdtemp(prefix='tfa_explore_video_empty_')
    self.addCleanup(shutil.rmtree, empty, ignore_errors=True)
    result = subprocess.run(
        [sys.executable, BINARY, f'--root_dir={empty}'], capture_output=True,
        text=True, timeout=300, cwd=REPO_ROOT, check=False)
    self.assertEqual(result.returncode, 2)
    self.assertIn('operative_config.gin not found', result.stderr)


if __name__ == '__main__':
  absltest.main()
