#!/usr/bin/env python3
r"""Plays a trained policy: prints each episode's return, can write a video.

  python train/play_policy.py \
      --policy_dir=benchmarks/results/policies/ppo_pong/greedy_policy \
      --num_episodes=8 --seed=0 [--output=pong.mp4]
  python train/play_policy.py --root_dir=runs/ppo_cartpole --output=cp.gif

The policy is a PolicySaver export: `--policy_dir` names one, `--root_dir`
names a train_eval run and plays its root_dir/policies/<--policy>. The env
is rebuilt from the operative_config.gin beside the export (an export
directory copied out of a run keeps it next to the policy folder) or of the
run: the experiment's `env_loader` binding. Nothing of the training loop
runs: the SavedModel and the env loader are all it needs.

Episode i uses env seed `seed + i`. One line per episode goes to stdout as
it ends, then the mean. With --output, the episodes are also written as a
video: .mp4 with opencv's mp4v encoder, anything else an animated GIF;
frames go to the file as they are rendered (memory does not grow with
episode length), and fps // 3 black frames separate episodes.
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
import contextlib
from typing import List, Optional

import gin
import tensorflow as tf

from tfa_explore import config
from tfa_explore.experiments import checkpointing
from tfa_explore.experiments import run_kit
from tfa_explore.utils import files
from tfa_explore.utils import video

_POLICY_DIR = flags.DEFINE_string(
    'policy_dir', None, 'A PolicySaver export, with operative_config.gin in '
    'its parent directory (a copied export) or two levels up (a run).')
_ROOT_DIR = flags.DEFINE_string(
    'root_dir', None, 'A train_eval run directory; plays '
    'root_dir/policies/<--policy>.')
_POLICY = flags.DEFINE_string(
    'policy', checkpointing.GREEDY_POLICY,
    'With --root_dir: the export under root_dir/policies to play '
    '(greedy_policy or collect_policy).')
_NUM_EPISODES = flags.DEFINE_integer('num_episodes', 3, 'Episodes played.',
                                     lower_bound=1)
_SEED = flags.DEFINE_integer('seed', 0, 'Env seed of the first episode.')
_OUTPUT = flags.DEFINE_string(
    'output', None, 'Video file (.gif or .mp4) of all episodes; none if '
    'unset.')
_FPS = flags.DEFINE_float('fps', 30.0, 'Frames per second of the video.')
flags.register_validator('fps', lambda fps: fps > 0,
                         message='--fps must be positive.')
flags.mark_flags_as_mutual_exclusive(['policy_dir', 'root_dir'],
                                     required=True)
flags.adopt_module_key_flags(console)  # --help lists --verbose


def config_dir(policy_dir: str) -> str:
  """The directory whose operative_config.gin describes `policy_dir`'s env."""
  parent = os.path.dirname(os.path.abspath(os.path.normpath(policy_dir)))
  for candidate in (parent, os.path.dirname(parent)):
    if os.path.exists(os.path.join(candidate, run_kit.OPERATIVE_CONFIG)):
      return candidate
  raise FileNotFoundError(
      f'No {run_kit.OPERATIVE_CONFIG} beside {policy_dir} (looked in '
      f'{parent} and its parent): copy the run\'s one next to the export.')


def load_env_loader(directory: str):
  """The env loader of the run whose operative config is in `directory`."""
  config_path = os.path.join(directory, run_kit.OPERATIVE_CONFIG)
  if not os.path.exists(config_path):
    raise FileNotFoundError(f'{config_path} not found: is {directory} a '
                            'train_eval run directory?')
  gin.clear_config()
  # skip_unknown: the operative config also lists TF-Agents internals that
  # need not be registered to rebuild the env.
  gin.parse_config_file(config_path, skip_unknown=True)
  return config.experiment_setting('env_loader').scoped_configurable_fn


def play(policy_dir: str, num_episodes: int, seed: int,
         output: Optional[str] = None, fps: float = 30.0,
         env_dir: Optional[str] = None) -> List[video.Episode]:
  """Plays `num_episodes` episodes of the export at `policy_dir`.

  Args:
    policy_dir: A PolicySaver export (an interrupted export swap falls back
      to the complete old copy).
    num_episodes: Episodes played; episode i uses env seed `seed + i`.
    seed: Env seed of the first episode.
    output: Video path (.mp4 or GIF); None plays without rendering.
    fps: The video's frames per second.
    env_dir: Directory of the operative config; default `config_dir`.

  Returns:
    The episodes, in order; each is printed as it ends.
  """
  env_loader = load_env_loader(env_dir or config_dir(policy_dir))
  policy = tf.saved_model.load(files.previous_export(policy_dir))
  episodes = []
  with (video.open_video(output, fps) if output
        else contextlib.nullcontext()) as writer:
    for i in range(num_episodes):
      if writer and i:
        writer.write_blank(max(1, int(fps // 3)))
      episode = video.record_episode(policy, env_loader, seed + i,
                                     writer.write if writer else None)
      episodes.append(episode)
      print(f'episode {i + 1}/{num_episodes} (seed {seed + i}): return '
            f'{episode.episode_return:g}, {episode.num_frames - 1} steps',
            flush=True)
  return episodes


def main(argv):
  if len(argv) > 1:
    raise SystemExit(f'Unexpected arguments: {argv[1:]}')
  try:
    if _ROOT_DIR.value:
      policy_dir = os.path.join(_ROOT_DIR.value, checkpointing.POLICY_DIR,
                                _POLICY.value)
      env_dir = _ROOT_DIR.value
    else:
      policy_dir = _POLICY_DIR.value
      env_dir = config_dir(policy_dir)
    # The first line before the env and the policy load (seconds when busy).
    logging.info('Starting: %d episode(s) of %s%s.', _NUM_EPISODES.value,
                 policy_dir, f' to {_OUTPUT.value}' if _OUTPUT.value else '')
    episodes = play(policy_dir, _NUM_EPISODES.value, _SEED.value,
                    _OUTPUT.value, _FPS.value, env_dir)
  except FileNotFoundError as e:
    print(f'ERROR: {e}', file=sys.stderr)
    sys.exit(2)
  returns = [e.episode_return for e in episodes]
  print(f'mean return {sum(returns) / len(returns):g} over {len(returns)} '
        'episode(s)')
  if _OUTPUT.value:
    print(f'video: {_OUTPUT.value}')


if __name__ == '__main__':
  app.run(main, flags_parser=config.parse_flags)
