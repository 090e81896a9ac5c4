"""The Adam optimizer the agents' gin factories build."""

from typing import Optional

import tensorflow as tf

from tfa_explore import errors


def adam_optimizer(learning_rate: float, decay_steps: Optional[int],
                   epsilon: float) -> tf.keras.optimizers.Optimizer:
  """Adam, with the learning rate decaying linearly to 0 if decay_steps.

  The schedule is keyed on the optimizer's own step counter, which the
  agent checkpoint includes, so a resumed run continues the schedule. After
  `decay_steps` updates the rate stays 0.

  Raises:
    ValueError: a learning rate or epsilon that is not a finite number
      > 0 (a negative rate ascends the loss), or decay_steps given and not positive.
  """
  errors.check_number('learning_rate', learning_rate, above=0)
  errors.check_number('adam_epsilon', epsilon, above=0)
  if decay_steps is not None:
    errors.check_count('learning_rate_decay_steps', decay_steps)
    learning_rate = tf.keras.optimizers.schedules.PolynomialDecay(
        learning_rate, decay_steps=int(decay_steps), end_learning_rate=0.0,
        power=1.0)
  return tf.keras.optimizers.Adam(learning_rate=learning_rate,
                                  epsilon=epsilon)
