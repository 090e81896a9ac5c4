"""Recurrent dueling Q network of R2D2 (Kapturowski et al. 2019, Section 2.3).

observation -> torso (conv stack for images, MLP for vectors)
            -> concat(torso features, one_hot(prev_action), prev_reward)
            -> LSTM (or nothing, for the feed-forward baseline)
            -> dueling head: Q = V + A - mean_a A (Wang et al. 2016)
            [-> a second dueling head, Q_I, with `intrinsic_head=True`]

Intrinsic head. With `intrinsic_head=True` the network has a second
dueling head on the same LSTM output: Q_I, the value of the intrinsic
reward, beside Q_E of the extrinsic one (Agent57, Badia et al. 2020,
Section 4.1, keeps the two apart; there they are two networks). `call`
returns Q_E, so a greedy policy and a saved policy act on the task's
reward; `q_heads` returns every head by name (`EXTRINSIC`, and
`INTRINSIC` with the head) from one pass, for the learner and the
exploring actors.

Input design. The network input is a dict

  {'observation': obs spec, 'prev_action': action spec, 'prev_reward': ()}

(built by `make_input_spec`), so the previous action and reward are ordinary
inputs that live in the observation nest. That is what both users need:

* A TF-Agents policy calls `q_network(time_step.observation, step_type=...,
  network_state=...)` with the observation only, so the extra inputs must be
  part of it. An environment wrapper that adds them (as Acme's
  observation-action-reward wrapper does) works with the stock `QPolicy` and
  `EpsilonGreedyPolicy`; a custom policy that keeps the previous action in its
  state can build the same dict instead. The network does not care which.
* A learner reading `[B, T]` sequences from Reverb gets the inputs of every
  step in the stored observations, unrolls them in one call and needs no
  bookkeeping to shift actions and rewards by one step.

The network state is then only the LSTM state `[h, c]`, which is what R2D2
stores in replay.

Episode starts. On steps whose `step_type` is FIRST the LSTM state is reset to
zeros (TF-Agents' `DynamicUnroll` reset mask, as for acting) and the previous
action and reward are zeroed, so whatever a wrapper carried over from the
previous episode in an auto-resetting environment cannot leak in. A learner
should pass the stored step types too, so that its unroll sees exactly what
the actor saw (a stored state at a FIRST step is zeros anyway).
`step_type=None` disables both the reset and the zeroing.
"""

import collections
import contextlib
import threading

import tensorflow as tf
from tf_agents.keras_layers import dynamic_unroll_layer
from tf_agents.networks import network
from tf_agents.networks import utils as network_utils
from tf_agents.specs import tensor_spec
from tf_agents.trajectories import time_step as ts
from tf_agents.utils import nest_utils

_UNROLL = threading.local()


@contextlib.contextmanager
def while_loop_unroll():
  """Within it (in this thread), sequences unroll as a `tf.while_loop`.

  For graphs that XLA compiles (`R2D2Agent(jit_compile=True)`): XLA turns
  the loop into far less CPU than the same cell calls unrolled step by
  step, which a plain TensorFlow graph runs faster (`_unroll`).
  """
  previous = getattr(_UNROLL, 'while_loop', False)
  _UNROLL.while_loop = True
  try:
    yield
  finally:
    _UNROLL.while_loop = previous


OBSERVATION_KEY = 'observation'
PREV_ACTION_KEY = 'prev_action'
PREV_REWARD_KEY = 'prev_reward'

# (filters, kernel size, stride) of the Atari torso: R2D2 keeps the conv
# stack of Mnih et al. (2015), followed by a 512-unit dense layer.
ATARI_CONV_LAYER_PARAMS = ((32, 8, 4), (64, 4, 2), (64, 3, 1))


def make_input_spec(observation_spec, action_spec, reward_dtype=tf.float32):
  """The input spec this network expects, as a dict.

  Args:
    observation_spec: A single `TensorSpec` or `ArraySpec`: rank 1 (vector) or
      rank 3 (HWC image; uint8 images are scaled to [0, 1] by the network).
    action_spec: The scalar discrete bounded spec of the environment;
      `prev_action` reuses it, so it has the same dtype and bounds.
    reward_dtype: dtype of `prev_reward`.

  Returns:
    `{'observation': ..., 'prev_action': ..., 'prev_reward': TensorSpec(())}`.
  """
  # from_spec accepts the ArraySpecs of a PyEnvironment as well.
  return {
      OBSERVATION_KEY: tensor_spec.from_spec(observation_spec),
      PREV_ACTION_KEY: tensor_spec.from_spec(action_spec),
      PREV_REWARD_KEY: tf.TensorSpec((), reward_dtype),
  }


class DuelingOutputs(
    collections.namedtuple('DuelingOutputs',
                           ['q_values', 'value', 'advantages'])):
  """The dueling streams: q_values and advantages `[..., A]`, value `[...]`.

  `advantages` are the raw stream, before the mean is subtracted.
  """
  __slots__ = ()


# Keys of `q_heads`: Q_E (what `call` returns) and Q_I (with the head).
EXTRINSIC = 'extrinsic'
INTRINSIC = 'intrinsic'


class RecurrentDuelingQNetwork(network.Network):
  """LSTM (or feed-forward) dueling Q network with previous action and reward.

  Call with inputs shaped `[B, ...]` (one step; state advances one step) or
  `[B, T, ...]` (a sequence unrolled from `network_state`). Returns
  `(q_values, next_state)`, q_values `[B, A]` or `[B, T, A]`.
  """

  def __init__(self,
               input_tensor_spec,
               action_spec,
               torso_fc_layer_params,
               lstm_size,
               dueling_fc_layer_params,
               conv_layer_params=None,
               image_scale=None,
               intrinsic_head=False,
               static_unroll=True,
               name='RecurrentDuelingQNetwork'):
    """Creates the network.

    Args:
      input_tensor_spec: dict from `make_input_spec`.
      action_spec: scalar integer `BoundedTensorSpec`; A = max - min + 1.
      torso_fc_layer_params: units of the dense layers after the conv stack
        (images) or of the MLP (vectors). Paper, Atari: (512,).
      lstm_size: LSTM units (paper: 512), or None for the feed-forward
        baseline, whose state is `()`.
      dueling_fc_layer_params: hidden units of each of the value and advantage
        streams. Paper (following Ape-X's dueling head): (512,).
      conv_layer_params: (filters, kernel, stride) triples for image
        observations, e.g. `ATARI_CONV_LAYER_PARAMS`; must be None or empty
        for vector observations.
      image_scale: multiplier after casting the observation to float32;
        None: 1/255 for uint8 observations (pixels), 1 otherwise. One-hot
        uint8 planes (MiniGrid) want 1.
      intrinsic_head: add a second dueling head, Q_I (see the module
        docstring); `call` still returns Q_E.
      static_unroll: unroll sequences whose length is known when the graph
        is built as one cell call per step instead of `DynamicUnroll`'s
        `tf.while_loop` (the same maths, less CPU; see `_unroll`). False
        keeps the loop; `while_loop_unroll` does for one graph.
      name: network name.

    Raises:
      ValueError: if the specs do not have the layout described above.
    """
    action_spec = tensor_spec.from_spec(action_spec)
    _check_input_spec(input_tensor_spec, action_spec)
    observation_spec = input_tensor_spec[OBSERVATION_KEY]
    is_image = observation_spec.shape.rank == 3
    if is_image and not conv_layer_params:
      raise ValueError(
          'Image observations (rank 3, shape %s) need conv_layer_params, e.g. '
          'ATARI_CONV_LAYER_PARAMS.' % (observation_spec.shape,))
    if not is_image and conv_layer_params:
      raise ValueError(
          'conv_layer_params given for a vector observation of shape %s.' %
          (observation_spec.shape,))
    if lstm_size is not None and lstm_size < 1:
      raise ValueError(f'lstm_size must be positive or None, got {lstm_size}.')

    if lstm_size is None:
      state_spec = ()
    else:
      # [h, c], the structure tf.keras.layers.LSTMCell uses for its state.
      state_spec = [
          tf.TensorSpec((lstm_size,), tf.float32, name='lstm_h'),
          tf.TensorSpec((lstm_size,), tf.float32, name='lstm_c'),
      ]
    super().__init__(
        input_tensor_spec=input_tensor_spec, state_spec=state_spec, name=name)

    self._num_actions = int(action_spec.maximum - action_spec.minimum + 1)
    self._action_minimum = int(action_spec.minimum)
    if image_scale is None:
      image_scale = 1.0 / 255.0 if observation_spec.dtype == tf.uint8 else 1.0
    self._image_scale = float(image_scale)
    self._static_unroll = bool(static_unroll)

    self._conv_layers = [
        tf.keras.layers.Conv2D(
            filters, kernel_size, strides=stride, activation='relu',
            name=f'torso_conv_{i}')
        for i, (filters, kernel_size, stride) in enumerate(
            conv_layer_params or ())
    ]
    self._flatten = tf.keras.layers.Flatten()
    self._torso_dense_layers = [
        tf.keras.layers.Dense(units, activation='relu', name=f'torso_fc_{i}')
        for i, units in enumerate(torso_fc_layer_params)
    ]
    if lstm_size is None:
      self._lstm = None
    else:
      self._lstm = dynamic_unroll_layer.DynamicUnroll(
          tf.keras.layers.LSTMCell(lstm_size), name='lstm')
    self._value_layers, self._advantage_layers = self._dueling_layers(
        dueling_fc_layer_params, prefix='')
    self._intrinsic_layers = None
    if intrinsic_head:
      self._intrinsic_layers = self._dueling_layers(
          dueling_fc_layer_params, prefix='intrinsic_')

  def _dueling_layers(self, dueling_fc_layer_params, prefix):
    """(value layers, advantage layers) of one dueling head."""
    value_layers = [
        tf.keras.layers.Dense(units, activation='relu',
                              name=f'{prefix}value_fc_{i}')
        for i, units in enumerate(dueling_fc_layer_params)
    ] + [tf.keras.layers.Dense(1, name=f'{prefix}value')]
    advantage_layers = [
        tf.keras.layers.Dense(units, activation='relu',
                              name=f'{prefix}advantage_fc_{i}')
        for i, units in enumerate(dueling_fc_layer_params)
    ] + [tf.keras.layers.Dense(self._num_actions, name=f'{prefix}advantage')]
    return value_layers, advantage_layers

  @property
  def num_actions(self):
    return self._num_actions

  def call(self, inputs, step_type=None, network_state=(), training=False):
    outputs, next_state = self.dueling_outputs(
        inputs, step_type=step_type, network_state=network_state,
        training=training)
    return outputs.q_values, next_state

  @property
  def has_intrinsic_head(self):
    """Whether the network has Q_I beside Q_E (`q_heads`)."""
    return self._intrinsic_layers is not None

  def dueling_outputs(self, inputs, step_type=None, network_state=(),
                      training=False):
    """Like `call`, but returns all dueling streams as `DuelingOutputs`."""
    (outputs, _), _, next_state = self._heads(inputs, step_type,
                                              network_state, training)
    return outputs, next_state

  def q_heads(self, inputs, step_type=None, network_state=(),
              training=False):
    """`({EXTRINSIC: Q_E[, INTRINSIC: Q_I, ...]}, next_state)`: every head.

    One pass of the torso and the LSTM serves every head; a subclass adds
    its own in `_extra_heads`.
    """
    (extrinsic, intrinsic), extra_heads, next_state = self._heads(
        inputs, step_type, network_state, training)
    heads = {EXTRINSIC: extrinsic.q_values}
    if intrinsic is not None:
      heads[INTRINSIC] = intrinsic.q_values
    heads.update(extra_heads)
    return heads, next_state

  def _extra_heads(self, core_outputs, inputs, training):
    """A subclass's own heads: `{name: [B, T, ...]}` from the core's outputs.

    `core_outputs`: `[B, T, H]` (LSTM outputs, or the core inputs of the
    feed-forward network); `inputs`: the network's `[B, T]` input dict.
    """
    del core_outputs, inputs, training
    return {}

  def _heads(self, inputs, step_type, network_state, training):
    """((extrinsic, intrinsic or None) `DuelingOutputs`, extra, next_state).

    `extra`: a subclass's `_extra_heads` of the same pass.
    """
    outer_rank = nest_utils.get_outer_rank(inputs, self.input_tensor_spec)
    if outer_rank not in (1, 2):
      raise ValueError(
          'Inputs must be shaped [B, ...] or [B, T, ...]; got outer rank '
          f'{outer_rank}.')
    has_time_dim = outer_rank == 2
    if not has_time_dim:
      inputs = tf.nest.map_structure(lambda t: tf.expand_dims(t, 1), inputs)
      if step_type is not None:
        step_type = tf.expand_dims(step_type, 1)

    is_first = None
    if step_type is not None:
      is_first = tf.equal(step_type, ts.StepType.FIRST)

    features = self._torso(inputs[OBSERVATION_KEY], training)  # [B, T, F]
    prev_action = tf.one_hot(
        tf.cast(inputs[PREV_ACTION_KEY], tf.int32) - self._action_minimum,
        self._num_actions, dtype=tf.float32)
    prev_reward = tf.cast(inputs[PREV_REWARD_KEY], tf.float32)[..., None]
    if is_first is not None:
      prev_action = tf.where(is_first[..., None], 0.0, prev_action)
      prev_reward = tf.where(is_first[..., None], 0.0, prev_reward)
    core_inputs = tf.concat([features, prev_action, prev_reward], axis=-1)

    if self._lstm is None:
      core_outputs, next_state = core_inputs, ()
    else:
      if not tf.nest.flatten(network_state):
        network_state = self.get_initial_state(tf.shape(core_inputs)[0])
      core_outputs, next_state = self._unroll(core_inputs, network_state,
                                              is_first, training)

    outputs = (_dueling(core_outputs, self._value_layers,
                        self._advantage_layers, training), None)
    if self._intrinsic_layers is not None:
      # Built by every call, so `create_variables` creates its weights.
      outputs = (outputs[0], _dueling(core_outputs, *self._intrinsic_layers,
                                      training))
    extra_heads = self._extra_heads(core_outputs, inputs, training)
    if not has_time_dim:
      outputs = tuple(
          None if head is None else tf.nest.map_structure(
              lambda t: tf.squeeze(t, 1), head) for head in outputs)
      extra_heads = tf.nest.map_structure(lambda t: tf.squeeze(t, 1),
                                          extra_heads)
    return outputs, extra_heads, next_state

  def _unroll(self, core_inputs, network_state, is_first, training):
    """The LSTM over `[B, T, F]` inputs: (outputs `[B, T, H]`, last state).

    With `static_unroll` and a time dimension known when the graph is
    built, the cell is called once per step in Python: the same ops as
    `DynamicUnroll`'s loop body (zero the state where `is_first`, then the
    cell), without the `tf.while_loop`, whose per-iteration bookkeeping and
    TensorList gradients cost more CPU than the 64-unit cell itself
    (docs/performance.md, "R2D2's learner"). Otherwise, and inside
    `while_loop_unroll`, `DynamicUnroll`.
    """
    num_steps = core_inputs.shape[1]
    if (not self._static_unroll or getattr(_UNROLL, 'while_loop', False) or
        num_steps is None or num_steps == 1):
      return self._lstm(core_inputs, initial_state=network_state,
                        reset_mask=is_first, training=training)
    cell = self._lstm.cell
    state = list(network_state)
    zero_state = [tf.zeros_like(s) for s in state]
    outputs = []
    for t in range(num_steps):
      if is_first is not None:
        reset = is_first[:, t, None]
        state = [tf.where(reset, zero, s) for zero, s in zip(zero_state, state)]
      output, state = cell(core_inputs[:, t], state, training=training)
      outputs.append(output)
    return tf.stack(outputs, axis=1), state

  def _scaled(self, observation):
    """The observation as float32, times `image_scale`."""
    observation = tf.cast(observation, tf.float32)
    if self._image_scale != 1.0:
      observation = observation * self._image_scale
    return observation

  def _torso(self, observation, training):
    """Encodes `[B, T, *obs_shape]` observations into `[B, T, F]` features."""
    batch_squash = network_utils.BatchSquash(2)
    hidden = self._scaled(batch_squash.flatten(observation))
    for layer in self._conv_layers:
      hidden = layer(hidden, training=training)
    hidden = self._flatten(hidden)
    for layer in self._torso_dense_layers:
      hidden = layer(hidden, training=training)
    return batch_squash.unflatten(hidden)


def _dueling(core_outputs, value_layers, advantage_layers, training):
  """`DuelingOutputs` of one dueling head on the core's outputs."""
  value = core_outputs
  for layer in value_layers:
    value = layer(value, training=training)
  advantages = core_outputs
  for layer in advantage_layers:
    advantages = layer(advantages, training=training)
  # Subtracting the mean advantage (not the max) is the variant Wang et al.
  # (2016) found more stable and the one R2D2 inherits from Ape-X.
  q_values = value + advantages - tf.reduce_mean(
      advantages, axis=-1, keepdims=True)
  return DuelingOutputs(
      q_values=q_values, value=tf.squeeze(value, -1), advantages=advantages)


def _check_input_spec(input_tensor_spec, action_spec):
  """Raises ValueError unless the specs follow `make_input_spec`'s layout."""
  expected_keys = {OBSERVATION_KEY, PREV_ACTION_KEY, PREV_REWARD_KEY}
  if not isinstance(input_tensor_spec, dict) or set(
      input_tensor_spec) != expected_keys:
    raise ValueError(
        'input_tensor_spec must be a dict with keys %s (see make_input_spec); '
        'got %r.' % (sorted(expected_keys), input_tensor_spec))
  if not (tensor_spec.is_bounded(action_spec) and
          tensor_spec.is_discrete(action_spec) and action_spec.shape.rank == 0):
    raise ValueError(
        'action_spec must be a scalar bounded integer spec; got '
        f'{action_spec}.')
  prev_action_spec = input_tensor_spec[PREV_ACTION_KEY]
  if not prev_action_spec.dtype.is_integer or prev_action_spec.shape.rank != 0:
    raise ValueError('prev_action must be a scalar integer spec; got '
                     f'{prev_action_spec}.')
  prev_reward_spec = input_tensor_spec[PREV_REWARD_KEY]
  if not prev_reward_spec.dtype.is_floating or prev_reward_spec.shape.rank != 0:
    raise ValueError('prev_reward must be a scalar float spec; got '
                     f'{prev_reward_spec}.')
  observation_spec = input_tensor_spec[OBSERVATION_KEY]
  if not isinstance(observation_spec, tf.TensorSpec) or (
      observation_spec.shape.rank not in (1, 3)):
    raise ValueError(
        'observation must be a single TensorSpec of rank 1 (vector) or 3 '
        f'(HWC image); got {observation_spec}.')
