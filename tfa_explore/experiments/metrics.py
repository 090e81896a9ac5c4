"""Train metrics the experiment loops add to TF-Agents' own."""

import tensorflow as tf
from tf_agents.metrics import tf_metric
from tf_agents.utils import common


class TerminatedEpisodes(tf_metric.TFStepMetric):
  """Counts episodes that ended by TERMINATION, not by a time limit.

  A transition whose next step is LAST with discount 0 ends a terminated
  episode (`suite_gymnasium` gives truncation discount 1). In sparse-reward
  tasks that is the success count: MountainCar's car reaching the flag,
  MiniGrid's agent reaching the goal (or, in MiniGrid, also dying in lava).
  """

  def __init__(self, name='TerminatedEpisodes', prefix='Metrics',
               dtype=tf.int64):
    super().__init__(name=name, prefix=prefix)
    self.dtype = dtype
    self.number = common.create_variable(
        initial_value=0, dtype=dtype, shape=(), name='number')

  def call(self, trajectory):
    terminated = tf.logical_and(
        trajectory.is_last(),
        tf.equal(tf.cast(trajectory.discount, tf.float32), 0.0))
    self.number.assign_add(
        tf.cast(tf.math.count_nonzero(terminated), self.dtype))
    return trajectory

  def result(self):
    return tf.identity(self.number, name=self.name)

  @common.function
  def reset(self):
    self.number.assign(0)
