"""The fake envs that learning tests rely on behave as documented."""

from absl.testing import absltest
import numpy as np

from tfa_explore.testing import fake_envs


class RecallTest(absltest.TestCase):

  def _episode(self, env, answer):
    """(observations, rewards) of one episode; answer(cue) at the query."""
    time_step = env.reset()
    cue = env.last_info['cue']
    observations, rewards = [time_step.observation], []
    while not time_step.is_last():
      query = time_step.observation[1] == 1
      time_step = env.step(np.int64(answer(cue) if query else 0))
      observations.append(time_step.observation)
      rewards.append(float(time_step.reward))
    return cue, observations, rewards

  def test_the_cue_is_shown_first_and_asked_for_last(self):
    env = fake_envs.load_recall(seed=0, delay=3)
    cue, observations, rewards = self._episode(env, lambda cue: (cue + 1) // 2)
    self.assertIn(cue, (-1, 1))
    # Observations of the 4 decision steps: cue, blank, blank, query.
    np.testing.assert_array_equal(
        np.stack(observations[:4]),
        [[cue, 0], [0, 0], [0, 0], [0, 1]])
    self.assertEqual(rewards, [0.0, 0.0, 0.0, 1.0])

  def test_the_wrong_answer_pays_nothing(self):
    env = fake_envs.load_recall(seed=0, delay=2)
    _, _, rewards = self._episode(env, lambda cue: (1 - cue) // 2)
    self.assertEqual(rewards, [0.0, 0.0, 0.0])

  def test_cues_are_seeded_and_both_occur(self):
    def cues(seed):
      env = fake_envs.load_recall(seed=seed)
      return [self._episode(env, lambda cue: 0)[0] for _ in range(20)]
    self.assertEqual(cues(3), cues(3))
    self.assertCountEqual(set(cues(3)), {-1, 1})

  def test_acting_before_the_query_costs_1(self):
    env = fake_envs.load_recall(seed=0, delay=3)
    env.reset()
    rewards = [float(env.step(np.int64(action)).reward) for action in (1, 0, 1)]
    self.assertEqual(rewards, [-1.0, 0.0, -1.0])

  def test_a_delay_below_one_is_refused(self):
    with self.assertRaisesRegex(ValueError, 'delay must be >= 1'):
      fake_envs.RecallEnv(delay=0)


if __name__ == '__main__':
  absltest.main()
