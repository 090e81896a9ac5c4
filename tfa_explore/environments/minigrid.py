"""MiniGrid environments as single-array TF-Agents PyEnvironments.

MiniGrid observes a dict: a compact grid encoding 'image' (cells x 3 channels
of object, colour and state indices), the agent 'direction' and a 'mission'
string. Convolutional agents want ONE array, and TF-Agents has no spec for
text, so this preset:

* drops 'mission' (the missions of the exploration tasks we use are fixed per
  env id, so it carries no information);
* optionally one-hot encodes the (object, colour, state) channels;
* appends the direction as extra plane(s) of the image, giving HxWxC.

The observation is the agent's egocentric 7x7 view by default, or the whole
grid (width x height) with `fully_observable=True`.

Channel layout (C), per cell:

* `one_hot=False` (uint8 indices): [object, colour, state, direction] -> C=4.
  The direction plane holds the agent direction 0..3 in every cell.
* `one_hot=True` (uint8 0/1): 11 object planes, 6 colour planes, 4 state
  planes, 4 direction planes -> C=25. There are 4 state planes although
  MiniGrid has 3 door states because the fully observable encoding stores
  the agent direction (0..3) in the agent cell's state channel. One-hot
  planes stay uint8 (not float32) so replay memory is 4x smaller; networks
  cast to float anyway.

Each step's info dict carries `agent_pos` (x, y) and `agent_dir`, so an
"episode visits" metric can count the distinct cells visited through
`GymnasiumWrapper.last_info`.

`encode_observation` is the encoding itself, a function of one gymnasium
observation; `load` applies it through `ImageDirectionObservation`, and a
policy exported from a MiniGrid run acts on a plain gymnasium MiniGrid env
through it (docs/exported_policies.md). `cell_indices` reads the
(object, colour, state) indices back from any of its encodings.
"""

from typing import Any, Callable, Dict, Optional, Sequence

import gin
import gymnasium as gym
import numpy as np

from tfa_explore.environments import suite_gymnasium

NUM_DIRECTIONS = 4
# Four state values: open/closed/locked, and the agent cell of the fully
# observable grid stores the direction (0..3) there.
NUM_STATES = 4


def _minigrid_modules():
  # Imported lazily so `tfa_explore.environments` does not need minigrid.
  from minigrid import minigrid_env  # pylint: disable=g-import-not-at-top
  from minigrid import wrappers  # pylint: disable=g-import-not-at-top
  from minigrid.core import constants  # pylint: disable=g-import-not-at-top
  return minigrid_env, wrappers, constants


class AgentPositionInfo(gym.Wrapper):
  """Adds `agent_pos` (x, y) and `agent_dir` to every reset and step info."""

  def _with_position(self, info: Dict[str, Any]) -> Dict[str, Any]:
    env = self.env.unwrapped
    info = dict(info)
    info['agent_pos'] = tuple(int(v) for v in env.agent_pos)
    info['agent_dir'] = int(env.agent_dir)
    return info

  def reset(self, **kwargs):
    observation, info = self.env.reset(**kwargs)
    return observation, self._with_position(info)

  def step(self, action):
    observation, reward, terminated, truncated, info = self.env.step(action)
    return (observation, reward, terminated, truncated,
            self._with_position(info))


def _index_depths():
  """Sizes of the (object, colour, state) index channels when one-hot."""
  _, _, constants = _minigrid_modules()
  return (len(constants.OBJECT_TO_IDX), len(constants.COLOR_TO_IDX),
          NUM_STATES)


def num_channels(one_hot: bool = False, include_direction: bool = True) -> int:
  """C of the encoded HxWxC observation (see the module docstring)."""
  if one_hot:
    return sum(_index_depths()) + (
        NUM_DIRECTIONS if include_direction else 0)
  return 3 + (1 if include_direction else 0)


def encode_observation(observation: Dict[str, Any], one_hot: bool = False,
                       include_direction: bool = True) -> np.ndarray:
  """MiniGrid's dict observation as the presets' one uint8 HxWxC array.

  The one implementation of the encoding: `load` (through
  `ImageDirectionObservation`) calls it, and so does a user acting with an
  exported policy on a plain `gymnasium.make(env_id)` env. For a policy
  trained with `fully_observable=True`, wrap that env in minigrid's
  `FullyObsWrapper` first, as `load` does.

  Args:
    observation: gymnasium's MiniGrid observation, a dict with 'image'
      (H, W, 3) indices and 'direction' (0..3); 'mission' is ignored.
    one_hot: the `one_hot` the policy was trained with.
    include_direction: the `include_direction` it was trained with.

  Returns:
    uint8 (H, W, C), C = `num_channels(one_hot, include_direction)`:
    (7, 7, 4) for `load`'s defaults.
  """
  image = np.asarray(observation['image'], dtype=np.uint8)
  direction = int(observation['direction'])
  height, width, _ = image.shape
  if not one_hot:
    planes = [image]
    if include_direction:
      planes.append(np.full((height, width, 1), direction, dtype=np.uint8))
    return np.concatenate(planes, axis=-1)
  planes = []
  for channel, depth in enumerate(_index_depths()):
    # np.eye indexing one-hot encodes every cell at once.
    planes.append(np.eye(depth, dtype=np.uint8)[image[..., channel]])
  if include_direction:
    direction_one_hot = np.eye(NUM_DIRECTIONS, dtype=np.uint8)[direction]
    planes.append(np.broadcast_to(direction_one_hot,
                                  (height, width, NUM_DIRECTIONS)))
  return np.concatenate(planes, axis=-1)


def cell_indices(observation: np.ndarray) -> np.ndarray:
  """The (object, colour, state) indices of an encoded observation.

  The inverse of `encode_observation` for its cell channels, whichever of
  its options made the array (told apart by C: 3 or 4 indices, or
  `num_channels(one_hot=True, ...)` 0/1 planes); the direction is dropped.

  Args:
    observation: uint8 (..., H, W, C) from `encode_observation` or `load`.

  Returns:
    int (..., H, W, 3) MiniGrid indices (minigrid.core.constants).

  Raises:
    ValueError: if C is none of `encode_observation`'s.
  """
  observation = np.asarray(observation)
  channels = observation.shape[-1]
  if channels in (num_channels(False, True), num_channels(False, False)):
    return observation[..., :3].astype(np.int64)
  if channels in (num_channels(True, True), num_channels(True, False)):
    bounds = np.cumsum((0,) + _index_depths())
    return np.stack([np.argmax(observation[..., a:b], axis=-1)
                     for a, b in zip(bounds[:-1], bounds[1:])], axis=-1)
  raise ValueError(
      f'An encoded MiniGrid observation has {num_channels(False, False)}, '
      f'{num_channels(False, True)}, {num_channels(True, False)} or '
      f'{num_channels(True, True)} channels, got shape {observation.shape}.')


class ImageDirectionObservation(gym.ObservationWrapper):
  """Turns MiniGrid's dict observation into one HxWxC uint8 array.

  `encode_observation` of every observation; see the module docstring for
  the channel layout.
  """

  def __init__(self, env: gym.Env, one_hot: bool = False,
               include_direction: bool = True):
    super().__init__(env)
    self._one_hot = one_hot
    self._include_direction = include_direction
    height, width, _ = env.observation_space['image'].shape
    self.observation_space = gym.spaces.Box(
        low=0, high=1 if one_hot else 255,
        shape=(height, width, num_channels(one_hot, include_direction)),
        dtype=np.uint8)

  def observation(self, observation):
    return encode_observation(observation, one_hot=self._one_hot,
                              include_direction=self._include_direction)


@gin.configurable(module='minigrid', denylist=['seed'])
def load(env_id: str = gin.REQUIRED,
         seed: Optional[int] = None,
         fully_observable: bool = False,
         one_hot: bool = False,
         include_direction: bool = True,
         max_episode_steps: Optional[int] = None,
         render_mode: Optional[str] = None,
         discount: float = 1.0,
         gym_kwargs: Optional[Dict[str, Any]] = None,
         gym_env_wrappers: Sequence[Callable[[gym.Env], gym.Env]] = ()
        ) -> suite_gymnasium.GymnasiumWrapper:
  """Makes MiniGrid env `env_id` with a single-array image observation.

  Args:
    env_id: A MiniGrid (or BabyAI) id, e.g. 'MiniGrid-DoorKey-8x8-v0'.
    seed: Seeds the first reset (the grid layout) and the action space.
    fully_observable: Observe the whole grid (minigrid's FullyObsWrapper)
      instead of the agent's 7x7 egocentric view.
    one_hot: One-hot encode object, colour, state (and direction) channels as
      uint8 0/1 planes; otherwise keep uint8 indices.
    include_direction: Append the agent direction as plane(s).
    max_episode_steps: Overrides the env's own `max_steps` (agent steps).
      MiniGrid truncates and scales its success reward
      (1 - 0.9 * steps / max_steps) by this number itself, so it is set on
      the env rather than through an outer TimeLimit that would never fire
      after the inner limit.
    render_mode: e.g. 'rgb_array' to allow `render()`.
    discount: Discount of non-terminal steps (see suite_gymnasium.load).
    gym_kwargs: Extra keyword arguments for `gymnasium.make`, e.g.
      {'agent_view_size': 5}.
    gym_env_wrappers: Gymnasium wrappers applied in order on top of the
      preset's own (they see the single-array observation and `agent_pos`
      in info), e.g. `[exploration.VisitedCells]`.

  Returns:
    A `GymnasiumWrapper` whose observation is uint8 (H, W, C): (7, 7, 4) by
    default; info has `agent_pos` and `agent_dir`.

  Raises:
    UnknownEnvironmentError: `env_id` is not registered.
    ValueError: `env_id` is not a MiniGrid environment.
  """
  suite_gymnasium.check_env_id(env_id)
  minigrid_env, wrappers, _ = _minigrid_modules()
  kwargs = dict(gym_kwargs or {})
  if render_mode is not None:
    kwargs['render_mode'] = render_mode
  env = gym.make(env_id, **kwargs)
  if not isinstance(env.unwrapped, minigrid_env.MiniGridEnv):
    env.close()
    raise ValueError(
        f'minigrid.load expects a MiniGrid env id (e.g. '
        f"'MiniGrid-DoorKey-8x8-v0'), got {env_id!r}; use suite_gymnasium.load"
        ' or atari.load for other environments.')
  if max_episode_steps is not None:
    env.unwrapped.max_steps = int(max_episode_steps)
  if fully_observable:
    env = wrappers.FullyObsWrapper(env)
  env = AgentPositionInfo(env)
  env = ImageDirectionObservation(env, one_hot=one_hot,
                                  include_direction=include_direction)
  for wrapper in gym_env_wrappers:
    env = wrapper(env)
  return suite_gymnasium.GymnasiumWrapper(env, seed=seed, discount=discount,
                                          env_id=env_id)
