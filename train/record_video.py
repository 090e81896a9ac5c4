#!/usr/bin/env python3
r"""Records evaluation episodes of a trained policy as a GIF (or MP4).

  python train/record_video.py --root_dir=runs/ppo_cartpole \
      --output=cartpole.gif --num_episodes=3

Rebuilds the run's environment from root_dir/operative_config.gin (the
experiment's `env_loader` binding, with render_mode='rgb_array') and plays
root_dir/policies/greedy_policy. An --output ending in .mp4 is written with
opencv's mp4v encoder; anything else is an animated GIF. Frames go to the
file as they are rendered (memory does not grow with episode length), and
one line per episode reports its frames and return.
"""

import os
import sys

from absl import app
from absl import flags
from absl import logging

from tfa_explore.process import console

console.configure(__name__)  # before TensorFlow loads: see console

# Rendering envs with pygame (gymnasium's classic control) calls
# pygame.init(), which opens SDL's audio device too: on a machine without a
# sound card libasound printed 8 "ALSA lib ..." lines per episode. SDL reads
# SDL_AUDIODRIVER when audio starts; 'dummy' is its silent driver. The
# video device is never needed either (frames are drawn into arrays), and
# pygame-ce's SDL probes it with "error: XDG_RUNTIME_DIR is invalid" on a
# machine without a desktop session. The user's own settings win.
os.environ.setdefault('SDL_AUDIODRIVER', 'dummy')
os.environ.setdefault('SDL_VIDEODRIVER', 'dummy')

# pylint: disable=g-import-not-at-top,wrong-import-position
import gin
import tensorflow as tf

from tfa_explore.experiments import run_kit
from tfa_explore.experiments import runner
from tfa_explore.utils import files
from tfa_explore.utils import video

_ROOT_DIR = flags.DEFINE_string(
    'root_dir', None, 'Directory of a finished (or running) training run.',
    required=True)
_OUTPUT = flags.DEFINE_string(
    'output', None, 'Video file (.gif or .mp4); default '
    'root_dir/videos/greedy_policy.gif.')
_NUM_EPISODES = flags.DEFINE_integer('num_episodes', 3, 'Episodes recorded.',
                                     lower_bound=1)
_POLICY = flags.DEFINE_string(
    'policy', run_kit.GREEDY_POLICY,
    'Export under root_dir/policies to play (greedy_policy or '
    'collect_policy).')
_SEED = flags.DEFINE_integer('seed', 0, 'Env seed of the first episode.')
_FPS = flags.DEFINE_float('fps', 30.0, 'Frames per second of the video.')
flags.register_validator('fps', lambda fps: fps > 0,
                         message='--fps must be positive.')
flags.adopt_module_key_flags(console)  # --help lists --verbose


def load_env_loader(root_dir: str):
  """The run's env loader, rebuilt from its operative config."""
  config_path = os.path.join(root_dir, run_kit.OPERATIVE_CONFIG)
  if not os.path.exists(config_path):
    raise FileNotFoundError(f'{config_path} not found: is {root_dir} a '
                            'train_eval run directory?')
  gin.clear_config()
  # skip_unknown: the operative config also lists TF-Agents internals that
  # need not be registered to rebuild the env.
  gin.parse_config_file(config_path, skip_unknown=True)
  return runner.experiment_setting('env_loader').scoped_configurable_fn


def record(root_dir: str, output: str, num_episodes: int, policy_name: str,
           seed: int, fps: float) -> str:
  """Plays `num_episodes` episodes of the run's policy into `output`.

  Episode i uses env seed `seed + i`; fps // 3 black frames (at least one)
  separate episodes. Logs one line per episode as it is written.

  Returns:
    The path written.
  """
  env_loader = load_env_loader(root_dir)
  policy_path = files.previous_export(
      os.path.join(root_dir, run_kit.POLICY_DIR, policy_name))
  policy = tf.saved_model.load(policy_path)
  with video.open_video(output, fps) as writer:
    for i in range(num_episodes):
      if i:
        writer.write_blank(max(1, int(fps // 3)))
      episode = video.record_episode(policy, env_loader, seed + i,
                                     writer.write)
      logging.info('Episode %d/%d: %d frames, return %.1f (seed %d).', i + 1,
                   num_episodes, episode.num_frames, episode.episode_return,
                   seed + i)
  return output


def main(argv):
  if len(argv) > 1:
    raise SystemExit(f'Unexpected arguments: {argv[1:]}')
  output = _OUTPUT.value or os.path.join(_ROOT_DIR.value, 'videos',
                                         f'{_POLICY.value}.gif')
  # The first line before the env and the policy load (seconds when busy).
  logging.info('Starting: %d episode(s) of %s to %s.', _NUM_EPISODES.value,
               os.path.join(_ROOT_DIR.value, run_kit.POLICY_DIR, _POLICY.value),
               output)
  try:
    path = record(_ROOT_DIR.value, output, _NUM_EPISODES.value, _POLICY.value,
                  _SEED.value, _FPS.value)
  except FileNotFoundError as e:
    print(f'ERROR: {e}', file=sys.stderr)
    sys.exit(2)
  print(path)


if __name__ == '__main__':
  app.run(main, flags_parser=runner.parse_flags)
