"""TF-Agents' PPOClipAgent, with its epochs looped inside the graph.

`PPOAgent._train` unrolls its epochs in Python: `num_epochs` copies of the
forward and backward pass go into the train graph, so tracing grows with
the epoch count (16 epochs took 145 s to trace on our machine). Keras'
Adam also creates its slot variables inside the first traced call, which
makes `tf.function` trace `train` twice.

`EpochLoopPPOClipAgent` keeps the loss, the gradient step and every
hyperparameter of `PPOClipAgent` (it calls the parent's `_preprocess` and
`get_loss`) and changes only how the epochs are built: a `tf.while_loop`
over epochs, each a loop over `num_minibatches` minibatches of whole env
sequences (1, the default, is `PPOClipAgent`'s one full-batch step per
epoch), and the optimizer's slots built in `_initialize`. Its updates
match `PPOClipAgent`'s to float tolerance (tests/test_ppo_clip.py). The
returned `LossInfo` is the last step's, as `PPOAgent` returns; the
`Losses/` summaries average the steps, as it averages its epochs.

Subclasses change the update through three hooks, each called once per
minibatch step inside the graph loop: `_training_rows` (the per-row
tensors minibatches are cut from), `_minibatch_loss` (a `LossInfo` and the
scalars to average) and `_minibatch_update` (the gradient step). RND-PPO
(`agents/rnd_ppo/`) overrides them.
"""

import tensorflow as tf
from tf_agents.agents import tf_agent
from tf_agents.agents.ppo import ppo_agent
from tf_agents.agents.ppo import ppo_clip_agent
from tf_agents.agents.ppo import ppo_utils
from tf_agents.networks import network
from tf_agents.trajectories import time_step as ts
from tf_agents.utils import common
from tf_agents.utils import eager_utils
from tf_agents.utils import object_identity


class EpochLoopPPOClipAgent(ppo_clip_agent.PPOClipAgent):
  """`PPOClipAgent` whose epochs are a graph loop (module docstring)."""

  # Scalars of `_minibatch_loss` that `train` averages over its steps;
  # the last step's make the returned `LossInfo`.
  LOSS_INFO_FIELDS = ('loss',) + ppo_agent.PPOLossInfo._fields

  def __init__(self, *args, num_minibatches: int = 1,
               normalize_advantages: bool = True, **kwargs):
    """`PPOClipAgent`'s arguments, `num_minibatches` and
    `normalize_advantages`.

    Args:
      *args: `PPOClipAgent`'s.
      num_minibatches: Gradient steps per epoch, each on a share of the
        batch's env sequences (split along the batch axis, so sequences stay
        whole). 1 is `PPOClipAgent`'s full-batch step.
      normalize_advantages: Whiten the advantages by the batch's mean and
        std (`PPOAgent`'s, always on there). False: the raw advantages, so
        a batch whose advantages are all near zero moves the policy little
        instead of by unit-scaled noise.
      **kwargs: `PPOClipAgent`'s.
    """
    if int(num_minibatches) < 1:
      raise ValueError(f'num_minibatches must be >= 1, got {num_minibatches}.')
    super().__init__(*args, **kwargs)
    if self._num_epochs < 1:
      # PPOAgent accepts 0 and then trains nothing, reporting a loss of 0.
      raise ValueError(f'num_epochs must be >= 1, got {self._num_epochs}.')
    # PPOAgent accepts these too, and then ascends or diverges.
    for name, value, low, high in (
        ('discount_factor', self._discount_factor, 0.0, 1.0),
        ('lambda_value', self._lambda, 0.0, 1.0),
        ('importance_ratio_clipping', self._importance_ratio_clipping, 0.0,
         None),
        ('entropy_regularization', self._entropy_regularization, 0.0, None),
        ('value_pred_loss_coef', self._value_pred_loss_coef, 0.0, None)):
      if value < low or (high is not None and value > high):
        bounds = f'in [{low}, {high}]' if high is not None else f'>= {low}'
        raise ValueError(f'{name} must be {bounds}, got {value}.')
    self._num_minibatches = int(num_minibatches)
    self._normalize_advantages = bool(normalize_advantages)

  def check_batch_size(self, batch_size: int) -> None:
    """Raises ValueError unless batches of `batch_size` sequences split into
    `num_minibatches` minibatches (loops call it before collecting)."""
    if batch_size < self._num_minibatches:
      raise ValueError(f'Batch of {batch_size} sequences cannot make '
                       f'{self._num_minibatches} minibatches.')

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

  # ------------------------------------------------------------ hooks ---

  def _training_rows(self, processed, weights):
    """`[B, T]` tensors that minibatches are cut from (along B).

    Args:
      processed: The preprocessed `[B, T]` trajectory.
      weights: `[B, T]` loss weights (0 on rows that do not train).
    """
    info = processed.policy_info
    old_parameters = info['dist_params']
    old_distribution = ppo_utils.distribution_from_spec(
        self._action_distribution_spec, old_parameters,
        legacy_distribution_network=isinstance(self._actor_net,
                                               network.DistributionNetwork))
    old_log_probs = common.log_probability(old_distribution,
                                           processed.action,
                                           self._action_spec)
    # PPOAgent's advantage normalisation: moments over batch and time.
    advantages = info['advantage']
    if self._normalize_advantages:
      mean, variance = tf.nn.moments(advantages, axes=(0, 1), keepdims=True)
      normalized_advantages = tf.nn.batch_normalization(
          advantages, mean, variance, offset=None, scale=None,
          variance_epsilon=1e-8)
    else:
      normalized_advantages = advantages
    return {
        'time_steps': ts.TimeStep(step_type=processed.step_type,
                                  reward=processed.reward,
                                  discount=processed.discount,
                                  observation=processed.observation),
        'actions': processed.action,
        'old_log_probs': old_log_probs,
        'old_parameters': old_parameters,
        'returns': info['return'],
        'advantages': normalized_advantages,
        'old_values': info['value_prediction'],
        'weights': weights,
    }

  def _minibatch_loss(self, batch):
    """`(LossInfo, {name: scalar})` of one minibatch, the names those of
    `LOSS_INFO_FIELDS` (the parent's `get_loss`)."""
    loss_info = self.get_loss(
        batch['time_steps'], batch['actions'], batch['old_log_probs'],
        batch['returns'], batch['advantages'], batch['old_parameters'],
        batch['weights'], self.train_step_counter, self._debug_summaries,
        old_value_predictions=batch['old_values'], training=True)
    return loss_info, dict(loss_info.extra._asdict(), loss=loss_info.loss)

  def _minibatch_update(self, batch, record_gradients):
    """One gradient step on a minibatch; its `{name: scalar}` parts."""
    variables = self._variables_to_train()
    with tf.GradientTape() as tape:
      loss_info, parts = self._minibatch_loss(batch)
    gradients = tape.gradient(loss_info.loss, variables)
    if self._gradient_clipping > 0:
      gradients, _ = tf.clip_by_global_norm(gradients,
                                            self._gradient_clipping)
    grads_and_vars = tuple(zip(gradients, variables))
    if self._summarize_grads_and_vars and self._debug_summaries:
      with tf.summary.record_if(record_gradients):
        eager_utils.add_gradients_summaries(grads_and_vars,
                                            self.train_step_counter)
    self._optimizer.apply_gradients(grads_and_vars)
    self.train_step_counter.assign_add(1)
    return parts

  def _loss_info_of(self, values):
    """The returned `LossInfo` from `{name: scalar}` of `LOSS_INFO_FIELDS`."""
    return tf_agent.LossInfo(
        loss=values['loss'],
        extra=ppo_agent.PPOLossInfo(
            **{name: values[name] for name in ppo_agent.PPOLossInfo._fields}))

  def _update_normalizers_in_train(self, processed):
    """`train`'s own normaliser update, after the epochs."""
    self.update_observation_normalizer(processed.observation)
    self.update_reward_normalizer(processed.reward)

  # ------------------------------------------------------------ train ---

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
    rows = self._training_rows(processed, masked_weights)

    num_minibatches = self._num_minibatches
    static_batch_size = masked_weights.shape[0]
    if static_batch_size is not None:
      self.check_batch_size(static_batch_size)
    batch_size = tf.shape(masked_weights)[0]
    names = self.LOSS_INFO_FIELDS
    last_epoch = self._num_epochs - 1

    def minibatch_step(epoch, minibatch, permutation):
      if num_minibatches == 1:
        batch = rows
      else:
        start = minibatch * batch_size // num_minibatches
        end = (minibatch + 1) * batch_size // num_minibatches
        indices = permutation[start:end]
        batch = tf.nest.map_structure(lambda t: tf.gather(t, indices), rows)
      parts = self._minibatch_update(
          batch, tf.logical_or(tf.equal(epoch, 0),
                               tf.equal(epoch, last_epoch)))
      # One vector per step: a chain of scalar adds onto the loop variables
      # became one AddN that Grappler turned into a TemporaryVariable
      # accumulator, which failed (ALREADY_EXISTS) in these nested loops.
      return tf.stack([tf.cast(parts[name], tf.float32) for name in names])

    def epoch_step(epoch, sums, last):
      if num_minibatches == 1:
        # One minibatch needs no inner loop, whose per-epoch overhead
        # showed in CartPole's steady figure (docs/performance.md).
        values = minibatch_step(epoch, 0, None)
        return epoch + 1, sums + values, values
      permutation = tf.random.shuffle(tf.range(batch_size))

      def body(minibatch, sums, last):
        del last
        values = minibatch_step(epoch, minibatch, permutation)
        return minibatch + 1, sums + values, values

      _, sums, last = tf.while_loop(
          lambda minibatch, *_: minibatch < num_minibatches, body,
          (tf.constant(0), sums, last))
      return epoch + 1, sums, last

    zeros = tf.zeros([len(names)])
    _, sums, last = tf.while_loop(
        lambda epoch, *_: epoch < self._num_epochs, epoch_step,
        (tf.constant(0), zeros, zeros))

    if self.update_normalizers_in_train:
      self._update_normalizers_in_train(processed)
    num_steps = float(self._num_epochs * num_minibatches)
    self._write_summaries(processed, masked_weights,
                          dict(zip(names, tf.unstack(sums / num_steps))))
    return self._loss_info_of(dict(zip(names, tf.unstack(last))))

  def _write_summaries(self, processed, weights, means):
    """`Losses/` means of the steps (clip_fraction is not summarised, as in
    PPOAgent) and the learning rate."""
    del processed, weights
    step = self.train_step_counter
    losses = {name: means[name] for name in ppo_agent.PPOLossInfo._fields
              if name != 'clip_fraction'}
    with tf.name_scope('Losses/'):
      for name, value in losses.items():
        tf.summary.scalar(name=name, data=value, step=step)
      tf.summary.scalar(name='total_abs_loss',
                        data=tf.add_n([tf.abs(v) for v in losses.values()]),
                        step=step)
    self._write_learning_rate()

  def _write_learning_rate(self):
    """`LearningRate/learning_rate`: the optimizer's current rate."""
    with tf.name_scope('LearningRate/'):
      tf.summary.scalar(name='learning_rate',
                        data=ppo_utils.get_learning_rate(self._optimizer),
                        step=self.train_step_counter)
