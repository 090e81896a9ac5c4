"""RndPPOAgent through the stock TF-Agents Reverb + Actor + PPOLearner path."""

import os

import numpy as np
import portpicker
import reverb
import tensorflow as tf
from tf_agents.policies import py_tf_eager_policy
from tf_agents.replay_buffers import reverb_replay_buffer
from tf_agents.replay_buffers import reverb_utils
from tf_agents.train import actor
from tf_agents.train import ppo_learner
from tf_agents.train.utils import train_utils

# pytest puts tests/ on sys.path (rootdir-relative 'prepend' import mode).
import test_rnd_agent  # pylint: disable=g-bad-import-order

from tfa_explore.testing import fake_envs

SEQUENCE_LENGTH = 6
TABLES = ('training_table', 'normalization_table')


class _TestCase(tf.test.TestCase):
  # tf.test.TestCase.test_session is a deprecated helper, not a test.
  test_session = None


class ReverbPipelineTest(_TestCase):

  def test_actor_reverb_ppo_learner(self):
    # ReverbAddTrajectoryObserver does not write sequences across episode
    # ends, so the episode (20 steps) outlasts the collected sequence.
    py_env = fake_envs.load_counting(seed=0, episode_length=20)
    train_step = train_utils.create_train_step()
    agent = test_rnd_agent.make_agent(
        py_env, num_epochs=1, num_minibatches=1,
        compute_value_and_advantage_in_train=False,
        update_normalizers_in_train=False, train_step_counter=train_step)

    tables = [
        reverb.Table(name, max_size=100, sampler=reverb.selectors.Fifo(),
                     remover=reverb.selectors.Fifo(),
                     rate_limiter=reverb.rate_limiters.MinSize(1),
                     max_times_sampled=1)
        for name in TABLES
    ]
    server = reverb.Server(tables, port=portpicker.pick_unused_port())
    try:
      address = f'localhost:{server.port}'
      train_buffer, normalization_buffer = [
          reverb_replay_buffer.ReverbReplayBuffer(
              agent.collect_data_spec, sequence_length=SEQUENCE_LENGTH,
              table_name=name, server_address=address)
          for name in TABLES
      ]
      observer = reverb_utils.ReverbAddTrajectoryObserver(
          train_buffer.py_client, list(TABLES),
          sequence_length=SEQUENCE_LENGTH, stride_length=SEQUENCE_LENGTH)
      collect_actor = actor.Actor(
          py_env,
          py_tf_eager_policy.PyTFEagerPolicy(agent.collect_policy,
                                             use_tf_function=True),
          train_step, steps_per_run=SEQUENCE_LENGTH, observers=[observer])

      learner = ppo_learner.PPOLearner(
          os.path.join(self.get_temp_dir(), 'learner'), train_step, agent,
          experience_dataset_fn=lambda: train_buffer.as_dataset(
              sample_batch_size=1,
              sequence_preprocess_fn=agent.preprocess_sequence),
          normalization_dataset_fn=lambda: normalization_buffer.as_dataset(
              sample_batch_size=1),
          num_samples=1, num_epochs=2, shuffle_buffer_size=1,
          triggers=[])
      predictor = agent.intrinsic_reward.predictor_net
      predictor_before = [v.numpy().copy() for v in predictor.variables]

      collect_actor.run()
      observer.flush()
      learner.run()

      # 2 learner epochs x 1 agent epoch x 1 minibatch.
      self.assertEqual(int(train_step), 2)
      # The learner fed the RND normaliser through update_observation_
      # normalizer; the preprocessing ran the intrinsic-return filter.
      self.assertAllClose(
          agent.intrinsic_reward.observation_normalizer.count(),
          [SEQUENCE_LENGTH], atol=1e-6)
      self.assertLen(
          agent.intrinsic_reward.return_normalizer.filter_state.numpy(), 1)
      changed = [not np.array_equal(b, a) for b, a in zip(
          predictor_before, [v.numpy() for v in predictor.variables])]
      self.assertTrue(all(changed))
    finally:
      server.stop()


if __name__ == '__main__':
  tf.test.main()
