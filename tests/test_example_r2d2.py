"""examples/r2d2_custom_env.py: R2D2 on a user's env in a stock pipeline.

One tiny run of the example's `train` (stock Actor and Learner on our
Reverb table, sequence observer, dataset and priority updater) is checked
for what it must have done: learner steps at the replay ratio, sequences
sampled from the table, a saved greedy policy that acts on the raw
gymnasium env exactly as on the wrapped one. The priority write-back is
checked on the example's own replay pieces, step by step.
"""

import importlib.util
import os
import shutil
import tempfile

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf
from tf_agents.policies import py_tf_eager_policy
from tf_agents.train import actor
from tf_agents.train.utils import spec_utils
from tf_agents.trajectories import time_step as ts

from tfa_explore import replay
from tfa_explore.agents import SequenceConfig
from tfa_explore.testing import r2d2 as support

_EXAMPLE = os.path.join(os.path.dirname(__file__), os.pardir, 'examples',
                        'r2d2_custom_env.py')
NUM_ITERATIONS = 3
MIN_SIZE_TO_SAMPLE = 8
NUM_EVAL_EPISODES = 10
DELAY = 2  # 3-step episodes
SAMPLES_PER_INSERT = 16.0
BATCH_SIZE = 8


def _load_example():
  """The example as a module; loaded once (it defines absl flags)."""
  if _EXAMPLE_MODULE:
    return _EXAMPLE_MODULE[0]
  spec = importlib.util.spec_from_file_location('r2d2_custom_env', _EXAMPLE)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  _EXAMPLE_MODULE.append(module)
  return module


_EXAMPLE_MODULE = []


@pytest.mark.integration
class ExampleTrainTest(support.TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.example = _load_example()
    cls.root_dir = tempfile.mkdtemp(prefix='r2d2_example_')
    cls.results = cls.example.train(
        cls.root_dir, num_iterations=NUM_ITERATIONS,
        samples_per_insert=SAMPLES_PER_INSERT, batch_size=BATCH_SIZE,
        delay=DELAY, min_size_to_sample=MIN_SIZE_TO_SAMPLE, eval_interval=2,
        num_eval_episodes=NUM_EVAL_EPISODES, seed=0)

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.root_dir, ignore_errors=True)
    super().tearDownClass()

  def test_learner_steps_follow_the_replay_ratio(self):
    results = self.results
    self.assertGreaterEqual(results['sequences_before_training'],
                            MIN_SIZE_TO_SAMPLE)
    written_while_training = (results['sequences_written'] -
                              results['sequences_before_training'])
    self.assertGreater(written_while_training, 0)
    # 16 samples per insert in batches of 8: 2 learner steps per sequence.
    self.assertEqual(results['train_steps'], 2 * written_while_training)
    # Initial collect + 3 iterations of 20 env steps.
    self.assertEqual(results['env_steps'] % 20, 0)
    self.assertGreaterEqual(results['env_steps'], 4 * 20)

  def test_the_learner_sampled_the_table(self):
    self.assertGreaterEqual(self.results['sequences_sampled'],
                            self.results['train_steps'] * BATCH_SIZE)

  def test_learner_wrote_summaries_and_evaluations_ran(self):
    self.assertNotEmpty(tf.io.gfile.glob(
        os.path.join(self.root_dir, 'train', 'events.out.tfevents.*')))
    evaluations = self.results['evaluations']
    self.assertLen(evaluations, 2)  # at iteration 2 and at the end
    for _, success in evaluations:
      self.assertBetween(success, 0.0, 1.0)
    self.assertEqual(evaluations[-1][1], self.results['greedy_success_rate'])

  def test_saved_policy_acts_on_raw_observations_as_on_wrapped_ones(self):
    """The saved policy, fed by hand from the raw env, in lockstep with the
    example's wrapped env: same time steps, same actions, same states.

    Both envs get the policy's action at the query and a wait before it
    (a barely trained policy may answer at the cue, ending every episode
    at its first step), so the recurrent state runs through whole
    episodes.
    """
    policy = tf.saved_model.load(self.results['policy_dir'])
    wrapped = self.example.make_env(seed=5, delay=DELAY)
    raw = gym.make(self.example.ENV_ID, delay=DELAY)
    raw_state = policy.get_initial_state(batch_size=1)
    wrapped_state = policy.get_initial_state(batch_size=1)
    observation, _ = raw.reset(seed=5)
    raw_step = ts.restart(observation[np.newaxis], batch_size=1)
    wrapped_step = wrapped.reset()
    lstm_states = []
    for _ in range(4 * (DELAY + 1)):  # 4 episodes
      batched = tf.nest.map_structure(lambda x: np.asarray(x)[np.newaxis],
                                      wrapped_step)
      for raw_leaf, wrapped_leaf in zip(tf.nest.flatten(raw_step),
                                        tf.nest.flatten(batched)):
        np.testing.assert_array_equal(raw_leaf, wrapped_leaf)
      raw_action = policy.action(raw_step, raw_state)
      wrapped_action = policy.action(batched, wrapped_state)
      self.assertAllEqual(raw_action.action, wrapped_action.action)
      self.assertIn(int(raw_action.action[0]), (0, 1, 2))
      self.assertAllClose(raw_action.state, wrapped_action.state)
      raw_state, wrapped_state = raw_action.state, wrapped_action.state
      lstm_states.append(tf.nest.flatten(raw_state)[0].numpy())
      is_query = raw_step.observation[0, 2] == 1.0
      action = (int(raw_action.action[0]) if is_query else
                self.example.CueMemoryEnv.WAIT)
      wrapped_step = wrapped.step(np.int64(action))
      observation, reward, terminated, _, _ = raw.step(action)
      if terminated:
        observation, _ = raw.reset()
        raw_step = ts.restart(observation[np.newaxis], batch_size=1)
        wrapped_step = wrapped.step(np.int64(0))  # auto-reset
      else:
        raw_step = ts.transition(observation[np.newaxis],
                                 np.array([reward], np.float32),
                                 np.ones(1, np.float32))
    # The recurrent state moves with the observations.
    self.assertGreater(len({state.tobytes() for state in lstm_states}), 4)

  def test_run_saved_policy_matches_the_final_evaluation(self):
    # Same eval seed, same cues, deterministic greedy policy.
    self.assertAllClose(
        self.example.run_saved_policy(self.results['policy_dir'],
                                      self.results['eval_seed'], DELAY,
                                      NUM_EVAL_EPISODES),
        self.results['greedy_success_rate'])


@pytest.mark.integration
class ExamplePriorityWriteBackTest(support.TestCase):
  """The example's replay pieces send the learner's priorities by key."""

  def test_learner_priorities_reach_the_table_by_key(self):
    example = _load_example()
    tf.random.set_seed(0)
    env = example.make_env(seed=0, delay=DELAY)
    _, action_spec, time_step_spec = spec_utils.get_tensor_specs(env)
    agent = example.make_agent(
        time_step_spec, action_spec, tf.Variable(0, dtype=tf.int64),
        SequenceConfig(burn_in_steps=2, trace_length=6, replay_period=3),
        learning_rate=1e-2)
    # Slack far beyond what the test samples: nothing waits on the limiter.
    r2d2_replay = example.make_replay(
        agent, capacity=100, samples_per_insert=1.0, min_size_to_sample=1,
        error_buffer=1e6)
    self.addCleanup(r2d2_replay.server.stop)
    actor.Actor(
        env, py_tf_eager_policy.PyTFEagerPolicy(agent.collect_policy),
        agent.train_step_counter, steps_per_run=30,
        observers=[r2d2_replay.observer]).run()
    r2d2_replay.observer.flush()
    num_items = r2d2_replay.observer.num_items_written
    self.assertGreater(num_items, 4)
    batches = iter(replay.replay_dataset(r2d2_replay.buffer, agent,
                                         batch_size=4))
    # Before any update the learner's priorities equal the actor's initial
    # ones (same network as online and target); one step changes them.
    agent.train(next(batches)[0])
    experience, sample_info = next(batches)
    loss_info = agent.train(experience)
    r2d2_replay.priority_updater((experience, sample_info), loss_info)

    sent = dict(zip(sample_info.key.numpy().tolist(),
                    loss_info.extra.priorities.numpy().tolist()))
    initial = dict(zip(sample_info.key.numpy().tolist(),
                       sample_info.priority.numpy().tolist()))
    # The table shows an item's priority only when it samples the item,
    # which never happens at priority 0 (a sequence without a valid TD
    # step, e.g. mostly padding); those keys are left out of the check.
    visible = {key: p for key, p in sent.items() if p > 1e-3}
    self.assertTrue(any(abs(p - initial[key]) > 1e-6
                        for key, p in visible.items()))
    in_table = {}
    for sample in r2d2_replay.buffer.py_client.sample(
        example.TABLE_NAME, num_samples=5000, emit_timesteps=False):
      in_table[int(sample.info.key)] = float(sample.info.priority)
      if set(visible) <= set(in_table):
        break
    for key, priority in visible.items():
      self.assertAllClose(in_table[key], priority, rtol=1e-6)


if __name__ == '__main__':
  tf.test.main()
