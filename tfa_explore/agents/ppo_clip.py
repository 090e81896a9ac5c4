"""TF-Agents' PPOClipAgent, with its epochs looped inside the graph.

`PPOAgent._train` unrolls its epochs in Python: `num_epochs` copies of the
forward and backward pass go into the train graph, so tracing grows with
the epoch count (16 epochs took 145 s to trace on our machine). Keras'
Adam also creates its slot variables inside the first traced call, which
makes `tf.function` trace `train` twice.

`EpochLoopPPOClipAgent` keeps the loss, the gradient step and every
hyperparameter of `PPOClipAgent` (it calls the parent's `_preprocess` and
`get_loss`) and changes only how the epochs are built: one `tf.while_loop`
whose body is one full-batch step, and the optimizer's slots built in
`_initialize`. Its updates match `PPOClipAgent`'s to float tolerance
(tests/test_ppo_clip.py). The returned `LossInfo` is the last epoch's, as
`PPOAgent` returns; the `Losses/` summaries average the epochs, as it does.
"""

import tensorflow as tf
from tf_agents.agents import tf_agent
from tf_agents.agents.ppo import ppo_agent
from tf_agents.agents.ppo import ppo_clip_agent
from tf_agents.agents.ppo import ppo_utils
from tf_agents.networks import network
from tf_agents.trajectories import time_step as ts
from tf_agents.utils import common
from tf_agents.utils import object_identity


class EpochLoopPPOClipAgent(ppo_clip_agent.PPOClipAgent):
  """`PPOClipAgent` whose epochs are a graph loop (module docstring)."""

  def _variables_to_train(self):
    variables = object_identity.ObjectIdentitySet(
        self._actor_net.trainable_weights + self._value_net.trainable_weights)
    # The parent's order (by name), so updates and checkpoints line up.
    return sorted(variables, key=lambda v: v.name)

  def _initialize(self):
    super()._initialize()
    # Slots now, so the first `train` call is traced once, not twice.
    if hasattr(self._optimizer, 'build'):
      self._optimizer.build(self._variables_to_train())

  def _train(self, experience, weights):
    if self._optimizer is None:
      raise ValueError('Optimizer is undefined.')
    experience = self._as_trajectory(experience)
    if self._compute_value_and_advantage_in_train:
      processed = self._preprocess(experience)
    else:
      processed = experience
    valid_mask = ppo_utils.make_trajectory_mask(processed)
    masked_weights = valid_mask if weights is None else weights * valid_mask

    old_parameters = processed.policy_info['dist_params']
    old_distribution = ppo_utils.distribution_from_spec(
        self._action_distribution_spec, old_parameters,
        legacy_distribution_network=isinstance(self._actor_net,
                                               network.DistributionNetwork))
    old_log_probs = common.log_probability(old_distribution,
                                           processed.action,
                                           self._action_spec)
    time_steps = ts.TimeStep(step_type=processed.step_type,
                             reward=processed.reward,
                             discount=processed.discount,
                             observation=processed.observation)
    returns = processed.policy_info['return']
    # PPOAgent's advantage normalisation: moments over batch and time.
    advantages = processed.policy_info['advantage']
    mean, variance = tf.nn.moments(advantages, axes=(0, 1), keepdims=True)
    normalized_advantages = tf.nn.batch_normalization(
        advantages, mean, variance, offset=None, scale=None,
        variance_epsilon=1e-8)
    old_values = processed.policy_info['value_prediction']
    variables = self._variables_to_train()

    # Summed over epochs for the `Losses/` means (clip_fraction is not
    # summarised, as in PPOAgent).
    summed = ppo_agent.PPOLossInfo._fields[:-1]

    def epoch(index, last_loss_info, sums):
      del last_loss_info
      with tf.GradientTape() as tape:
        loss_info = self.get_loss(
            time_steps, processed.action, old_log_probs, returns,
            normalized_advantages, old_parameters, masked_weights,
            self.train_step_counter, self._debug_summaries,
            old_value_predictions=old_values, training=True)
      gradients = tape.gradient(loss_info.loss, variables)
      if self._gradient_clipping > 0:
        gradients, _ = tf.clip_by_global_norm(gradients,
                                              self._gradient_clipping)
      self._optimizer.apply_gradients(zip(gradients, variables))
      self.train_step_counter.assign_add(1)
      loss_info = tf.nest.map_structure(
          lambda t: tf.cast(t, tf.float32), loss_info)
      sums = {name: sums[name] + getattr(loss_info.extra, name)
              for name in summed}
      return index + 1, loss_info, sums

    zero = tf.constant(0.0)
    no_loss = tf_agent.LossInfo(
        loss=zero, extra=ppo_agent.PPOLossInfo(
            *([zero] * len(ppo_agent.PPOLossInfo._fields))))
    _, loss_info, sums = tf.while_loop(
        lambda index, *_: index < self._num_epochs, epoch,
        (tf.constant(0), no_loss, {name: zero for name in summed}))

    if self.update_normalizers_in_train:
      self.update_observation_normalizer(time_steps.observation)
      self.update_reward_normalizer(processed.reward)
    self._write_summaries(
        {name: total / self._num_epochs for name, total in sums.items()})
    return loss_info

  def _write_summaries(self, means):
    step = self.train_step_counter
    with tf.name_scope('Losses/'):
      for name, value in means.items():
        tf.summary.scalar(name=name, data=value, step=step)
      tf.summary.scalar(name='total_abs_loss',
                        data=tf.add_n([tf.abs(v) for v in means.values()]),
                        step=step)
    with tf.name_scope('LearningRate/'):
      tf.summary.scalar(name='learning_rate',
                        data=ppo_utils.get_learning_rate(self._optimizer),
                        step=step)
