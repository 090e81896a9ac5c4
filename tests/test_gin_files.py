"""Every gin file under gin/ parses and builds its env and agent.

The files are globbed, so a new gin file is covered without editing this
test. Convention checked here (see WORKSPACE.md): each runnable file binds
`run_experiment.experiment`, defines the macros NUM_ENV_STEPS and SEED, and
its experiment has `env_loader` and `agent_fn` parameters; `agent_fn` takes
(time_step_spec, action_spec, train_step_counter).
"""

import glob
import os

from absl.testing import absltest
from absl.testing import parameterized
import gin
import numpy as np
import tensorflow as tf
from tf_agents.environments import tf_py_environment

from tfa_explore.experiments import runner

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GIN_FILES = sorted(glob.glob(os.path.join(REPO_ROOT, 'gin', '**', '*.gin'),
                             recursive=True))


def _relative(path):
  return os.path.relpath(path, REPO_ROOT)


class GinFilesTest(parameterized.TestCase):

  def setUp(self):
    super().setUp()
    gin.clear_config()

  def tearDown(self):
    gin.clear_config()
    super().tearDown()

  def test_gin_files_exist(self):
    names = {_relative(path) for path in GIN_FILES}
    for expected in ('gin/ppo/cartpole.gin', 'gin/ppo/mountaincar.gin',
                     'gin/ppo/minigrid_empty8x8.gin'):
      self.assertIn(expected, names)

  @parameterized.named_parameters(
      (_relative(path).replace('/', '_').replace('.', '_'), path)
      for path in GIN_FILES)
  def test_parses_and_builds(self, path):
    # Overriding the macros must work for every file (the documented way to
    # shorten a run).
    runner.parse_gin([path], ['NUM_ENV_STEPS = 1234', 'SEED = 7'])
    self.assertEqual(gin.query_parameter('%NUM_ENV_STEPS'), 1234)
    self.assertEqual(gin.query_parameter('%SEED'), 7)

    experiment = gin.query_parameter('run_experiment.experiment')
    # A macro reference prints as %NAME.
    self.assertEqual(
        repr(gin.query_parameter(f'{experiment.selector}.num_env_steps')),
        '%NUM_ENV_STEPS')
    self.assertEqual(
        repr(gin.query_parameter(f'{experiment.selector}.seed')), '%SEED')

    env_loader = runner.experiment_reference('env_loader').scoped_configurable_fn
    agent_fn = runner.experiment_reference('agent_fn').scoped_configurable_fn
    env = tf_py_environment.TFPyEnvironment(env_loader(seed=0))
    try:
      agent = agent_fn(
          time_step_spec=env.time_step_spec(),
          action_spec=env.action_spec(),
          train_step_counter=tf.Variable(0, dtype=tf.int64))
      time_step = env.reset()
      policy = agent.collect_policy
      action = policy.action(time_step,
                             policy.get_initial_state(env.batch_size)).action
      spec = env.action_spec()
      action = action.numpy()
      self.assertEqual(action.shape, (1,) + tuple(spec.shape))
      self.assertTrue(np.all(action >= spec.minimum))
      self.assertTrue(np.all(action <= spec.maximum))
    finally:
      env.close()


if __name__ == '__main__':
  absltest.main()
