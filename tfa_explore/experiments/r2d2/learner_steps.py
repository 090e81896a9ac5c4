"""Several R2D2 learner steps in one traced call (`LearnerSteps`)."""

from typing import Any, Callable, Optional

import tensorflow as tf
from tf_agents.utils import common

# What a sample call that waited too long raises (in the graph, or from
# the Python iterator).
SAMPLE_TIMEOUTS = (StopIteration, tf.errors.OutOfRangeError,
                   tf.errors.DeadlineExceededError)


class LearnerSteps:
  """`run(iterator, iterations)`: that many learner steps in one call.

  TF-Agents' `Learner.run(iterations)` over its `single_train_step`, and
  Acme's `process_multiple_batches`: `single_train_step(iterator)` takes
  the next batch from `iterator` inside the graph, trains on it and
  writes its priorities back; `run` runs it `iterations` times in one
  traced `tf.while_loop`, one step after the other
  (`parallel_iterations=1`: each step samples, trains and writes its
  priorities before the next samples). Why one call: passing the nested
  batch in from Python cost more CPU (packing it, then matching it to the
  traced signature) than the step's ops, and a call per step costs the
  Python dispatch each time.

  Timeouts and partial completion: a sample call that times out
  (`SAMPLE_TIMEOUTS`) ends the call part-way. The steps before it are
  done, their priorities written, and counted by the train step counter;
  the step whose sample timed out did nothing (`single_train_step` makes
  its ops wait for its batch, the counter's increment too); the iterator
  is spent. `run` then returns None, and the caller starts a new iterator
  and asks for the steps still missing (the counter says how many were
  done).
  """

  def __init__(self, single_train_step: Callable[[Any], Any]):
    """`single_train_step(iterator)`: one step in the graph; its LossInfo."""
    self._single_train_step = single_train_step
    self._call = common.function(self._steps, autograph=False)

  def run(self, iterator, iterations: int) -> Optional[Any]:
    """`iterations` (>= 1) steps on batches from `iterator`.

    Returns:
      The last step's LossInfo, or None if a sample timeout ended the call
      (see the class doc).
    """
    try:
      return self._call(iterator, tf.constant(iterations, tf.int64))
    except SAMPLE_TIMEOUTS:
      return None

  def _steps(self, iterator, iterations):
    def body(step, _):
      # The root name scope: summaries keep their tags (no 'while/').
      with tf.name_scope(''):
        return step + 1, self._single_train_step(iterator)

    loss_info = self._single_train_step(iterator)
    _, loss_info = tf.while_loop(
        lambda step, _: step < iterations, body,
        (tf.constant(1, iterations.dtype), loss_info),
        parallel_iterations=1)
    return loss_info
