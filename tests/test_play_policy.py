"""train/play_policy.py plays an exported policy: returns, GIF / MP4."""

import os
import shutil
import subprocess
import sys
import tempfile

from absl.testing import absltest
import cv2
import gin
import numpy as np
from PIL import Image
import pytest

from tfa_explore import config
from tfa_explore.utils import video
import test_console  # pylint: disable=g-bad-import-order

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.path.join(REPO_ROOT, 'train', 'play_policy.py')
CARTPOLE_GIN = os.path.join(REPO_ROOT, 'gin', 'ppo', 'cartpole.gin')


@pytest.mark.integration
class PlayPolicyTest(absltest.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.root_dir = tempfile.mkdtemp(prefix='tfa_explore_video_')
    gin.clear_config()
    # A short in-process run is enough: the video only needs a policy.
    config.run(cls.root_dir, [CARTPOLE_GIN], [
        'NUM_ENV_STEPS = 128',
        'on_policy.Settings.num_envs = 2',
        'on_policy.Settings.rollout_length = 64',
        'on_policy.Settings.num_eval_episodes = 1',
        'ppo.ppo_clip_agent.num_epochs = 1',
    ])
    gin.clear_config()

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.root_dir, ignore_errors=True)
    super().tearDownClass()

  def play(self, *args, root_dir=True):
    flags = [f'--root_dir={self.root_dir}'] if root_dir else []
    return subprocess.run(
        [sys.executable, BINARY, *flags, *args],
        capture_output=True, text=True, timeout=300, cwd=REPO_ROOT,
        check=False)

  def episode_lines(self, stdout):
    return [line for line in stdout.splitlines()
            if line.startswith('episode ')]

  def run_files(self):
    return {os.path.join(d, f) for d, _, names in os.walk(self.root_dir)
            for f in names}

  def test_returns_without_video(self):
    before = self.run_files()
    result = self.play('--num_episodes=2', '--seed=5')
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    episodes = self.episode_lines(result.stdout)
    self.assertLen(episodes, 2)
    self.assertTrue(episodes[0].startswith('episode 1/2 (seed 5): return '))
    self.assertTrue(episodes[1].startswith('episode 2/2 (seed 6): return '))
    returns = [float(line.split('return ')[1].split(',')[0])
               for line in episodes]
    # CartPole pays 1 per step: each return is its episode's step count.
    steps = [int(line.split(', ')[1].split(' steps')[0]) for line in episodes]
    self.assertEqual(returns, [float(s) for s in steps])
    self.assertIn(f'mean return {sum(returns) / 2:g} over 2 episode(s)',
                  result.stdout)
    self.assertNotIn('video:', result.stdout)
    self.assertEqual(self.run_files(), before)  # no video, nothing written

  def test_same_seed_same_returns(self):
    first = self.play('--num_episodes=1', '--seed=3')
    second = self.play('--num_episodes=1', '--seed=3')
    self.assertEqual(first.returncode, 0, first.stderr[-3000:])
    self.assertEqual(self.episode_lines(first.stdout),
                     self.episode_lines(second.stdout))

  def test_copied_export(self):
    # What benchmarks/results/policies/<agent>_<game>/ holds: the export
    # and the run's operative config beside it, no run directory.
    copy = tempfile.mkdtemp(prefix='tfa_explore_export_')
    self.addCleanup(shutil.rmtree, copy, ignore_errors=True)
    shutil.copytree(os.path.join(self.root_dir, 'policies', 'greedy_policy'),
                    os.path.join(copy, 'greedy_policy'))
    shutil.copy(os.path.join(self.root_dir, 'operative_config.gin'), copy)
    result = self.play(f'--policy_dir={copy}/greedy_policy',
                       '--num_episodes=1', '--seed=3', root_dir=False)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    from_run = self.play('--num_episodes=1', '--seed=3')
    self.assertEqual(self.episode_lines(result.stdout),
                     self.episode_lines(from_run.stdout))
    os.remove(os.path.join(copy, 'operative_config.gin'))
    result = self.play(f'--policy_dir={copy}/greedy_policy', root_dir=False)
    self.assertEqual(result.returncode, 2)
    self.assertIn('No operative_config.gin beside', result.stderr)
    self.assertEqual(len(result.stderr.strip().splitlines()), 1,
                     result.stderr)

  def test_gif(self):
    output = os.path.join(self.root_dir, 'videos', 'two.gif')
    result = self.play(f'--output={output}', '--num_episodes=2', '--fps=50')
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    self.assertIn(f'video: {output}', result.stdout)
    lines = result.stderr.splitlines()
    # Our lines only, the first one early; no ALSA lines from pygame's
    # audio start (SDL_AUDIODRIVER).
    self.assertIn(' Starting: 2 episode(s) of ', lines[0])
    self.assertNotIn('ALSA', result.stderr)
    self.assertEqual([line for line in lines if line.strip() and
                      not test_console.OUR_LINE.match(line)], [])
    episodes = self.episode_lines(result.stdout)
    self.assertLen(episodes, 2)
    self.assertIn('(seed 1)', episodes[1])
    # The reset frame and one per step.
    frames = [int(line.split(', ')[1].split(' steps')[0]) + 1
              for line in episodes]
    self.assertFalse(os.path.exists(
        os.path.join(self.root_dir, 'videos', 'two.partial.gif')))
    with Image.open(output) as gif:
      self.assertEqual(gif.format, 'GIF')
      # CartPole's rgb_array frames are 600x400.
      self.assertEqual(gif.size, (600, 400))
      # One GIF frame per frame written (identical ones too): each
      # episode's reset frame and one per step, and 16 separator frames
      # (50 fps // 3), 20 ms each.
      self.assertEqual(gif.n_frames, sum(frames) + 16)
      total_ms = 0
      for index in range(gif.n_frames):
        gif.seek(index)
        total_ms += gif.info['duration']
      self.assertEqual(total_ms, 20 * gif.n_frames)

  def test_mp4(self):
    output = os.path.join(self.root_dir, 'videos', 'one.mp4')
    result = self.play(f'--output={output}', '--num_episodes=1')
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

  def test_policy_or_run_required(self):
    result = self.play(root_dir=False)
    self.assertEqual(result.returncode, 2)
    self.assertIn('policy_dir', result.stderr)


class WriterTest(absltest.TestCase):
  """The streaming writers, on made-up frames."""

  def make_dir(self):
    # Not create_tempdir: it needs absl's flags parsed, which pytest skips.
    directory = tempfile.mkdtemp(prefix='tfa_explore_writer_')
    self.addCleanup(shutil.rmtree, directory, ignore_errors=True)
    return directory

  def frames(self, count):
    """`count` 40x60 frames, a bar moving right; the last two identical."""
    for index in range(count):
      frame = np.full((40, 60, 3), 255, dtype=np.uint8)
      frame[10:30, 5 * min(index, count - 2):][:, :8] = (200, 30, 10)
      yield frame

  def test_gif_frames_and_pixels(self):
    path = os.path.join(self.make_dir(), 'a', 'bars.gif')
    written = list(self.frames(6))
    self.assertEqual(video.write_video(iter(written), path, fps=25), path)
    with Image.open(path) as gif:
      self.assertEqual(gif.n_frames, 6)
      self.assertEqual(gif.info['loop'], 0)
      for index, expected in enumerate(written):
        gif.seek(index)
        self.assertEqual(gif.info['duration'], 40)
        np.testing.assert_array_equal(np.asarray(gif.convert('RGB')),
                                      expected)

  def test_mp4_frame_count(self):
    path = os.path.join(self.make_dir(), 'bars.mp4')
    video.write_video(self.frames(5), path, fps=10)
    capture = cv2.VideoCapture(path)
    try:
      self.assertEqual(int(capture.get(cv2.CAP_PROP_FRAME_COUNT)), 5)
    finally:
      capture.release()

  def test_failure_leaves_no_file(self):
    directory = self.make_dir()
    path = os.path.join(directory, 'broken.gif')
    with self.assertRaisesRegex(ValueError, 'Frame of shape'):
      with video.open_video(path, fps=10) as writer:
        writer.write(np.zeros((4, 4, 3), np.uint8))
        writer.write(np.zeros((5, 4, 3), np.uint8))
    with self.assertRaisesRegex(ValueError, 'No frames'):
      video.write_video([], path, fps=10)
    self.assertEqual(os.listdir(directory), [])

  def test_fps_must_be_positive(self):
    with self.assertRaisesRegex(ValueError, 'fps must be positive'):
      video.write_video(self.frames(2), os.path.join(
          self.make_dir(), 'x.gif'), fps=0)


if __name__ == '__main__':
  absltest.main()
