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

`preprocess_env` is the observation encoding (everything after
`gymnasium.make`); `load` applies it, and a policy exported from an Atari
run acts on a plain gymnasium ALE env through it
(docs/exported_policies.md). It wraps the env rather than mapping one
observation because the encoded observation depends on frames the agent
never sees: the max-pool of the last two emulator frames of each action
repeat, and the previous agent steps of the stack.
"""

from typing import Optional

import gin
import gymnasium as gym
import numpy as np

from tfa_explore.environments import suite_gymnasium

_ALE_ENTRY_POINT = 'ale_py.env:AtariEnv'


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
         discount: float = 1.0) -> suite_gymnasium.GymnasiumWrapper:
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

  Returns:
    A `GymnasiumWrapper` with uint8 observations of shape
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
  return suite_gymnasium.GymnasiumWrapper(env, seed=seed, discount=discount,
                                          env_id=env_id)
