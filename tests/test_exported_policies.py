"""Exported policies act on plain gymnasium envs (docs/exported_policies.md).

The presets' encodings applied to gymnasium's own env give exactly the
loaders' observations, and a `PolicySaver` export of a small policy on the
loader's spec, loaded with `tf.saved_model.load`, plays an episode of the
plain env through the docs' own `run_episode` (executed from the page),
choosing the same first action as the in-process policy on the loader's
observation. Importing the environments package leaves MiniGrid unloaded.
"""

import functools
import os
import re
import subprocess
import sys

from absl.testing import absltest
from absl.testing import parameterized
import gymnasium as gym
import numpy as np
import tensorflow as tf
from tf_agents.networks import q_network
from tf_agents.policies import policy_saver
from tf_agents.policies import q_policy
from tf_agents.specs import tensor_spec
from tf_agents.trajectories import time_step as ts

from tfa_explore.agents import R2D2Agent
from tfa_explore.agents import SequenceConfig
from tfa_explore.environments import atari
from tfa_explore.environments import minigrid
from tfa_explore.environments import suite_gymnasium
from tfa_explore.networks import RecurrentDuelingQNetwork
from tfa_explore.networks.recurrent_dueling_q_network import make_input_spec
from tfa_explore.testing import r2d2 as support

_DOC = os.path.join(os.path.dirname(__file__), os.pardir, 'docs',
                    'exported_policies.md')
DOOR_KEY = 'MiniGrid-DoorKey-5x5-v0'
EMPTY = 'MiniGrid-Empty-5x5-v0'
PONG = 'ALE/Pong-v5'
# MiniGrid actions: left, right, forward, pickup, drop, toggle, done.
MINIGRID_ACTIONS = [2, 0, 2, 2, 1, 2, 3, 5, 2, 1, 2, 2, 0, 5, 2]


def _docs_run_episode():
  """`run_episode` as defined by the page's first python block."""
  with open(_DOC) as f:
    blocks = re.findall(r'```python\n(.*?)```', f.read(), re.S)
  namespace = {}
  exec(blocks[0], namespace)  # pylint: disable=exec-used
  return namespace['run_episode']


def _raw_pong(max_frames=18000):
  suite_gymnasium.register_plugins()
  return gym.make(PONG, frameskip=1, repeat_action_probability=0.25,
                  max_num_frames_per_episode=max_frames)


class EncodingTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ('indices', {}),
      ('one_hot', {'one_hot': True}),
      ('without_direction', {'include_direction': False}),
      ('one_hot_fully_observable', {'one_hot': True,
                                    'fully_observable': True}))
  def test_minigrid_encoding_of_raw_observations_is_the_loaders(
      self, kwargs):
    kwargs = dict(kwargs)
    fully_observable = kwargs.pop('fully_observable', False)
    loaded = minigrid.load(DOOR_KEY, seed=3,
                           fully_observable=fully_observable, **kwargs)
    self.addCleanup(loaded.close)
    raw = gym.make(DOOR_KEY)
    if fully_observable:
      from minigrid import wrappers  # pylint: disable=g-import-not-at-top
      raw = wrappers.FullyObsWrapper(raw)
    self.addCleanup(raw.close)
    encode = functools.partial(minigrid.encode_observation, **kwargs)
    spec = loaded.observation_spec()
    observation, _ = raw.reset(seed=3)
    expected = loaded.reset().observation
    for action in MINIGRID_ACTIONS:
      encoded = encode(observation)
      self.assertEqual(encoded.dtype, spec.dtype)
      self.assertEqual(encoded.shape, spec.shape)
      np.testing.assert_array_equal(encoded, expected)
      observation, _, terminated, truncated, _ = raw.step(action)
      expected = loaded.step(np.int64(action)).observation
      self.assertFalse(terminated or truncated)
    np.testing.assert_array_equal(encode(observation), expected)

  def test_atari_preprocessing_of_the_raw_env_is_the_loaders(self):
    loaded = atari.load(PONG, seed=3)
    self.addCleanup(loaded.close)
    raw = atari.preprocess_env(_raw_pong())
    self.addCleanup(raw.close)
    spec = loaded.observation_spec()
    observation, _ = raw.reset(seed=3)
    expected = loaded.reset().observation
    actions = np.random.default_rng(0).integers(0, 6, size=40)
    frames_differ = False
    for action in actions:
      self.assertEqual(observation.dtype, spec.dtype)
      self.assertEqual(observation.shape, spec.shape)
      np.testing.assert_array_equal(observation, expected)
      frames_differ |= not np.array_equal(observation[..., 0],
                                          observation[..., 3])
      observation, reward, _, _, _ = raw.step(int(action))
      time_step = loaded.step(np.int64(action))
      expected = time_step.observation
      self.assertEqual(np.float32(reward), time_step.reward)
    np.testing.assert_array_equal(observation, expected)
    self.assertTrue(frames_differ)  # the stack holds different frames

  def test_atari_preprocessing_refuses_an_env_that_skips_frames(self):
    suite_gymnasium.register_plugins()
    env = gym.make(PONG)  # ALE v5's own frameskip of 4
    self.addCleanup(env.close)
    with self.assertRaisesRegex(ValueError, 'frame'):
      atari.preprocess_env(env)


class LazyImportTest(absltest.TestCase):

  def test_importing_the_environments_package_does_not_import_minigrid(self):
    # A fresh interpreter: this process has imported minigrid already.
    code = ('import sys, tfa_explore.environments as e; '
            'e.encode_minigrid_observation; e.preprocess_atari_env; '
            'print("minigrid" in sys.modules)')
    output = subprocess.run([sys.executable, '-c', code], check=True,
                            capture_output=True, text=True).stdout
    self.assertEqual(output.strip().splitlines()[-1], 'False')


def _r2d2_policy(env, conv_layer_params):
  time_step_spec = tensor_spec.from_spec(env.time_step_spec())
  action_spec = tensor_spec.from_spec(env.action_spec())
  network = RecurrentDuelingQNetwork(
      make_input_spec(time_step_spec.observation, action_spec), action_spec,
      torso_fc_layer_params=(8,), lstm_size=8, dueling_fc_layer_params=(8,),
      conv_layer_params=conv_layer_params)
  agent = R2D2Agent(
      time_step_spec, action_spec, network, tf.keras.optimizers.Adam(),
      sequence_config=SequenceConfig(1, 2, 1),
      train_step_counter=tf.Variable(0, dtype=tf.int64))
  agent.initialize()
  return agent.policy


def _q_policy(env):
  """A stateless stock policy, as PPO's exports are."""
  time_step_spec = tensor_spec.from_spec(env.time_step_spec())
  action_spec = tensor_spec.from_spec(env.action_spec())
  return q_policy.QPolicy(
      time_step_spec, action_spec,
      q_network.QNetwork(time_step_spec.observation, action_spec,
                         fc_layer_params=(8,)))


class SavedPolicyTest(support.TestCase, parameterized.TestCase):

  def _check(self, policy, loaded_env, raw_env, encode):
    """Saves `policy`, plays the raw env with the docs' recipe."""
    policy_dir = os.path.join(self.get_temp_dir(), 'greedy_policy')
    policy_saver.PolicySaver(policy, batch_size=None).save(policy_dir)
    saved = tf.saved_model.load(policy_dir)

    loaded_step = tf.nest.map_structure(
        lambda x: tf.convert_to_tensor(np.asarray(x)[np.newaxis]),
        loaded_env.reset())
    observation, _ = raw_env.reset(seed=7)
    raw_step = ts.restart(np.expand_dims(encode(observation), 0),
                          batch_size=1)
    self.assertAllEqual(
        saved.action(raw_step, saved.get_initial_state(1)).action,
        policy.action(loaded_step, policy.get_initial_state(1)).action)

    episode_return = _docs_run_episode()(saved, raw_env, encode, seed=7)
    self.assertIsInstance(float(episode_return), float)

  def test_minigrid(self):
    loaded = minigrid.load(EMPTY, seed=7, one_hot=True)
    raw = gym.make(EMPTY, max_steps=20)
    self.addCleanup(raw.close)
    self._check(_r2d2_policy(loaded, ((8, 3, 1),)), loaded, raw,
                functools.partial(minigrid.encode_observation, one_hot=True))

  def test_atari(self):
    loaded = atari.load(PONG, seed=7)
    self.addCleanup(loaded.close)
    raw = atari.preprocess_env(_raw_pong(max_frames=120))
    self.addCleanup(raw.close)
    self._check(_r2d2_policy(loaded, ((8, 8, 4),)), loaded, raw,
                lambda observation: observation)

  def test_cartpole(self):
    loaded = suite_gymnasium.load('CartPole-v1', seed=7)
    raw = gym.make('CartPole-v1')
    self.addCleanup(raw.close)
    self._check(_q_policy(loaded), loaded, raw,
                lambda observation: observation)


if __name__ == '__main__':
  tf.test.main()
