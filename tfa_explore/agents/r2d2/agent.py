"""R2D2 agent (Kapturowski et al. 2019) as a TF-Agents `TFAgent`.

`train` takes `[B, T]` sequences, with Reverb's sample info or without
(`inputs.py`), and returns the new priority of each sequence in
`LossInfo.extra.priorities`. Learner step: unroll online and target
networks from the stored state, burning in `burn_in_steps` without
gradient; rescaled n-step double-Q targets; importance-weighted squared TD
loss over the trace's valid steps; priorities 0.9 max + 0.1 mean |delta|;
copy the target network every `target_update_period` steps.

An exploration bonus (`exploration.ExplorationBonus`; default none) changes
the loss, the priorities, the exploring policy under the collect and
actor policies and the train step only through that seam's hooks;
`policy` (evaluated, saved) stays greedy on Q_E.

Subclasses build their loss from the public parts `_loss` uses (R2D3
does): `td_errors`, `sequence_loss_weights`, `td_loss`,
`exploration_loss`, `sequence_priorities`, `td_loss_info`.

Gin: the agent's one gin surface is its factory (`r2d2.r2d2_agent_fn`);
the class is not configurable, so no binding of it can be silently
overridden.
"""

import collections

import numpy as np
import tensorflow as tf
from tf_agents.agents import tf_agent
from tf_agents.specs import tensor_spec
from tf_agents.utils import common
from tf_agents.utils import eager_utils

from tfa_explore.agents.r2d2 import config as r2d2_config
from tfa_explore.agents.r2d2 import exploration as exploration_lib
from tfa_explore.agents.r2d2 import inputs as r2d2_inputs
from tfa_explore.agents.r2d2 import learning
from tfa_explore.agents.r2d2 import losses
from tfa_explore.agents.r2d2 import policy as r2d2_policy
from tfa_explore.agents.r2d2 import summaries
from tfa_explore.networks import recurrent_dueling_q_network as rdqn


class R2D2LossInfo(
    collections.namedtuple('R2D2LossInfo', [
        'td_loss', 'priorities', 'importance_weights', 'q_mean', 'q_max',
        'target_mean', 'abs_td_error_mean', 'valid_fraction',
        'exploration_loss'
    ])):
  """`LossInfo.extra` of `R2D2Agent`.

  Fields:
    td_loss: scalar importance-weighted TD loss.
    priorities: `[B]` new priority of each sequence (before the exponent of
      the Reverb selector), from the TD errors BEFORE this step's update.
    importance_weights: `[B]` weights used in the loss.
    q_mean, q_max: online Q(s_t, a_t) over valid trace steps.
    target_mean: y_t over valid trace steps.
    abs_td_error_mean: |delta_t| over valid trace steps.
    valid_fraction: share of trace steps with a target (padding, episode
      ends and the bootstrap step have none).
    exploration_loss: the exploration bonus's loss (0 without one).
  """
  __slots__ = ()


class R2D2Agent(tf_agent.TFAgent):
  """Recurrent replay distributed DQN; see the module docstring."""

  def __init__(self,
               time_step_spec,
               action_spec,
               q_network,
               optimizer,
               sequence_config=None,
               n_step=5,
               gamma=0.997,
               target_update_period=2500,
               importance_sampling_exponent=0.6,
               priority_max_weight=0.9,
               rescale_values=True,
               value_rescale_epsilon=1e-3,
               use_stored_state=True,
               huber_delta=None,
               gradient_clipping=None,
               collect_epsilon=0.4,
               exploration=None,
               jit_compile=False,
               debug_summaries=False,
               summarize_grads_and_vars=False,
               train_step_counter=None,
               name=None):
    """Creates the agent.

    Args:
      time_step_spec: `TimeStep` spec of the (unwrapped) environment.
      action_spec: scalar bounded integer spec.
      q_network: `RecurrentDuelingQNetwork` whose input spec is
        `make_input_spec(time_step_spec.observation, action_spec)`.
      optimizer: a `tf.keras.optimizers.Optimizer` (paper: Adam, lr 1e-4,
        epsilon 1e-3).
      sequence_config: `SequenceConfig`; None gives the paper's (burn-in 40,
        trace 80, period 40). Must be the one the writer used.
      n_step: n of the n-step targets (paper: 5).
      gamma: discount (paper: 0.997).
      target_update_period: learner steps between target network copies
        (paper: 2500).
      importance_sampling_exponent: beta of the importance weights (paper:
        0.6).
      priority_max_weight: eta of p = eta max|delta| + (1 - eta) mean|delta|
        (paper: 0.9).
      rescale_values: use value rescaling h (paper: yes).
      value_rescale_epsilon: eps of h (paper: 1e-3).
      use_stored_state: start replay unrolls from the stored state (paper);
        False gives the zero-state ablation.
      huber_delta: None for the squared TD loss, or a Huber delta.
      gradient_clipping: None or a global-norm clip (paper: 40, from the
        Ape-X setup).
      collect_epsilon: epsilon of `collect_policy` (actor 0 of the paper's
        schedule: 0.4). Distributed actors use `actor_collect_policy`.
      exploration: an `exploration.ExplorationBonus` (module docstring);
        None: no bonus.
      jit_compile: the loss (a subclass's too) and its gradients as one XLA
        function: on CPU it fuses the unrolls' many small ops into less CPU
        time per step (docs/performance.md). Summaries, the optimizer step
        and the target copy run outside it.
      debug_summaries: write Q/ and Replay/ summaries.
      summarize_grads_and_vars: also gradient and variable histograms.
      train_step_counter: optional counter, incremented every train step.
      name: agent name.

    Raises:
      ValueError: for a non-discrete action spec, a network whose input spec
        does not match the specs, bad hyperparameters, or a bonus the
        agent cannot carry (`ExplorationBonus.check`).
    """
    tf.Module.__init__(self, name=name)
    time_step_spec = tensor_spec.from_spec(time_step_spec)
    action_spec = r2d2_inputs.check_action_spec(
        tensor_spec.from_spec(action_spec))
    if optimizer is None:
      raise ValueError('R2D2Agent needs an optimizer.')
    expected_input_spec = rdqn.make_input_spec(
        time_step_spec.observation, action_spec,
        reward_dtype=time_step_spec.reward.dtype)
    if not r2d2_inputs.specs_match(q_network.input_tensor_spec,
                                   expected_input_spec):
      raise ValueError(
          'q_network.input_tensor_spec must be make_input_spec('
          'time_step_spec.observation, action_spec) = '
          f'{expected_input_spec}; got {q_network.input_tensor_spec}.')
    sequence_config = sequence_config or r2d2_config.SequenceConfig()
    if n_step < 1:
      raise ValueError(f'n_step must be >= 1, got {n_step}.')
    if target_update_period < 1:
      raise ValueError(
          f'target_update_period must be >= 1, got {target_update_period}.')
    for name, value in (
        ('gamma', gamma),
        ('importance_sampling_exponent', importance_sampling_exponent),
        ('priority_max_weight', priority_max_weight)):
      if not 0.0 <= value <= 1.0:
        raise ValueError(f'{name} must be in [0, 1], got {value}.')
    self._q_network = q_network
    q_network.create_variables()
    self._target_q_network = common.maybe_copy_target_network_with_checks(
        q_network, None, 'TargetQNetwork')
    self._optimizer = optimizer
    self._sequence_config = sequence_config
    self._n_step = n_step
    self._td_settings = learning.TdSettings(
        burn_in_steps=sequence_config.burn_in_steps,
        gamma=gamma,
        use_stored_state=use_stored_state,
        rescale_values=rescale_values,
        rescale_epsilon=value_rescale_epsilon,
        action_minimum=int(action_spec.minimum))
    self._target_update_period = target_update_period
    self._importance_sampling_exponent = importance_sampling_exponent
    self._priority_max_weight = priority_max_weight
    self._huber_delta = huber_delta
    self._gradient_clipping = gradient_clipping
    self._loss_and_gradients = self._loss_and_gradients_of
    if jit_compile:
      compiled = tf.function(self._loss_and_gradients_of, jit_compile=True,
                              autograph=False)

      def loss_and_gradients(*args):
        # Traced inside: XLA compiles the unroll's loop better than steps.
        with rdqn.while_loop_unroll():
          return compiled(*args)

      self._loss_and_gradients = loss_and_gradients

    self._exploration = exploration or exploration_lib.ExplorationBonus()
    self._policy_specs = (time_step_spec, action_spec)
    self._policy = r2d2_policy.R2D2Policy(time_step_spec, action_spec,
                                          q_network)
    self._exploration.check(self)
    self._exploring_policy = self._exploration.exploring_policy(self)
    collect_policy = r2d2_policy.R2D2CollectPolicy(self._exploring_policy,
                                                   collect_epsilon)
    super().__init__(
        time_step_spec,
        action_spec,
        self._policy,
        collect_policy,
        train_sequence_length=sequence_config.sequence_length,
        debug_summaries=debug_summaries,
        summarize_grads_and_vars=summarize_grads_and_vars,
        train_step_counter=train_step_counter)

  @property
  def sequence_config(self):
    return self._sequence_config

  @property
  def q_network(self):
    return self._q_network

  @property
  def target_q_network(self):
    return self._target_q_network

  @property
  def optimizer(self):
    """The optimizer of `q_network`'s trainable variables (diagnostics)."""
    return self._optimizer

  @property
  def exploration(self):
    """The `exploration.ExplorationBonus` (the base class: none)."""
    return self._exploration

  @property
  def policy_specs(self):
    """`(time_step_spec, action_spec)` of the policies (for a bonus's)."""
    return self._policy_specs

  @property
  def n_step(self):
    """n of the n-step targets of the TD loss and the priorities."""
    return self._n_step

  @property
  def td_settings(self):
    """`learning.TdSettings`: burn-in, gamma, stored state, rescaling."""
    return self._td_settings

  def actor_collect_policy(self, actor_index, num_actors, envs_per_actor=1):
    """Epsilon-greedy policy of actor `actor_index` of `num_actors`.

    Env k of a batch of `envs_per_actor` explores as the paper's actor
    `actor_index * envs_per_actor + k` of `num_actors * envs_per_actor`;
    the exploration bonus gives the greedy policy under it, per slot.
    """
    epsilons = self.actor_epsilons(actor_index, num_actors, envs_per_actor)
    # One env keeps a scalar epsilon, as an unbatched policy expects.
    epsilon = (epsilons[0] if envs_per_actor == 1 else
               tf.constant(epsilons, tf.float32))
    exploring_policy = self._exploration.exploring_policy(
        self, exploration_lib.ActorSlots(actor_index, num_actors,
                                         envs_per_actor))
    return r2d2_policy.R2D2CollectPolicy(exploring_policy, epsilon)

  def actor_epsilons(self, actor_index, num_actors, envs_per_actor=1):
    """Epsilons of actor `actor_index`'s envs: the exploration bonus's.

    Without a bonus Ape-X's schedule over all slots (`policy.slot_epsilons`).
    """
    return list(self._exploration.actor_epsilons(exploration_lib.ActorSlots(
        actor_index, num_actors, envs_per_actor)))

  def _initialize(self):
    common.soft_variables_update(
        self._q_network.variables, self._target_q_network.variables, tau=1.0)

  def _update_target(self):
    return common.soft_variables_update(
        self._q_network.variables, self._target_q_network.variables,
        tau=1.0, tau_non_trainable=1.0)

  def td_errors(self, trajectory, n_steps=None, training=False):
    """`learning.TdErrors` of `[B, T]` sequences for `n_steps` (None: n_step).

    `learning.sequence_td_errors` of the online and target networks with
    the agent's `td_settings`; `by_n_step[n]` holds each n's errors.
    """
    return learning.sequence_td_errors(
        self._q_network, self._target_q_network, trajectory,
        self._td_settings,
        n_steps=(self._n_step,) if n_steps is None else tuple(n_steps),
        training=training)

  def check_sequence_length(self, trajectory):
    """Raises ValueError unless sequences have `sequence_length` steps."""
    length = tf.compat.dimension_value(trajectory.step_type.shape[1])
    expected = self._sequence_config.sequence_length
    if length is not None and length != expected:
      raise ValueError(
          f'Sequences have {length} steps but the agent\'s SequenceConfig '
          f'({self._sequence_config}) needs sequence_length {expected}.')

  def sequence_loss_weights(self, sample_info, weights, batch_size):
    """`[B]` `(importance_weights, loss_weights)`: those times `weights`.

    `sample_info` None (uniform replay) gives weights 1 for `batch_size`.
    """
    if sample_info is not None:
      sample_info = r2d2_inputs.per_sequence_sample_info(sample_info)
      importance_weights = tf.cast(
          losses.importance_weights(
              sample_info.probability, sample_info.table_size,
              exponent=self._importance_sampling_exponent), tf.float32)
    else:
      importance_weights = tf.ones([batch_size], tf.float32)
    loss_weights = importance_weights
    if weights is not None:
      loss_weights *= tf.cast(weights, tf.float32)
    return importance_weights, loss_weights

  def td_loss(self, n_step_errors, loss_weights):
    """Weighted TD loss (squared, or Huber) of one n's `NStepTdErrors`."""
    return losses.masked_td_loss(n_step_errors.td_errors,
                                 n_step_errors.valid, loss_weights,
                                 self._huber_delta)

  def exploration_loss(self, trajectory, errors, loss_weights):
    """The exploration bonus's `ExplorationLoss` of a batch's unroll."""
    return self._exploration.loss(self, trajectory, errors, loss_weights)

  def sequence_priorities(self, n_step_errors, priority_errors=None):
    """`[B]` priorities eta max|delta| + (1 - eta) mean|delta|, no gradient.

    `priority_errors`: None, or the bonus's `[B, T']` addition to |delta|.
    """
    abs_errors = tf.abs(n_step_errors.td_errors)
    if priority_errors is not None:
      abs_errors += priority_errors
    return losses.sequence_priorities(
        tf.stop_gradient(abs_errors), n_step_errors.valid,
        eta=self._priority_max_weight)

  def td_loss_info(self, errors, td_loss, importance_weights,
                   exploration_loss):
    """`R2D2LossInfo` of a batch from the parts `_loss` computes."""
    n_step_errors = errors.by_n_step[self._n_step]
    valid_steps = n_step_errors.valid
    valid = tf.cast(valid_steps, tf.float32)
    num_valid = tf.reduce_sum(valid)

    def valid_mean(values):
      return tf.math.divide_no_nan(
          tf.reduce_sum(tf.where(valid_steps, values, 0.0)), num_valid)

    selected = tf.stop_gradient(errors.selected_q_values)
    return R2D2LossInfo(
        td_loss=td_loss,
        priorities=self.sequence_priorities(
            n_step_errors, exploration_loss.priority_errors),
        importance_weights=importance_weights,
        q_mean=valid_mean(selected),
        q_max=tf.reduce_max(tf.where(valid_steps, selected, -float('inf'))),
        target_mean=valid_mean(n_step_errors.targets),
        abs_td_error_mean=valid_mean(tf.abs(n_step_errors.td_errors)),
        valid_fraction=tf.reduce_mean(valid),
        exploration_loss=tf.convert_to_tensor(exploration_loss.loss,
                                              tf.float32))

  def _loss(self, experience, weights=None, training=False):
    trajectory, sample_info = r2d2_inputs.split_experience(experience)
    self.check_sequence_length(trajectory)
    errors = self.td_errors(trajectory, training=training)
    importance_weights, loss_weights = self.sequence_loss_weights(
        sample_info, weights,
        batch_size=tf.shape(errors.selected_q_values)[0])
    td_loss = self.td_loss(errors.by_n_step[self._n_step], loss_weights)
    exploration_loss = self.exploration_loss(trajectory, errors,
                                             loss_weights)
    extra = self.td_loss_info(errors, td_loss, importance_weights,
                              exploration_loss)
    return tf_agent.LossInfo(loss=td_loss + exploration_loss.loss,
                             extra=extra)

  def _loss_and_gradients_of(self, experience, weights):
    """(LossInfo, gradients of the q network's trainable weights)."""
    variables = self._q_network.trainable_weights
    with tf.GradientTape(watch_accessed_variables=False) as tape:
      tape.watch(variables)
      loss_info = self._loss(experience, weights=weights, training=True)
    return loss_info, tape.gradient(loss_info.loss, variables)

  def _train(self, experience, weights=None):
    variables = self._q_network.trainable_weights
    trajectory = r2d2_inputs.trajectory_of(experience)
    observed = self._exploration.observe(self, trajectory)
    loss_info, gradients = self._loss_and_gradients(experience, weights)
    tf.debugging.check_numerics(loss_info.loss, 'R2D2 loss is inf or nan')
    grads_and_vars = list(zip(gradients, variables))
    if self._gradient_clipping is not None:
      grads_and_vars = eager_utils.clip_gradient_norms(
          grads_and_vars, self._gradient_clipping)
    if self._summarize_grads_and_vars:
      eager_utils.add_variables_summaries(grads_and_vars,
                                          self.train_step_counter)
      eager_utils.add_gradients_summaries(grads_and_vars,
                                          self.train_step_counter)
    with tf.control_dependencies([loss_info.loss]):
      # After the loss: the bonus's steps change what its rewards read.
      self._exploration.train_step(self, trajectory, observed, loss_info)
    self._optimizer.apply_gradients(grads_and_vars)
    self.train_step_counter.assign_add(1)
    # The counter is checkpointed, so the copy schedule survives restarts.
    tf.cond(
        tf.equal(self.train_step_counter % self._target_update_period, 0),
        lambda: tf.group(self._update_target()), tf.no_op)
    if self.summaries_enabled:
      summaries.write_loss_info(loss_info.extra, self.train_step_counter,
                                debug=self._debug_summaries)
    return loss_info

  def initial_priorities_fn(self):
    """A callable: `[P, T]` trajectories (numpy) -> `[P]` priorities.

    As in the paper, actors compute the initial priority of a sequence with
    their own network as online and target network.
    """
    spec = tensor_spec.add_outer_dims_nest(
        self.collect_data_spec, (None, self._sequence_config.sequence_length))

    @tf.function(input_signature=[spec], autograph=False)
    def batched_priorities(trajectory):
      errors = learning.sequence_td_errors(
          self._q_network, self._q_network, trajectory, self._td_settings,
          n_steps=(self._n_step,))
      return self.sequence_priorities(errors.by_n_step[self._n_step])

    def priorities(trajectories):
      return batched_priorities(trajectories).numpy()

    return priorities

  def initial_priority_fn(self):
    """`initial_priorities_fn` for one unbatched `[T]` trajectory -> float."""
    priorities = self.initial_priorities_fn()

    def priority(trajectory):
      batched = tf.nest.map_structure(lambda x: np.expand_dims(x, 0),
                                      trajectory)
      return float(priorities(batched)[0])

    return priority
