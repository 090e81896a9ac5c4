"""Plays episodes of a saved policy and streams their frames to GIF or MP4.

Frames go to the video file as they are rendered: a writer holds at most
the previous frame (the GIF writer, to encode only what changed), never an
episode (600x400x3 bytes per CartPole frame, ~360 MB per 500-step
episode).
"""

import contextlib
import dataclasses
import os
from typing import Callable, Iterable, Iterator, Optional, Tuple

import numpy as np
from PIL import GifImagePlugin
from PIL import Image
import tensorflow as tf
from tf_agents.environments import py_environment

# (top, bottom, left, right) of a frame region, bottom and right exclusive.
Box = Tuple[int, int, int, int]


class VideoWriter:
  """Writes HxWx3 uint8 frames to a video file one at a time.

  Subclasses encode: `_start` sees the first frame, `_write` every frame,
  `_finish` closes the file. Every frame must have the first one's shape.
  """

  def __init__(self, path: str, fps: float):
    if fps <= 0:
      raise ValueError(f'fps must be positive, not {fps}.')
    self.path = path
    self.fps = fps
    self.num_frames = 0
    self.frame_shape: Optional[Tuple[int, ...]] = None

  def write(self, frame: np.ndarray) -> None:
    """Encodes `frame` (RGB or RGBA; alpha is dropped) into the video."""
    frame = np.ascontiguousarray(np.asarray(frame, dtype=np.uint8)[..., :3])
    if self.frame_shape is None:
      self.frame_shape = frame.shape
      self._start(frame)
    elif frame.shape != self.frame_shape:
      raise ValueError(f'Frame of shape {frame.shape} in a video of '
                       f'{self.frame_shape} frames.')
    self._write(frame)
    self.num_frames += 1

  def write_blank(self, count: int) -> None:
    """Writes `count` black frames of the first frame's shape."""
    if self.frame_shape is None:
      raise ValueError('No frame written yet: blank frames have no size.')
    blank = np.zeros(self.frame_shape, dtype=np.uint8)
    for _ in range(count):
      self.write(blank)

  def close(self) -> None:
    """Finishes the file (also when no frame was written)."""
    self._finish()

  def _start(self, frame: np.ndarray) -> None:
    raise NotImplementedError

  def _write(self, frame: np.ndarray) -> None:
    raise NotImplementedError

  def _finish(self) -> None:
    raise NotImplementedError


class Mp4Writer(VideoWriter):
  """MP4 through opencv's VideoWriter (mp4v), which encodes as it goes."""

  def __init__(self, path: str, fps: float):
    super().__init__(path, fps)
    import cv2  # pylint: disable=g-import-not-at-top
    self._cv2 = cv2
    self._writer = None

  def _start(self, frame: np.ndarray) -> None:
    height, width = frame.shape[:2]
    self._writer = self._cv2.VideoWriter(
        self.path, self._cv2.VideoWriter_fourcc(*'mp4v'), self.fps,
        (width, height))
    if not self._writer.isOpened():
      raise RuntimeError(
          f'opencv could not open an mp4v writer for {self.path}.')

  def _write(self, frame: np.ndarray) -> None:
    self._writer.write(self._cv2.cvtColor(frame, self._cv2.COLOR_RGB2BGR))

  def _finish(self) -> None:
    if self._writer is not None:
      self._writer.release()


class GifWriter(VideoWriter):
  """An animated GIF (looping), one GIF frame per frame written.

  Pillow's `save(save_all=True)` holds every frame until the end (it
  converts `append_images` lazily but keeps each converted frame), so this
  writes the file itself with Pillow's GIF encoding helpers (`getheader`,
  `getdata`): the first frame whole, then each frame cropped to the region
  that changed since the previous one, with its own adaptive palette.
  """

  def __init__(self, path: str, fps: float):
    super().__init__(path, fps)
    self._duration_ms = int(round(1000 / fps))
    self._previous: Optional[np.ndarray] = None
    self._file = open(path, 'wb')  # pylint: disable=consider-using-with

  def _start(self, frame: np.ndarray) -> None:
    header, _ = GifImagePlugin.getheader(
        _to_palette(frame), info={'loop': 0, 'duration': self._duration_ms})
    self._file.write(b''.join(header))

  def _write(self, frame: np.ndarray) -> None:
    if self._previous is None:
      # The first frame uses the header's (global) palette.
      self._write_image(_to_palette(frame), (0, 0), local_palette=False)
    else:
      top, bottom, left, right = changed_box(self._previous, frame)
      self._write_image(_to_palette(frame[top:bottom, left:right]),
                        (left, top), local_palette=True)
    self._previous = frame.copy()

  def _write_image(self, image: Image.Image, offset: Tuple[int, int],
                   local_palette: bool) -> None:
    for data in GifImagePlugin.getdata(image, offset,
                                       duration=self._duration_ms,
                                       include_color_table=local_palette):
      self._file.write(data)

  def _finish(self) -> None:
    if self.num_frames:
      self._file.write(b';')  # GIF trailer
    self._file.close()


def _to_palette(frame: np.ndarray) -> Image.Image:
  """`frame` as a 'P' image with an adaptive palette (as Pillow's GIF save)."""
  return Image.fromarray(frame).convert('P', palette=Image.Palette.ADAPTIVE)


def changed_box(previous: np.ndarray, frame: np.ndarray) -> Box:
  """The smallest box holding every pixel that differs; 1x1 if none does."""
  changed = np.any(previous != frame, axis=-1)
  rows = np.flatnonzero(changed.any(axis=1))
  columns = np.flatnonzero(changed.any(axis=0))
  if not rows.size:
    return 0, 1, 0, 1
  return int(rows[0]), int(rows[-1]) + 1, int(columns[0]), int(columns[-1]) + 1


@contextlib.contextmanager
def open_video(path: str, fps: float) -> Iterator[VideoWriter]:
  """A VideoWriter for `path`: MP4 if it ends in .mp4, else GIF.

  Frames go to `<name>.partial<ext>` next to `path`, renamed to `path` when
  the block ends; an exception (or no frame at all) removes it instead, so
  `path` is never a truncated video.

  Args:
    path: The video file; its directory is created.
    fps: Frames per second, > 0.

  Yields:
    The writer.

  Raises:
    ValueError: if no frame was written.
  """
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  root, extension = os.path.splitext(path)
  partial = f'{root}.partial{extension}'
  writer_class = Mp4Writer if extension.lower() == '.mp4' else GifWriter
  writer = writer_class(partial, fps)
  try:
    yield writer
  except BaseException:
    writer.close()
    _remove(partial)
    raise
  writer.close()
  if not writer.num_frames:
    _remove(partial)
    raise ValueError('No frames to write.')
  os.replace(partial, path)


def _remove(path: str) -> None:
  with contextlib.suppress(FileNotFoundError):
    os.remove(path)


def write_video(frames: Iterable[np.ndarray], path: str, fps: float) -> str:
  """Writes frames (any iterable, consumed one at a time) to `path`.

  MP4 (opencv, mp4v) if `path` ends in .mp4, else an animated GIF.

  Returns:
    The path written.
  """
  with open_video(path, fps) as writer:
    for frame in frames:
      writer.write(frame)
  return path


@dataclasses.dataclass(frozen=True)
class Episode:
  """What one recorded episode added to the video."""
  num_frames: int  # the reset frame and one per step
  episode_return: float  # sum of the rewards (of all components)


def _batched_tensors(time_step):
  return tf.nest.map_structure(lambda x: tf.convert_to_tensor(x)[None],
                               time_step)


def play_episode(policy, env: py_environment.PyEnvironment,
                 write_frame: Optional[Callable[[np.ndarray], None]],
                 max_steps: int = 100_000) -> Episode:
  """Plays one episode of `policy`, handing each rendered frame on.

  Args:
    policy: A loaded PolicySaver SavedModel (or any TF-Agents policy) with
      `action(time_step, policy_state)` and `get_initial_state(batch_size)`.
    env: An unbatched env; made with render_mode='rgb_array' unless
      `write_frame` is None.
    write_frame: Called with each HxWx3 frame, the reset frame first; None
      plays without rendering.
    max_steps: Safety stop for envs without a time limit.

  Returns:
    The episode's frame count and return.
  """
  time_step = env.reset()
  policy_state = policy.get_initial_state(1)
  if write_frame:
    write_frame(env.render())
  num_frames, episode_return = 1, 0.0
  for _ in range(max_steps):
    action_step = policy.action(_batched_tensors(time_step), policy_state)
    policy_state = action_step.state
    action = tf.nest.map_structure(lambda a: a.numpy()[0], action_step.action)
    time_step = env.step(action)
    episode_return += float(np.sum(time_step.reward))
    if write_frame:
      write_frame(env.render())
    num_frames += 1
    if time_step.is_last():
      break
  return Episode(num_frames, episode_return)


def record_episode(policy,
                   env_loader: Callable[..., py_environment.PyEnvironment],
                   seed: int,
                   write_frame: Optional[Callable[[np.ndarray], None]],
                   max_steps: int = 100_000) -> Episode:
  """`play_episode` in a fresh env from `env_loader`, closed afterwards.

  Args:
    policy: As for `play_episode`.
    env_loader: Called as `env_loader(seed=seed, render_mode='rgb_array')`,
      or `env_loader(seed=seed)` when `write_frame` is None.
    seed: The env's seed.
    write_frame: As for `play_episode`.
    max_steps: As for `play_episode`.

  Returns:
    The episode's frame count and return.
  """
  if write_frame:
    env = env_loader(seed=seed, render_mode='rgb_array')
  else:
    env = env_loader(seed=seed)
  try:
    return play_episode(policy, env, write_frame, max_steps)
  finally:
    env.close()
