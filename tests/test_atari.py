"""Tests for the Atari preset (a few dozen Pong steps each)."""

import functools

from absl.testing import absltest
from absl.testing import parameterized
import gin
import numpy as np
from tf_agents.trajectories import time_step as ts

from tfa_explore.environments import atari
from tfa_explore.environments import batched
from tfa_explore.environments import suite_gymnasium

PONG = 'ALE/Pong-v5'


def _ale(env):
  return env.gym.unwrapped.ale


class AtariTest(parameterized.TestCase):

  def _load(self, **kwargs):
    env = atari.load(PONG, **kwargs)
    self.addCleanup(env.close)
    return env

  def test_default_spec_is_84x84x4_uint8(self):
    env = self._load(seed=0)
    spec = env.observation_spec()
    self.assertEqual(spec.shape, (84, 84, 4))
    self.assertEqual(spec.dtype, np.uint8)
    step = env.reset()
    self.assertEqual(step.observation.shape, (84, 84, 4))
    self.assertEqual(step.observation.dtype, np.uint8)
    step = env.step(np.int64(0))
    self.assertEqual(step.observation.shape, (84, 84, 4))

  def test_minimal_and_full_action_spaces(self):
    minimal = self._load(seed=0).action_spec()
    self.assertEqual(minimal.dtype, np.int64)
    # Pong's minimal action set: NOOP, FIRE, RIGHT, LEFT, RIGHTFIRE,
    # LEFTFIRE.
    self.assertEqual((int(minimal.minimum), int(minimal.maximum)), (0, 5))
    full = self._load(seed=0, full_action_space=True).action_spec()
    self.assertEqual(int(full.maximum) - int(full.minimum) + 1, 18)

  @parameterized.parameters(0.25, 0.0)
  def test_sticky_actions_reach_ale_and_emulator_skips_no_frames(
      self, probability):
    env = self._load(seed=0, sticky_action_probability=probability)
    self.assertAlmostEqual(
        _ale(env).getFloat('repeat_action_probability'), probability)
    # Frame skipping belongs to AtariPreprocessing (which max-pools); ALE
    # itself must step single frames.
    env.reset()
    start = _ale(env).getEpisodeFrameNumber()
    env.step(np.int64(0))
    self.assertEqual(_ale(env).getEpisodeFrameNumber() - start, 4)

  def test_frames_are_stacked_oldest_first_on_the_last_axis(self):
    env = self._load(seed=0)
    step = env.reset()
    # FrameStackObservation pads the stack with the reset frame.
    for channel in range(1, 4):
      np.testing.assert_array_equal(step.observation[..., channel],
                                    step.observation[..., 0])
    previous = step.observation
    changed = False
    for _ in range(30):
      step = env.step(np.int64(2))
      np.testing.assert_array_equal(step.observation[..., :3],
                                    previous[..., 1:])
      changed |= not np.array_equal(step.observation[..., 3],
                                    previous[..., 3])
      previous = step.observation
    self.assertTrue(changed, 'frames never changed; stack is not live')

  def test_frame_limit_truncates_with_discount_one(self):
    # 40 emulator frames = 10 agent steps at frame skip 4.
    env = self._load(seed=0, max_episode_frames=40)
    step = env.reset()
    step_types, discounts = [], []
    for _ in range(11):
      step = env.step(np.int64(0))
      step_types.append(step.step_type)
      discounts.append(float(step.discount))
    self.assertEqual(step_types[:10],
                     [ts.StepType.MID] * 9 + [ts.StepType.LAST])
    self.assertEqual(discounts[9], 1.0)
    self.assertEqual(step_types[10], ts.StepType.FIRST)

  def test_default_frame_limit_is_18000(self):
    env = self._load(seed=0)
    self.assertEqual(_ale(env).getInt('max_num_frames_per_episode'), 18000)

  def test_same_seed_same_trajectory(self):
    def trajectory(seed):
      env = self._load(seed=seed)
      rng = np.random.default_rng(0)
      steps = [env.reset()]
      steps += [env.step(np.int64(rng.integers(6))) for _ in range(40)]
      return np.stack([s.observation for s in steps])
    first = trajectory(3)
    np.testing.assert_array_equal(first, trajectory(3))
    self.assertGreater(len(np.unique(first[:, ..., -1].reshape(41, -1),
                                     axis=0)), 1)

  @parameterized.named_parameters(
      ('rgb', dict(grayscale=False), (84, 84, 12)),
      ('no_stack', dict(frame_stack=1), (84, 84, 1)),
      ('small', dict(screen_size=42, frame_stack=2), (42, 42, 2)))
  def test_observation_shapes(self, kwargs, shape):
    env = self._load(seed=0, **kwargs)
    self.assertEqual(env.observation_spec().shape, shape)
    self.assertEqual(env.reset().observation.shape, shape)
    self.assertEqual(env.step(np.int64(0)).observation.shape, shape)

  def test_rejects_non_atari_id(self):
    with self.assertRaisesRegex(ValueError, r"ALE.*'CartPole-v1'"):
      atari.load('CartPole-v1')

  def test_rejects_old_ale_ids(self):
    with self.assertRaisesRegex(ValueError, r"v5.*'PongNoFrameskip-v4'"):
      atari.load('PongNoFrameskip-v4')

  def test_unknown_id_suggests_close_matches(self):
    with self.assertRaisesRegex(suite_gymnasium.UnknownEnvironmentError,
                                'ALE/Pong-v5'):
      atari.load('ALE/Pongg-v5')

  def test_gin_configurable(self):
    with gin.unlock_config():
      gin.parse_config("atari.load.env_id = 'ALE/Pong-v5'\n"
                       'atari.load.frame_stack = 2')
    try:
      env = atari.load()
      self.addCleanup(env.close)
      self.assertEqual(env.observation_spec().shape, (84, 84, 2))
    finally:
      gin.clear_config()



class AtariVectorBatchTest(parameterized.TestCase):
  """A batch of `atari.load` envs steps in ALE's vector env."""

  def _batch(self, loader, num_envs, seed, native=True):
    if native:
      environment = batched.make_batched_env(loader, num_envs, seed)
      self.assertIsInstance(environment, atari.AtariVectorBatch)
    else:
      environment = batched.GymnasiumBatch(
          [loader(seed=seed + i) for i in range(num_envs)])
    self.addCleanup(environment.close)
    return environment

  @parameterized.parameters(4, 1)
  def test_same_time_steps_as_the_gymnasium_batch(self, frame_stack):
    # Without sticky actions Pong is deterministic, so both batches must
    # agree on every field; 400 frames = 100 agent steps, so each env
    # truncates and auto-resets (the stack's padding at a new episode).
    loader = functools.partial(atari.load, PONG, frame_stack=frame_stack,
                               sticky_action_probability=0.0,
                               max_episode_frames=400)
    native = self._batch(loader, 3, 0)
    reference = self._batch(loader, 3, 0, native=False)
    self.assertEqual(native.time_step_spec(), reference.time_step_spec())
    self.assertEqual(native.action_spec(), reference.action_spec())
    rng = np.random.default_rng(0)
    native_step, reference_step = native.reset(), reference.reset()
    step_types = []
    for _ in range(230):
      for field in ts.TimeStep._fields:
        np.testing.assert_array_equal(getattr(native_step, field),
                                      getattr(reference_step, field),
                                      err_msg=field)
      step_types.append(native_step.step_type)
      actions = rng.integers(6, size=3)
      native_step = native.step(actions)
      reference_step = reference.step(actions)
    step_types = np.array(step_types)
    # Steps 0, 101 and 202 are FIRST; 100 and 201 are LAST (truncations).
    np.testing.assert_array_equal(np.flatnonzero(step_types[:, 0] == 0),
                                  [0, 101, 202])
    np.testing.assert_array_equal(np.flatnonzero(step_types[:, 0] == 2),
                                  [100, 201])

  def test_a_seed_fixes_the_stream_with_sticky_actions(self):
    loader = functools.partial(atari.load, PONG)
    first, second = self._batch(loader, 2, 5), self._batch(loader, 2, 5)
    other = self._batch(loader, 2, 6)
    first.reset(), second.reset(), other.reset()
    rng = np.random.default_rng(1)
    differs = False
    for _ in range(200):
      actions = rng.integers(6, size=2)
      a, b, c = first.step(actions), second.step(actions), other.step(actions)
      np.testing.assert_array_equal(a.observation, b.observation)
      differs |= not np.array_equal(a.observation, c.observation)
    self.assertTrue(differs)

  def test_last_infos_are_ale_s_per_env(self):
    environment = self._batch(functools.partial(atari.load, PONG), 2, 0)
    environment.reset()
    for _ in range(3):
      environment.step(np.zeros(2, np.int64))
    infos = batched.last_infos(environment)
    self.assertLen(infos, 2)
    # 3 agent steps of 4 frames since the reset.
    self.assertEqual([int(i['episode_frame_number']) for i in infos], [12, 12])

  def test_rendering_or_life_loss_batches_stay_in_gymnasium(self):
    for kwargs in (dict(render_mode='rgb_array'),
                   dict(terminal_on_life_loss=True), dict(grayscale=False)):
      environment = batched.make_batched_env(
          functools.partial(atari.load, PONG, **kwargs), 2, 0)
      self.addCleanup(environment.close)
      self.assertIsInstance(environment, batched.GymnasiumBatch, kwargs)


if __name__ == '__main__':
  absltest.main()
