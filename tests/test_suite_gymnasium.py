"""Tests for the generic gymnasium -> TF-Agents wrapper."""

from absl.testing import absltest
from absl.testing import parameterized
import gymnasium as gym
import numpy as np
from tf_agents.specs import array_spec
from tf_agents.trajectories import time_step as ts

from tfa_explore.environments import stateless_cartpole
from tfa_explore.environments import suite_gymnasium
from tfa_explore.testing import fake_envs

FIRST = ts.StepType.FIRST
MID = ts.StepType.MID
LAST = ts.StepType.LAST


def _run(env, actions):
  """Resets, then steps through `actions`; returns all time steps."""
  steps = [env.reset()]
  for action in actions:
    steps.append(env.step(np.asarray(action, dtype=np.int64)))
  return steps


class EpisodeBoundaryTest(parameterized.TestCase):

  def test_termination_is_last_with_discount_zero(self):
    env = fake_envs.load_counting(episode_length=3)
    steps = _run(env, [0, 0, 0])
    self.assertEqual([s.step_type for s in steps], [FIRST, MID, MID, LAST])
    self.assertEqual([float(s.discount) for s in steps], [1., 1., 1., 0.])
    # Counting-v0 pays t on its t-th step.
    self.assertEqual([float(s.reward) for s in steps], [0., 1., 2., 3.])
    self.assertEqual([float(s.observation[0]) for s in steps], [0, 1, 2, 3])

  def test_truncation_is_last_with_discount_one(self):
    env = fake_envs.load_counting(episode_length=10, max_episode_steps=3)
    steps = _run(env, [0, 0, 0])
    self.assertEqual([s.step_type for s in steps], [FIRST, MID, MID, LAST])
    self.assertEqual(float(steps[-1].discount), 1.0)
    self.assertEqual(float(steps[-1].reward), 3.0)

  def test_discount_argument_applies_to_non_terminal_steps(self):
    truncated = fake_envs.load_counting(episode_length=10, max_episode_steps=2)
    truncated = suite_gymnasium.GymnasiumWrapper(truncated.gym, discount=0.9)
    steps = _run(truncated, [0, 0])
    np.testing.assert_allclose([s.discount for s in steps], [1.0, 0.9, 0.9])
    terminated = suite_gymnasium.GymnasiumWrapper(
        fake_envs.load_counting(episode_length=2).gym, discount=0.9)
    steps = _run(terminated, [0, 0])
    np.testing.assert_allclose([s.discount for s in steps], [1.0, 0.9, 0.0])

  @parameterized.named_parameters(
      ('terminated', dict(episode_length=2)),
      ('truncated', dict(episode_length=10, max_episode_steps=2)))
  def test_step_after_last_resets(self, kwargs):
    env = fake_envs.load_counting(**kwargs)
    steps = _run(env, [0, 0, 0, 0])
    self.assertEqual([s.step_type for s in steps],
                     [FIRST, MID, LAST, FIRST, MID])
    # The auto-reset step restarts the count and pays nothing.
    self.assertEqual(float(steps[3].observation[0]), 0.0)
    self.assertEqual(float(steps[3].reward), 0.0)
    self.assertEqual(float(steps[4].observation[0]), 1.0)

  def test_last_info_exposes_gymnasium_info(self):
    env = fake_envs.load_counting()
    env.reset()
    self.assertEqual(env.last_info['count'], 0)
    env.step(np.int64(1))
    env.step(np.int64(1))
    self.assertEqual(env.last_info['count'], 2)


class SeedingTest(parameterized.TestCase):

  def _observations(self, seed, num_steps=25):
    # 25 steps of episodes of 10: crosses two auto-resets, so later resets
    # must be seeded too.
    env = fake_envs.load_correct_action(seed=seed, num_actions=5)
    steps = _run(env, [0] * num_steps)
    return np.stack([s.observation for s in steps])

  def test_same_seed_same_trajectory(self):
    np.testing.assert_array_equal(self._observations(3),
                                  self._observations(3))

  def test_different_seeds_differ(self):
    self.assertFalse(np.array_equal(self._observations(3),
                                    self._observations(4)))

  def test_same_seed_same_cartpole_trajectory(self):
    def trajectory(seed):
      env = suite_gymnasium.load('CartPole-v1', seed=seed)
      # Actions from a seeded action space: also covers action space seeding.
      actions = [env.gym.action_space.sample() for _ in range(40)]
      return np.stack([s.observation for s in _run(env, actions)])
    np.testing.assert_array_equal(trajectory(7), trajectory(7))
    self.assertFalse(np.array_equal(trajectory(7), trajectory(8)))


class SpecTest(parameterized.TestCase):

  def test_discrete_with_start(self):
    spec = suite_gymnasium.spec_from_space(gym.spaces.Discrete(3, start=2))
    self.assertEqual(spec.dtype, np.int64)
    self.assertEqual(spec.shape, ())
    self.assertEqual((int(spec.minimum), int(spec.maximum)), (2, 4))

  def test_float64_box_becomes_float32_with_finite_bounds(self):
    space = gym.spaces.Box(low=np.array([-np.inf, -1.0]),
                           high=np.array([np.inf, 2.0]), dtype=np.float64)
    spec = suite_gymnasium.spec_from_space(space)
    self.assertEqual(spec.dtype, np.float32)
    self.assertEqual(spec.shape, (2,))
    self.assertTrue(np.all(np.isfinite(spec.minimum)))
    np.testing.assert_allclose(spec.minimum[1], -1.0)
    np.testing.assert_allclose(spec.maximum[1], 2.0)

  def test_uint8_box_stays_uint8(self):
    spec = suite_gymnasium.spec_from_space(
        gym.spaces.Box(0, 255, shape=(4, 4, 3), dtype=np.uint8))
    self.assertEqual(spec.dtype, np.uint8)
    self.assertEqual(spec.shape, (4, 4, 3))
    self.assertEqual(int(np.max(spec.maximum)), 255)

  def test_multi_discrete(self):
    spec = suite_gymnasium.spec_from_space(gym.spaces.MultiDiscrete([3, 5]))
    self.assertEqual(spec.dtype, np.int64)
    self.assertEqual(spec.shape, (2,))
    np.testing.assert_array_equal(spec.minimum, [0, 0])
    np.testing.assert_array_equal(spec.maximum, [2, 4])

  def test_dict_observations_conform_to_spec(self):
    env = fake_envs.load_dict_obs(seed=0)
    spec = env.observation_spec()
    self.assertEqual(set(spec), {'position', 'flag', 'image'})
    self.assertEqual(spec['position'].dtype, np.float32)
    self.assertEqual(spec['flag'].dtype, np.int64)
    self.assertEqual(spec['image'].dtype, np.uint8)
    for step in _run(env, [0] * 8):
      self.assertTrue(array_spec.check_arrays_nest(step.observation, spec))

  @parameterized.named_parameters(
      ('multi_discrete', gym.spaces.MultiDiscrete([2, 3, 4])),
      ('float64_box', gym.spaces.Box(-2.0, 2.0, shape=(3,),
                                     dtype=np.float64)),
      ('uint8_box', gym.spaces.Box(0, 255, shape=(2, 2), dtype=np.uint8)),
      ('multi_binary', gym.spaces.MultiBinary(3)))
  def test_sampled_observations_conform_to_spec(self, space):
    env = suite_gymnasium.load(fake_envs.SPACES_ID, seed=1,
                               gym_kwargs=dict(observation_space=space))
    for step in _run(env, [0] * 6):
      self.assertTrue(array_spec.check_arrays_nest(
          step.observation, env.observation_spec()))

  def test_multi_discrete_actions_are_passed_through(self):
    env = suite_gymnasium.load(
        fake_envs.SPACES_ID, seed=0,
        gym_kwargs=dict(observation_space=gym.spaces.Discrete(2),
                        action_space=gym.spaces.MultiDiscrete([2, 3])))
    self.assertEqual(env.action_spec().shape, (2,))
    env.reset()
    step = env.step(np.array([1, 2], dtype=np.int64))
    self.assertEqual(step.step_type, MID)

  def test_unsupported_space_error_names_the_key(self):
    space = gym.spaces.Dict({'image': gym.spaces.Box(0, 1, shape=(2,)),
                             'mission': gym.spaces.Text(max_length=8)})
    with self.assertRaisesRegex(suite_gymnasium.UnsupportedSpaceError,
                                "'mission'.*Text"):
      suite_gymnasium.spec_from_space(space)


class EnvIdTest(parameterized.TestCase):

  def test_unknown_id_suggests_close_matches(self):
    with self.assertRaisesRegex(suite_gymnasium.UnknownEnvironmentError,
                                r"'CartPole-v9'.*Did you mean.*CartPole-v1"):
      suite_gymnasium.load('CartPole-v9')

  def test_unknown_id_is_a_value_error(self):
    with self.assertRaises(ValueError):
      suite_gymnasium.load('NoSuchEnvironmentAtAll-v0')

  def test_plugins_are_registered_on_first_use(self):
    suite_gymnasium.check_env_id('ALE/Pong-v5')
    suite_gymnasium.check_env_id('MiniGrid-Empty-5x5-v0')
    suite_gymnasium.check_env_id(stateless_cartpole.ENV_ID)


class StatelessCartPoleTest(absltest.TestCase):

  def test_observation_is_position_and_angle(self):
    env = suite_gymnasium.load(stateless_cartpole.ENV_ID, seed=0)
    spec = env.observation_spec()
    self.assertEqual(spec.shape, (2,))
    self.assertEqual(spec.dtype, np.float32)
    step = env.reset()
    full_state = np.asarray(env.gym.unwrapped.state, dtype=np.float32)
    # Cart position (0) and pole angle (2) of CartPole's state.
    np.testing.assert_allclose(step.observation, full_state[[0, 2]])
    step = env.step(np.int64(1))
    full_state = np.asarray(env.gym.unwrapped.state, dtype=np.float32)
    np.testing.assert_allclose(step.observation, full_state[[0, 2]])

  def test_truncates_after_500_steps(self):
    env = suite_gymnasium.load(stateless_cartpole.ENV_ID, seed=0)
    step = env.reset()
    num_steps = 0
    while not step.is_last():
      # A controller on the hidden state (velocities included) that keeps
      # the pole up, so the episode can only end by the time limit.
      _, _, angle, angular_velocity = env.gym.unwrapped.state
      step = env.step(np.int64(angle + 0.5 * angular_velocity > 0))
      num_steps += 1
    self.assertEqual(num_steps, 500)
    self.assertEqual(float(step.discount), 1.0)


if __name__ == '__main__':
  absltest.main()
