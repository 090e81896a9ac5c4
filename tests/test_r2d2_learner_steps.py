"""The R2D2 learner's steps when sample calls time out part-way.

A slow env (Atari) makes the learner wait on the rate limiter for every
batch, so a call of several learner steps often ends in a sample timeout
after some of them: the iteration must count those and ask for the rest
(`learner_steps.LearnerSteps`' rule).
"""

import contextlib
import types

from absl.testing import absltest
import tensorflow as tf

from tfa_explore.experiments.r2d2 import learner as learner_lib
from tfa_explore.experiments.r2d2 import learner_steps


class _TimingOutSteps:
  """`LearnerSteps` whose sample stream runs dry after `per_call` batches.

  Each iterator of the dataset holds `per_call` batches; the next sample
  raises OutOfRangeError inside the traced call, as a sample timeout does.
  """

  def __init__(self, train_step, per_call):
    self.train_step = train_step
    self.dataset = tf.data.Dataset.range(per_call)
    self.requested = []

    def single_train_step(iterator):
      batch = next(iterator)
      with tf.control_dependencies([batch]):
        self.train_step.assign_add(1)
        return tf.identity(batch)

    self._steps = learner_steps.LearnerSteps(single_train_step)

  def run(self, iterator, iterations):
    self.requested.append(iterations)
    if len(self.requested) > 20:
      raise AssertionError(f'the learner kept asking: {self.requested}')
    return self._steps.run(iterator, iterations)


def _learner(steps):
  """A `Learner` with only what `train_iteration` touches."""
  learner = learner_lib.Learner.__new__(learner_lib.Learner)
  learner.train_step = steps.train_step
  learner._settings = types.SimpleNamespace(  # pylint: disable=protected-access
      train_steps_per_iteration=10, sample_timeout_seconds=600.0)
  learner._dataset = steps.dataset  # pylint: disable=protected-access
  learner._iterator = None  # pylint: disable=protected-access
  learner._steps = steps  # pylint: disable=protected-access
  learner._stop = None  # pylint: disable=protected-access
  learner._loss_info = None  # pylint: disable=protected-access
  learner._summary_context = contextlib.nullcontext  # pylint: disable=protected-access
  learner._budget_spent = lambda: False  # pylint: disable=protected-access
  learner.read_progress = lambda: None
  return learner


class TrainIterationTest(absltest.TestCase):

  def test_timeouts_part_way_still_end_the_iteration_at_its_count(self):
    steps = _TimingOutSteps(tf.Variable(0, dtype=tf.int64), per_call=3)
    _learner(steps).train_iteration()
    # 3 + 3 + 3 + 1: each call asks for what is left, none for more.
    self.assertEqual(steps.requested, [10, 7, 4, 1])
    self.assertEqual(int(steps.train_step), 10)

  def test_an_iteration_without_timeouts_is_one_call(self):
    steps = _TimingOutSteps(tf.Variable(5, dtype=tf.int64), per_call=100)
    learner = _learner(steps)
    learner.train_iteration()
    self.assertEqual(steps.requested, [10])
    self.assertEqual(int(steps.train_step), 15)
    # The last step's batch: the tenth of the stream.
    self.assertEqual(int(learner._loss_info), 9)  # pylint: disable=protected-access

  def test_a_timeout_counts_the_steps_before_it(self):
    steps = _TimingOutSteps(tf.Variable(0, dtype=tf.int64), per_call=3)
    self.assertIsNone(steps.run(iter(steps.dataset), 5))
    self.assertEqual(int(steps.train_step), 3)


if __name__ == '__main__':
  absltest.main()
