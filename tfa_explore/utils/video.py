"""Renders episodes of a saved policy and writes them as GIF or MP4."""

import os
from typing import Callable, List, Sequence

import numpy as np
import tensorflow as tf
from tf_agents.environments import py_environment


def _batched_tensors(time_step):
  return tf.nest.map_structure(lambda x: tf.convert_to_tensor(x)[None],
                               time_step)


def render_episodes(policy, env_loader: Callable[..., py_environment.PyEnvironment],
                    num_episodes: int, seed: int,
                    max_steps_per_episode: int = 100_000
                   ) -> List[List[np.ndarray]]:
  """Runs `num_episodes` episodes of `policy`, returning their RGB frames.

  Args:
    policy: A loaded PolicySaver SavedModel (or any TF-Agents policy) with
      `action(time_step, policy_state)` and `get_initial_state(batch_size)`.
    env_loader: Called as `env_loader(seed=..., render_mode='rgb_array')`.
    num_episodes: Episode i uses seed `seed + i`.
    seed: First episode's env seed.
    max_steps_per_episode: Safety stop for envs without a time limit.

  Returns:
    One list of HxWx3 uint8 frames per episode (reset frame included).
  """
  episodes = []
  for episode in range(num_episodes):
    env = env_loader(seed=seed + episode, render_mode='rgb_array')
    try:
      time_step = env.reset()
      policy_state = policy.get_initial_state(1)
      frames = [np.asarray(env.render(), dtype=np.uint8)]
      for _ in range(max_steps_per_episode):
        action_step = policy.action(_batched_tensors(time_step), policy_state)
        policy_state = action_step.state
        action = tf.nest.map_structure(lambda a: a.numpy()[0],
                                       action_step.action)
        time_step = env.step(action)
        frames.append(np.asarray(env.render(), dtype=np.uint8))
        if time_step.is_last():
          break
    finally:
      env.close()
    episodes.append(frames)
  return episodes


def write_video(frames: Sequence[np.ndarray], path: str, fps: float) -> str:
  """Writes frames to `path`: MP4 (opencv, mp4v) if it ends in .mp4, else GIF.

  Returns:
    The path written.
  """
  if not frames:
    raise ValueError('No frames to write.')
  directory = os.path.dirname(os.path.abspath(path))
  os.makedirs(directory, exist_ok=True)
  if path.lower().endswith('.mp4'):
    import cv2  # pylint: disable=g-import-not-at-top
    height, width = frames[0].shape[:2]
    writer = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*'mp4v'), fps,
                             (width, height))
    if not writer.isOpened():
      raise RuntimeError(f'opencv could not open an mp4v writer for {path}.')
    try:
      for frame in frames:
        writer.write(cv2.cvtColor(np.ascontiguousarray(frame[..., :3]),
                                  cv2.COLOR_RGB2BGR))
    finally:
      writer.release()
    return path
  from PIL import Image  # pylint: disable=g-import-not-at-top
  images = [Image.fromarray(np.asarray(frame[..., :3])) for frame in frames]
  images[0].save(path, format='GIF', save_all=True,
                 append_images=images[1:], duration=int(round(1000 / fps)),
                 loop=0)
  return path
