"""TensorBoard summaries of RND-PPO's losses.

Tags (scalars at the agent's `train_step_counter`; the `Intrinsic/` and
`Normalizers/` ones are the intrinsic reward's, see
`tfa_explore.agents.intrinsic.summaries`):

Losses/
  policy_gradient_loss, entropy_regularization_loss,
  extrinsic_value_loss, intrinsic_value_loss, intrinsic_reward_loss,
  entropy (weighted mean), clip_fraction   (all averaged over the update)
  explained_variance_extrinsic, explained_variance_intrinsic
(plain PPO: none of the intrinsic ones). `Losses/total_loss` is the
loop's: the loss `train` returns, its last gradient step's.
"""

import tensorflow as tf


def write_losses(step, losses):
  """`losses`: dict name -> scalar, averaged over epochs and minibatches."""
  with tf.name_scope('Losses/'):
    for name, value in sorted(losses.items()):
      tf.summary.scalar(name, value, step=step)
