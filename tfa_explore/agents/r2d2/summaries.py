"""TensorBoard summaries of R2D2 training, in one place.

Tags (scalars at the agent's `train_step_counter`):

Losses/
  td_loss                  importance-weighted TD loss of Q_E (always
                           written; an exploration bonus writes its own)
Replay/  (debug summaries)
  priority_mean, priority_max    new sequence priorities of the batch
  importance_weight_min          smallest importance weight of the batch
  valid_step_fraction            trace steps with a target (not padding)
Q/  (debug summaries)
  selected_mean, selected_max    online Q(s_t, a_t) on valid trace steps
  target_mean                    rescaled n-step targets
  abs_td_error_mean
"""

import tensorflow as tf


def write_loss_info(extra, step, debug=False):
  """Writes the fields of an `R2D2LossInfo`."""
  tf.summary.scalar('Losses/td_loss', extra.td_loss, step=step)
  if not debug:
    return
  tf.summary.scalar('Replay/priority_mean',
                    tf.reduce_mean(extra.priorities), step=step)
  tf.summary.scalar('Replay/priority_max',
                    tf.reduce_max(extra.priorities), step=step)
  tf.summary.scalar('Replay/importance_weight_min',
                    tf.reduce_min(extra.importance_weights), step=step)
  tf.summary.scalar('Replay/valid_step_fraction', extra.valid_fraction,
                    step=step)
  tf.summary.scalar('Q/selected_mean', extra.q_mean, step=step)
  tf.summary.scalar('Q/selected_max', extra.q_max, step=step)
  tf.summary.scalar('Q/target_mean', extra.target_mean, step=step)
  tf.summary.scalar('Q/abs_td_error_mean', extra.abs_td_error_mean,
                    step=step)
