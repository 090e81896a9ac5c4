"""Tests for batched (in-process) and parallel (subprocess) environments."""

import functools
from unittest import mock

from absl.testing import absltest
from absl.testing import parameterized
import numpy as np
import tensorflow as tf
from tf_agents.environments import batched_py_environment
from tf_agents.environments import parallel_py_environment
from tf_agents.system.default import multiprocessing_core
from tf_agents.trajectories import time_step as ts

from tfa_explore.environments import batched
from tfa_explore.environments import suite_gymnasium
from tfa_explore.testing import fake_envs

# pytest does not run a `__main__` through handle_main, so initialise
# TF-Agents multiprocessing here (idempotent, see batched.py).
batched.enable_multiprocessing()

_CARTPOLE = functools.partial(suite_gymnasium.load, 'CartPole-v1')


def _rollout(env, num_steps, num_envs, action_seed=0):
  """Steps `env` with seeded random binary actions; returns time steps."""
  rng = np.random.default_rng(action_seed)
  steps = [env.reset()]
  for _ in range(num_steps):
    actions = rng.integers(2, size=num_envs).astype(np.int64)
    steps.append(env.step(actions))
  return steps


def _stack(steps, field):
  return np.stack([np.asarray(getattr(step, field)) for step in steps])


class BatchedEnvTest(parameterized.TestCase):

  def _make(self, loader, num_envs, seed, parallel):
    env = batched.make_batched_env(loader, num_envs=num_envs, seed=seed,
                                   parallel=parallel)
    self.addCleanup(env.close)
    return env

  @parameterized.named_parameters(('in_process', False), ('parallel', True))
  def test_type_and_batch_size(self, parallel):
    env = self._make(fake_envs.load_counting, 3, seed=0, parallel=parallel)
    expected = (parallel_py_environment.ParallelPyEnvironment if parallel
                else batched.GymnasiumBatch)
    self.assertIsInstance(env, expected)
    self.assertTrue(env.batched)
    self.assertEqual(env.batch_size, 3)
    step = env.reset()
    self.assertEqual(step.observation.shape, (3, 1))
    self.assertEqual(step.step_type.shape, (3,))

  @parameterized.named_parameters(('in_process', False), ('parallel', True))
  def test_counting_env_episode_boundaries(self, parallel):
    env = self._make(
        functools.partial(fake_envs.load_counting, episode_length=2), 2,
        seed=0, parallel=parallel)
    steps = _rollout(env, num_steps=3, num_envs=2)
    step_types = _stack(steps, 'step_type')
    np.testing.assert_array_equal(
        step_types[:, 0],
        [ts.StepType.FIRST, ts.StepType.MID, ts.StepType.LAST,
         ts.StepType.FIRST])
    np.testing.assert_array_equal(_stack(steps, 'discount')[:, 1],
                                  [1.0, 1.0, 0.0, 1.0])
    np.testing.assert_array_equal(_stack(steps, 'reward')[:, 1],
                                  [0.0, 1.0, 2.0, 0.0])

  @parameterized.named_parameters(('in_process', False), ('parallel', True))
  def test_env_i_gets_seed_plus_i(self, parallel):
    loader = functools.partial(fake_envs.load_correct_action, num_actions=8)
    env = self._make(loader, 3, seed=10, parallel=parallel)
    batched_observations = _stack(_rollout(env, 12, 3), 'observation')
    for i in range(3):
      single = loader(seed=10 + i)
      single_steps = [single.reset()] + [single.step(np.int64(0))
                                         for _ in range(12)]
      np.testing.assert_array_equal(batched_observations[:, i],
                                    _stack(single_steps, 'observation'))
    # Different seeds: the envs of one batch do not repeat each other.
    self.assertFalse(np.array_equal(batched_observations[:, 0],
                                    batched_observations[:, 1]))

  @parameterized.named_parameters(('in_process', False), ('parallel', True))
  def test_cartpole_same_seed_same_trajectories(self, parallel):
    first = _rollout(self._make(_CARTPOLE, 2, seed=5, parallel=parallel),
                     40, 2)
    second = _rollout(self._make(_CARTPOLE, 2, seed=5, parallel=parallel),
                      40, 2)
    other = _rollout(self._make(_CARTPOLE, 2, seed=6, parallel=parallel),
                     40, 2)
    for field in ('observation', 'reward', 'discount', 'step_type'):
      np.testing.assert_array_equal(_stack(first, field),
                                    _stack(second, field))
    self.assertFalse(np.array_equal(_stack(first, 'observation'),
                                    _stack(other, 'observation')))
    # 40 random steps end at least one CartPole episode, so auto-reset is
    # covered.
    self.assertIn(ts.StepType.LAST, _stack(first, 'step_type'))

  def test_parallel_matches_in_process(self):
    in_process = _rollout(self._make(_CARTPOLE, 2, seed=3, parallel=False),
                          30, 2)
    parallel = _rollout(self._make(_CARTPOLE, 2, seed=3, parallel=True),
                        30, 2)
    np.testing.assert_array_equal(_stack(in_process, 'observation'),
                                  _stack(parallel, 'observation'))

  @parameterized.named_parameters(('in_process', False), ('parallel', True))
  def test_last_infos(self, parallel):
    env = self._make(
        functools.partial(fake_envs.load_counting, episode_length=5), 2,
        seed=0, parallel=parallel)
    env.reset()
    self.assertEqual([info['count'] for info in batched.last_infos(env)],
                     [0, 0])
    env.step(np.zeros(2, dtype=np.int64))
    env.step(np.zeros(2, dtype=np.int64))
    self.assertEqual([info['count'] for info in batched.last_infos(env)],
                     [2, 2])

  @parameterized.named_parameters(
      # Episodes of 3 that terminate, and episodes truncated at 2 steps.
      ('terminations', functools.partial(fake_envs.load_counting,
                                         episode_length=3)),
      ('truncations', functools.partial(fake_envs.load_counting,
                                        episode_length=9,
                                        max_episode_steps=2)),
      ('cartpole', _CARTPOLE),
      ('dict_observations', fake_envs.load_dict_obs))
  def test_gymnasium_batch_matches_tf_agents_batch(self, loader):
    seeds = batched.env_seeds(4, 3)
    stock = batched_py_environment.BatchedPyEnvironment(
        [loader(seed=seed) for seed in seeds], multithreading=False)
    fast = batched.GymnasiumBatch([loader(seed=seed) for seed in seeds])
    self.assertEqual(fast.time_step_spec(), stock.time_step_spec())
    stock_steps = _rollout(stock, 40, 3)
    fast_steps = _rollout(fast, 40, 3)
    for stock_step, fast_step in zip(stock_steps, fast_steps):
      for field in ('step_type', 'reward', 'discount'):
        expected = np.asarray(getattr(stock_step, field))
        actual = getattr(fast_step, field)
        self.assertEqual(actual.dtype, expected.dtype, field)
        np.testing.assert_array_equal(actual, expected, err_msg=field)
      for expected, actual in zip(
          tf.nest.flatten(stock_step.observation),
          tf.nest.flatten(fast_step.observation)):
        self.assertEqual(actual.dtype, expected.dtype)
        np.testing.assert_array_equal(actual, expected)
    step_types = _stack(fast_steps, 'step_type')
    self.assertIn(ts.StepType.LAST, step_types)
    self.assertIn(ts.StepType.FIRST, step_types[1:])

  def test_gymnasium_batch_rejects_mixed_specs(self):
    with self.assertRaisesRegex(ValueError, 'Env 1 of the batch'):
      batched.GymnasiumBatch([
          fake_envs.load_counting(seed=0),
          fake_envs.load_correct_action(seed=0, num_actions=3)])

  def test_rejects_empty_batch(self):
    with self.assertRaisesRegex(ValueError, 'num_envs'):
      batched.make_batched_env(fake_envs.load_counting, num_envs=0, seed=0)

  def test_parallel_without_multiprocessing_says_what_to_do(self):
    with mock.patch.object(multiprocessing_core, 'initialized',
                           return_value=False):
      with self.assertRaisesRegex(RuntimeError, 'handle_main'):
        batched.make_batched_env(fake_envs.load_counting, num_envs=2, seed=0,
                                 parallel=True)

  def test_env_seeds(self):
    self.assertEqual(batched.env_seeds(7, 3), [7, 8, 9])
    self.assertEqual(batched.env_seeds(None, 2), [None, None])


if __name__ == '__main__':
  absltest.main()
