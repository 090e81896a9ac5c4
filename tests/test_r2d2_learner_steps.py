"""The R2D2 learner's steps when sample calls time out part-way.

A slow env (Atari) makes the learner wait on the rate limiter for every
batch, so a call of several learner steps often ends in a sample timeout
after some of them: the iteration must count those and ask for the rest.
"""

import contextlib
import types

from absl.testing import absltest
import tensorflow as tf

from tfa_explore.experiments.r2d2 import learner as learner_lib


class _TimingOutTrain:
  """A learner's traced call that times out after `per_call` steps."""

  def __init__(self, train_step, per_call):
    self.train_step = train_step
    self.per_call = per_call
    self.requested = []

  def __call__(self, iterator, num_steps):
    del iterator
    num_steps = int(num_steps)
    self.requested.append(num_steps)
    if len(self.requested) > 20:
      raise AssertionError(f'the learner kept asking: {self.requested}')
    done = min(self.per_call, num_steps)
    self.train_step.assign_add(done)
    if done < num_steps:
      raise tf.errors.DeadlineExceededError(None, None, 'rate limiter')
    return 'loss info'


def _learner(train):
  """A `Learner` with only what `train_iteration` touches."""
  learner = learner_lib.Learner.__new__(learner_lib.Learner)
  learner.train_step = train.train_step
  learner._settings = types.SimpleNamespace(  # pylint: disable=protected-access
      train_steps_per_iteration=10, sample_timeout_seconds=600.0)
  learner._dataset = [None]  # pylint: disable=protected-access
  learner._iterator = None  # pylint: disable=protected-access
  learner._train = train  # pylint: disable=protected-access
  learner._stop = None  # pylint: disable=protected-access
  learner._loss_info = None  # pylint: disable=protected-access
  learner._summary_context = contextlib.nullcontext  # pylint: disable=protected-access
  learner._budget_spent = lambda: False  # pylint: disable=protected-access
  learner.read_progress = lambda: None
  return learner


class TrainIterationTest(absltest.TestCase):

  def test_timeouts_part_way_still_end_the_iteration_at_its_count(self):
    train = _TimingOutTrain(tf.Variable(0, dtype=tf.int64), per_call=3)
    _learner(train).train_iteration()
    # 3 + 3 + 3 + 1: each call asks for what is left, none for more.
    self.assertEqual(train.requested, [10, 7, 4, 1])
    self.assertEqual(int(train.train_step), 10)

  def test_an_iteration_without_timeouts_is_one_call(self):
    train = _TimingOutTrain(tf.Variable(5, dtype=tf.int64), per_call=100)
    learner = _learner(train)
    learner.train_iteration()
    self.assertEqual(train.requested, [10])
    self.assertEqual(int(train.train_step), 15)
    self.assertEqual(learner._loss_info, 'loss info')  # pylint: disable=protected-access


if __name__ == '__main__':
  absltest.main()
