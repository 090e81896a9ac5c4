"""Atari 2600 (ALE) environments with the Machado et al. (2018) protocol.

The defaults follow Machado et al. 2018, "Revisiting the Arcade Learning
Environment" (Section 5) and the RND paper (Burda et al. 2018, Appendix A.4):

* ALE v5 ids; the emulator steps one frame at a time (`frameskip=1`) and
  applies sticky actions per frame with probability 0.25
  (`repeat_action_probability`), which is how ALE defines them;
* gymnasium's `AtariPreprocessing` repeats each agent action for 4 frames,
  max-pools the last two frames (against sprite flicker), converts to grey
  and resizes to 84x84;
* the last 4 processed frames are stacked; the observation is channels-LAST
  uint8 (84, 84, 4), the layout TF convolutions expect;
* no terminal on life loss (Machado et al. recommend against using game
  knowledge); no-op starts are off because sticky actions already make the
  start stochastic;
* episodes stop after 18000 emulator frames (= 4500 agent steps at skip 4),
  as in RND; ALE reports the limit as truncation, which
  `GymnasiumWrapper` turns into `StepType.LAST` with discount 1.

A batch of these envs (`batched.make_batched_env`, in-process) steps in
ALE's C++ vector env (`AtariVectorBatch`) with the same encoding and the
same time steps, at about half the CPU per step of the gymnasium wrappers.

`preprocess_env` is the observation encoding (everything after
`gymnasium.make`); `load` applies it, and a policy exported from an Atari
run acts on a plain gymnasium ALE env through it
(docs/exported_policies.md). It wraps the env rather than mapping one
observation because the encoded observation depends on frames the agent
never sees: the max-pool of the last two emulator frames of each action
repeat, and the previous agent steps of the stack.
"""

import dataclasses
from typing import Optional, Sequence

import ale_py
import gin
import gymnasium as gym
import numpy as np
from tf_agents.trajectories import time_step as ts

from tfa_explore.environments import batched
from tfa_explore.environments import suite_gymnasium

_ALE_ENTRY_POINT = 'ale_py.env:AtariEnv'
# ALE v5's registered episode limit, in emulator frames.
_V5_EPISODE_FRAMES = 108000


class ChannelsLastFrameStack(gym.ObservationWrapper):
  """Moves the stack axis of `FrameStackObservation` to the channel axis.

  (S, H, W) grey stacks become (H, W, S); (S, H, W, 3) colour stacks become
  (H, W, S * 3) ordered frame by frame (oldest frame's RGB first).
  """

  def __init__(self, env: gym.Env):
    super().__init__(env)
    space = env.observation_space
    self._stack_size = space.shape[0]
    height, width = space.shape[1:3]
    colours = space.shape[3] if len(space.shape) == 4 else 1
    self._shape = (height, width, self._stack_size * colours)
    self.observation_space = gym.spaces.Box(
        low=0, high=255, shape=self._shape, dtype=np.uint8)

  def observation(self, observation):
    stacked = np.moveaxis(np.asarray(observation), 0, 2)  # H, W, S[, 3]
    return np.ascontiguousarray(stacked.reshape(self._shape))


class SingleFrameChannel(gym.ObservationWrapper):
  """Gives an unstacked grey frame a channel axis: (H, W) -> (H, W, 1)."""

  def __init__(self, env: gym.Env):
    super().__init__(env)
    height, width = env.observation_space.shape[:2]
    self.observation_space = gym.spaces.Box(
        low=0, high=255, shape=(height, width, 1), dtype=np.uint8)

  def observation(self, observation):
    return np.asarray(observation)[..., np.newaxis]


def check_ale_v5_id(env_id: str) -> None:
  """Raises ValueError unless `env_id` is a registered ALE v5 id."""
  suite_gymnasium.check_env_id(env_id)
  entry_point = gym.spec(env_id).entry_point
  if entry_point != _ALE_ENTRY_POINT:
    raise ValueError(
        f"atari.load expects an ALE Atari id like 'ALE/Pong-v5', got "
        f'{env_id!r}; use suite_gymnasium.load or minigrid.load for other '
        'environments.')
  if not (env_id.startswith('ALE/') and env_id.endswith('-v5')):
    # Older ALE ids (v0/v4, NoFrameskip) carry their own time limits and
    # defaults that contradict the protocol above.
    raise ValueError(
        f'atari.load expects an ALE v5 id (e.g. \'ALE/Pong-v5\'), got '
        f'{env_id!r}.')


def preprocess_env(env: gym.Env,
                   frame_skip: int = 4,
                   screen_size: int = 84,
                   grayscale: bool = True,
                   frame_stack: int = 4,
                   terminal_on_life_loss: bool = False,
                   noop_max: int = 0) -> gym.Env:
  """The preset's observation encoding, as wrappers of a gymnasium ALE env.

  The one implementation: `load` calls it on the env it makes, and a user
  acting with an exported policy calls it on their own
  `gymnasium.make(env_id, frameskip=1, ...)` env. Action repeat with a
  max-pool of the last two frames, grey, resize (gymnasium's
  `AtariPreprocessing`), then a stack of the last `frame_stack` frames on
  the channel axis, oldest first.

  Args:
    env: an ALE env made with `frameskip=1` (the repeat happens here; ALE
      v5's default of 4 raises ValueError). Sticky actions and the episode
      frame limit are `gymnasium.make` arguments (`repeat_action_probability`,
      `max_num_frames_per_episode`); `load` sets them to 0.25 and 18000.
    frame_skip, screen_size, grayscale, frame_stack, terminal_on_life_loss,
    noop_max: as for `load`; the defaults are the preset's.

  Returns:
    The wrapped env: uint8 observations (screen_size, screen_size,
    frame_stack * (1 if grayscale else 3)), (84, 84, 4) by default.
  """
  env = gym.wrappers.AtariPreprocessing(
      env, noop_max=noop_max, frame_skip=frame_skip, screen_size=screen_size,
      terminal_on_life_loss=terminal_on_life_loss,
      grayscale_obs=grayscale, grayscale_newaxis=False, scale_obs=False)
  if frame_stack > 1:
    env = gym.wrappers.FrameStackObservation(env, stack_size=frame_stack)
    return ChannelsLastFrameStack(env)
  if grayscale:
    return SingleFrameChannel(env)
  return env


@dataclasses.dataclass(frozen=True)
class VectorPreset:
  """What ALE's vector env needs to encode observations as `load` does."""
  game: str
  frame_skip: int
  sticky_action_probability: float
  screen_size: int
  frame_stack: int
  max_episode_frames: int
  full_action_space: bool
  noop_max: int
  num_threads: int


class AtariWrapper(suite_gymnasium.GymnasiumWrapper, batched.NativeBatching):
  """An ALE env of `load` whose batches step in ALE's vector env."""

  def __init__(self, env: gym.Env, preset: VectorPreset, **kwargs):
    super().__init__(env, **kwargs)
    self._preset = preset

  def make_batch(self, seeds: Sequence[Optional[int]]) -> 'AtariVectorBatch':
    return AtariVectorBatch(self._preset, seeds, self.discount,
                            self.observation_spec(), self.action_spec())


class AtariVectorBatch(batched.NativeBatch):
  """`len(seeds)` ALE envs stepped by `ale_py.AtariVectorEnv` in C++.

  The same observations, rewards, step types and discounts as a
  `GymnasiumBatch` of `load`'s envs (tests/test_atari.py compares them
  step by step without sticky actions): ALE's frame skip, max-pool, grey
  84x84 resize and stack, moved to the channel axis. Two things are
  mended here: ALE pads the stack of a new episode with black frames,
  gymnasium's `FrameStackObservation` with the first frame, which is kept;
  and results are put in env order. Sticky actions and resets draw from
  ALE's own generators, seeded per env, so a seed fixes the stream, but
  not the same stream as the gymnasium env of that seed.
  """

  def __init__(self, preset: VectorPreset, seeds: Sequence[Optional[int]],
               discount, observation_spec, action_spec):
    super().__init__(handle_auto_reset=False)
    self._num_envs = len(seeds)
    if not self._num_envs:
      raise ValueError('AtariVectorBatch needs at least one env.')
    self._seeds = np.array([-1 if s is None else s for s in seeds], np.int64)
    self._first_reset = True
    self._discount = np.float32(discount)
    self._observation_spec = observation_spec
    self._action_spec = action_spec
    self._stack = preset.frame_stack
    self._env = ale_py.AtariVectorEnv(
        game=preset.game, num_envs=self._num_envs,
        num_threads=preset.num_threads,
        frameskip=preset.frame_skip,
        repeat_action_probability=preset.sticky_action_probability,
        img_height=preset.screen_size, img_width=preset.screen_size,
        grayscale=True, stack_num=preset.frame_stack, maxpool=True,
        noop_max=preset.noop_max,
        episodic_life=False,
        max_num_frames_per_episode=preset.max_episode_frames,
        full_action_space=preset.full_action_space,
        reward_clipping=False, use_fire_reset=False)
    # Frames of the current episode each env's stack holds (at most the
    # stack's size): the rest of the stack is ALE's black padding.
    self._frames = np.zeros(self._num_envs, np.int64)
    self._needs_reset = np.ones(self._num_envs, bool)
    self._info = {}

  @property
  def batched(self) -> bool:
    return True

  @property
  def batch_size(self) -> int:
    return self._num_envs

  def observation_spec(self):
    return self._observation_spec

  def action_spec(self):
    return self._action_spec

  def _in_env_order(self, info, *arrays):
    """`arrays` with their rows in env order, as copies (ALE may answer in
    its threads' order, and reuses its buffers); keeps its info, ordered."""
    index = np.argsort(np.asarray(info['env_id']))
    self._info = {key: np.asarray(value)[index] for key, value in info.items()}
    return [np.asarray(array)[index] for array in arrays]

  def _observations(self, stacks):
    """(N, S, H, W) stacks as (N, H, W, S), a new episode's black padding
    replaced by its first frame."""
    for i in np.flatnonzero(self._frames < self._stack):
      oldest = self._stack - self._frames[i]
      stacks[i, :oldest] = stacks[i, oldest]
    return np.ascontiguousarray(np.moveaxis(stacks, 1, -1)).reshape(
        (self._num_envs,) + tuple(self._observation_spec.shape))

  def last_infos(self):
    """ALE's info of each env's last step (lives, frame numbers), in order."""
    return [{key: value[i] for key, value in self._info.items()}
            for i in range(self._num_envs)]

  def _reset(self):
    seeds = self._seeds if self._first_reset else None
    self._first_reset = False
    stacks, info = self._env.reset(seed=seeds)
    stacks, = self._in_env_order(info, stacks)
    self._frames[:] = 1
    self._needs_reset[:] = False
    return batched.restart_batch(self._num_envs, self._observations(stacks))

  def _step(self, action):
    action = np.asarray(action, np.int64).reshape(self._num_envs)
    stacks, rewards, terminated, truncated, info = self._env.step(action)
    stacks, rewards, terminated, truncated = self._in_env_order(
        info, stacks, rewards, terminated, truncated)
    resets = self._needs_reset
    self._frames = np.where(resets, 1, self._frames + 1)
    ended = (terminated | truncated) & ~resets
    step_types = np.where(
        resets, ts.StepType.FIRST,
        np.where(ended, ts.StepType.LAST, ts.StepType.MID)).astype(np.int32)
    discounts = np.where(
        resets, 1.0, np.where(terminated & ~resets, 0.0, self._discount)
    ).astype(np.float32)
    rewards = np.where(resets, 0.0, rewards).astype(np.float32)
    self._needs_reset = ended
    return ts.TimeStep(step_type=step_types, reward=rewards,
                       discount=discounts,
                       observation=self._observations(stacks))

  def close(self):
    self._env.close()


@gin.configurable(module='atari', denylist=['seed'])
def load(env_id: str = 'ALE/MontezumaRevenge-v5',
         seed: Optional[int] = None,
         frame_skip: int = 4,
         sticky_action_probability: float = 0.25,
         screen_size: int = 84,
         grayscale: bool = True,
         frame_stack: int = 4,
         terminal_on_life_loss: bool = False,
         max_episode_frames: Optional[int] = 18000,
         full_action_space: bool = False,
         noop_max: int = 0,
         render_mode: Optional[str] = None,
         discount: float = 1.0,
         batch_threads: int = 1) -> suite_gymnasium.GymnasiumWrapper:
  """Makes an ALE v5 game with Machado et al. (2018) preprocessing.

  Args:
    env_id: An ALE v5 id, e.g. 'ALE/MontezumaRevenge-v5'.
    seed: Seeds ALE (sticky actions, game randomness), the no-op starts and
      the action space.
    frame_skip: Emulator frames per agent step (observations max-pool the
      last two).
    sticky_action_probability: Per-frame probability that ALE repeats the
      previous action (Machado et al. 2018: 0.25; 0 is deterministic).
    screen_size: Side of the square resized frame.
    grayscale: Grey frames (1 channel each) instead of RGB (3).
    frame_stack: Number of most recent agent-step frames stacked on the
      channel axis; 1 disables stacking.
    terminal_on_life_loss: End episodes (discount 0) on losing a life.
    max_episode_frames: Emulator frames after which ALE truncates the
      episode (discount 1); 18000 = 4500 agent steps at frame_skip 4, as in
      RND. None keeps the v5 registration's 108000.
    full_action_space: Use all 18 ALE actions instead of the game's minimal
      set.
    noop_max: Up to this many no-op actions at reset (0: off).
    render_mode: e.g. 'rgb_array' to allow `render()` of full-size frames.
    discount: Discount of non-terminal steps (see suite_gymnasium.load).
    batch_threads: Threads of ALE's vector env when a batch of these envs
      is made (`batched.make_batched_env`, in-process; grey frames, no
      rendering); an env alone ignores it.

  Returns:
    A `GymnasiumWrapper` (an `AtariWrapper` when its batches can step in
    ALE's vector env) with uint8 observations of shape
    (screen_size, screen_size, frame_stack * (1 if grayscale else 3)),
    (84, 84, 4) by default, and int64 scalar actions.

  Raises:
    UnknownEnvironmentError: `env_id` is not registered.
    ValueError: `env_id` is not an ALE v5 id.
  """
  check_ale_v5_id(env_id)
  kwargs = dict(frameskip=1,
                repeat_action_probability=sticky_action_probability,
                full_action_space=full_action_space)
  if max_episode_frames is not None:
    kwargs['max_num_frames_per_episode'] = int(max_episode_frames)
  if render_mode is not None:
    kwargs['render_mode'] = render_mode
  env = preprocess_env(
      gym.make(env_id, **kwargs), frame_skip=frame_skip,
      screen_size=screen_size, grayscale=grayscale, frame_stack=frame_stack,
      terminal_on_life_loss=terminal_on_life_loss, noop_max=noop_max)
  if not grayscale or render_mode is not None or terminal_on_life_loss:
    # ALE's vector env renders nothing, its colour stacks are not ours, and
    # its life-loss episodes continue the game where gymnasium's reset it.
    return suite_gymnasium.GymnasiumWrapper(env, seed=seed, discount=discount,
                                            env_id=env_id)
  preset = VectorPreset(
      game=gym.spec(env_id).kwargs['game'], frame_skip=frame_skip,
      sticky_action_probability=sticky_action_probability,
      screen_size=screen_size, frame_stack=frame_stack,
      max_episode_frames=(_V5_EPISODE_FRAMES if max_episode_frames is None
                          else int(max_episode_frames)),
      full_action_space=full_action_space, noop_max=noop_max,
      num_threads=batch_threads)
  return AtariWrapper(env, preset, seed=seed, discount=discount,
                      env_id=env_id)
