"""on_policy.RolloutCollector: one traced call per rollout of a batched env."""

import functools

import numpy as np
import tensorflow as tf
from tf_agents.policies import random_tf_policy
from tf_agents.specs import tensor_spec
from tf_agents.trajectories import time_step as ts

from tfa_explore.environments import batched
from tfa_explore.experiments import on_policy
from tfa_explore.testing import fake_envs

NUM_ENVS = 2
ROLLOUT_LENGTH = 4
EPISODE_LENGTH = 3


class _TestCase(tf.test.TestCase):
  # tf.test.TestCase.test_session is a deprecated helper, not a test.
  test_session = None


class RolloutCollectorTest(_TestCase):

  def test_rollouts_continue_episodes_and_feed_the_metrics(self):
    environment = batched.make_batched_env(
        functools.partial(fake_envs.load_counting,
                          episode_length=EPISODE_LENGTH), NUM_ENVS, seed=0)
    self.addCleanup(environment.close)
    policy = random_tf_policy.RandomTFPolicy(
        tensor_spec.from_spec(environment.time_step_spec()),
        tensor_spec.from_spec(environment.action_spec()))
    metrics = on_policy.TrainMetrics(NUM_ENVS, 10)
    collector = on_policy.RolloutCollector(environment, policy,
                                           ROLLOUT_LENGTH, metrics.as_list())
    first = collector.collect()
    second = collector.collect()

    self.assertEqual(first.observation.shape, (NUM_ENVS, ROLLOUT_LENGTH, 1))
    # Counting-v0 observes its step index and terminates when it reaches
    # EPISODE_LENGTH: 0 1 2 3, then the reset step (FIRST) 0 1 2 3; the
    # second rollout continues where the first stopped.
    observations = np.concatenate([first.observation[..., 0],
                                   second.observation[..., 0]], axis=1)
    expected = [0, 1, 2, 3, 0, 1, 2, 3]
    for env in range(NUM_ENVS):
      self.assertAllEqual(observations[env], expected)
    step_types = np.concatenate([first.step_type, second.step_type], axis=1)
    self.assertAllEqual(step_types[0], [
        ts.StepType.FIRST, ts.StepType.MID, ts.StepType.MID,
        ts.StepType.LAST, ts.StepType.FIRST, ts.StepType.MID,
        ts.StepType.MID, ts.StepType.LAST])
    rewards = np.concatenate([first.reward, second.reward], axis=1)
    # Reward of the transition into step t is t; the reset step pays 0.
    self.assertAllEqual(rewards[0], [1, 2, 3, 0, 1, 2, 3, 0])

    # 8 steps per env, of which 2 are LAST -> FIRST boundaries.
    self.assertEqual(int(metrics.env_steps.result()), NUM_ENVS * 6)
    self.assertEqual(int(metrics.episodes.result()), NUM_ENVS * 2)
    # Every episode returns 1 + 2 + 3.
    self.assertAllClose(metrics.average_return.result(), 6.0)
    self.assertEqual(int(metrics.terminated.result()), NUM_ENVS * 2)


if __name__ == '__main__':
  tf.test.main()
