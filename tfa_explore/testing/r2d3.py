"""Helpers of the R2D3 tests: small agents, a demo source, demo episodes."""

import tensorflow as tf
from tf_agents.specs import tensor_spec

from tfa_explore.agents.r2d3 import agent as r2d3_agent
from tfa_explore.replay import demonstrations
from tfa_explore.testing import r2d2 as r2d2_testing

SMALL_CONFIG = r2d2_testing.SMALL_CONFIG
TestCase = r2d2_testing.TestCase


def make_agent_from_specs(time_step_spec, action_spec,
                          sequence_config=SMALL_CONFIG, intrinsic_head=False,
                          **kwargs):
  """An initialized R2D3Agent built from specs alone (no environment).

  `intrinsic_head`: the network's Q_I head (on with an `exploration`).
  """
  intrinsic_head = intrinsic_head or kwargs.get('exploration') is not None
  time_step_spec = tensor_spec.from_spec(time_step_spec)
  action_spec = tensor_spec.from_spec(action_spec)
  network = r2d2_testing.small_network(time_step_spec, action_spec,
                                       intrinsic_head=intrinsic_head)
  kwargs.setdefault('optimizer', tf.keras.optimizers.Adam(1e-2))
  kwargs.setdefault('train_step_counter', tf.Variable(0, dtype=tf.int64))
  agent = r2d3_agent.R2D3Agent(time_step_spec, action_spec, network,
                               sequence_config=sequence_config, **kwargs)
  agent.initialize()
  return agent


def make_agent(env=None, **kwargs):
  """`make_agent_from_specs` with the specs of `env` (default Counting-v0)."""
  env = env or r2d2_testing.counting_env()
  return make_agent_from_specs(env.time_step_spec(), env.action_spec(),
                               **kwargs)


class ActionSequenceSource:
  """A demo source that plays a fixed list of actions, cycling."""

  def __init__(self, actions):
    self._actions = list(actions)
    self._index = 0
    self.description = f'actions {self._actions}'

  def reset(self):
    self._index = 0

  def action(self, env, time_step):
    del env, time_step
    action = self._actions[self._index % len(self._actions)]
    self._index += 1
    return action


def counting_episodes(num_episodes=3, episode_length=5, actions=(1, 0, 1)):
  """Recorded Counting-v0 episodes (returns n (n + 1) / 2) and the env."""
  env = r2d2_testing.counting_env(episode_length=episode_length)
  return (demonstrations.record_episodes(
      env, ActionSequenceSource(actions), num_episodes), env)
