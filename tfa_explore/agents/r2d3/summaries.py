"""TensorBoard summaries of R2D3 training, in one place.

Tags (scalars at the agent's `train_step_counter`), written next to the
R2D2 ones (`agents.r2d2.summaries`; its `Losses/td_loss` equals
`Losses/ntd` here):

Losses/
  ntd, td1, margin, l2       each loss term before its weight
  total                      the weighted sum that is minimised
Replay/
  demo_fraction              share of the batch's sequences from the
                             demonstration table (realised demo ratio)
Q/
  demo_action                online Q(s, a_E) on valid demonstration steps
  other_actions              mean online Q(s, a), a != a_E, on those steps
"""

import tensorflow as tf


def write_loss_info(extra, step):
  """Writes the R2D3 fields of an `R2D3LossInfo`."""
  for name in ('ntd', 'td1', 'margin', 'l2', 'total'):
    tf.summary.scalar(f'Losses/{name}', getattr(extra, f'{name}_loss'),
                      step=step)
  tf.summary.scalar('Replay/demo_fraction', extra.demo_fraction, step=step)
  tf.summary.scalar('Q/demo_action', extra.q_demo_action, step=step)
  tf.summary.scalar('Q/other_actions', extra.q_other_actions, step=step)
