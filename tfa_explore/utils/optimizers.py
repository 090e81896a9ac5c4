"""The Adam optimizer the agents' gin factories build."""

from typing import Optional

import tensorflow as tf


def adam_optimizer(learning_rate: float, decay_steps: Optional[int],
                   epsilon: float) -> tf.keras.optimizers.Optimizer:
  """Adam, with the learning rate decaying linearly to 0 if decay_steps.

  The schedule is keyed on the optimizer's own step counter, which the
  agent checkpoint includes, so a resumed run continues the schedule. After
  `decay_steps` updates the rate stays 0.

  Raises:
    ValueError: a learning rate or epsilon <= 0 (a negative rate ascends
      the loss), or decay_steps given and not positive.
  """
  if not learning_rate > 0:
    raise ValueError(f'learning_rate must be > 0, got {learning_rate}.')
  if not epsilon > 0:
    raise ValueError(f'adam_epsilon must be > 0, got {epsilon}.')
  if decay_steps is not None:
    if int(decay_steps) < 1:
      raise ValueError(
          f'learning_rate_decay_steps must be >= 1 or None, got {decay_steps}.')
    learning_rate = tf.keras.optimizers.schedules.PolynomialDecay(
        learning_rate, decay_steps=int(decay_steps), end_learning_rate=0.0,
        power=1.0)
  return tf.keras.optimizers.Adam(learning_rate=learning_rate,
                                  epsilon=epsilon)
