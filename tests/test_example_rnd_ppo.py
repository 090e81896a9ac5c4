"""examples/rnd_ppo_reverb_learner.py: RndPPOAgent in schulman17's shape.

The same stock pipeline (Actor -> Reverb training and normalisation
tables -> PPOLearner passing whole batches, the agents' own epochs) runs
TF-Agents' `PPOClipAgent` and our `RndPPOAgent`, and both must train
alike: the same gradient steps per iteration, the same policy normaliser
counts, and RND's own statistics advanced once per collected batch,
through `PPOLearner`'s `update_observation_normalizer` call.
"""

import importlib.util
import os

import numpy as np
import pytest
import tensorflow as tf
from tf_agents.agents.ppo import ppo_clip_agent
from tf_agents.train.utils import spec_utils
from tf_agents.train.utils import train_utils
from tf_agents.trajectories import time_step as ts

from tfa_explore.environments import suite_gymnasium

_EXAMPLE = os.path.join(os.path.dirname(__file__), os.pardir, 'examples',
                        'rnd_ppo_reverb_learner.py')
SEQUENCE_LENGTH = 32  # env steps per iteration
NUM_EPOCHS = 3
NUM_ITERATIONS = 2
WARM_UP_STEPS = 8


def _load_example():
  spec = importlib.util.spec_from_file_location('rnd_ppo_reverb_learner',
                                                _EXAMPLE)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def _count(normalizer):
  """Element count of a `StreamingTensorNormalizer` (one per feature)."""
  return normalizer.variables[0].numpy()


class _TestCase(tf.test.TestCase):
  # tf.test.TestCase.test_session is a deprecated helper, not a test.
  test_session = None


@pytest.mark.integration
class Schulman17ShapeTest(_TestCase):

  @classmethod
  def setUpClass(cls):
    super().setUpClass()
    cls.example = _load_example()

  def _run(self, kind, policy_save_interval=None):
    tf.random.set_seed(0)
    collect_env = suite_gymnasium.load('CartPole-v1', seed=0)
    eval_env = suite_gymnasium.load('CartPole-v1', seed=1)
    _, action_spec, time_step_spec = spec_utils.get_tensor_specs(collect_env)
    train_step = train_utils.create_train_step()
    agent = self.example.make_agent(kind, time_step_spec, action_spec,
                                    train_step, num_epochs=NUM_EPOCHS)
    root_dir = os.path.join(self.get_temp_dir(), kind)
    records = self.example.train(
        root_dir, agent, train_step, collect_env, eval_env,
        num_iterations=NUM_ITERATIONS,
        collect_sequence_length=SEQUENCE_LENGTH,
        warm_up_steps=WARM_UP_STEPS, eval_interval=NUM_ITERATIONS,
        eval_episodes=1, policy_save_interval=policy_save_interval)
    return agent, records, root_dir

  def test_trains_like_stock_ppo_and_updates_statistics_once(self):
    stock, stock_records, _ = self._run('ppo_clip')
    rnd, rnd_records, root_dir = self._run('rnd_ppo', policy_save_interval=1)

    # Gradient steps: one train call per collected batch, NUM_EPOCHS
    # full-batch steps in it, for both agents.
    self.assertIsInstance(rnd, ppo_clip_agent.PPOClipAgent)
    per_iteration = NUM_EPOCHS
    expected_steps = [per_iteration * (i + 1) for i in range(NUM_ITERATIONS)]
    self.assertEqual([r['train_step'] for r in stock_records], expected_steps)
    self.assertEqual([r['train_step'] for r in rnd_records], expected_steps)

    # The policy's observation normaliser: one update per collected batch.
    frames = NUM_ITERATIONS * SEQUENCE_LENGTH
    self.assertAllEqual(_count(stock._observation_normalizer),  # pylint: disable=protected-access
                        np.full([4], frames))
    self.assertAllEqual(_count(rnd._observation_normalizer),  # pylint: disable=protected-access
                        np.full([4], frames))

    # RND's statistics, also once per batch although train ran
    # NUM_EPOCHS steps on it: the RND normaliser saw the
    # warm-up and every frame once, the intrinsic-return moments one
    # return per transition (T - 1 per sequence).
    intrinsic = rnd.intrinsic_reward
    self.assertAllEqual(intrinsic.observation_normalizer.count(),
                        np.full([4], WARM_UP_STEPS + frames))
    self.assertEqual(float(intrinsic.return_normalizer.count()),
                     NUM_ITERATIONS * (SEQUENCE_LENGTH - 1))
    # One filter slot: the learner samples one sequence per batch.
    self.assertLen(intrinsic.return_normalizer.filter_state.numpy(), 1)

    self.assertIn('eval_return', rnd_records[-1])

    # PolicySaver's export: the greedy policy acts on CartPole's raw
    # observations.
    saved = tf.saved_model.load(
        os.path.join(root_dir, 'policies', 'greedy_policy'))
    step = ts.restart(tf.constant([[0.01, 0.0, -0.02, 0.0]], tf.float32),
                      batch_size=1)
    action = saved.action(step, saved.get_initial_state(1)).action
    self.assertEqual(action.shape, [1])


if __name__ == '__main__':
  tf.test.main()
