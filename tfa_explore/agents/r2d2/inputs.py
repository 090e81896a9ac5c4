"""What R2D2 reads: its specs, a replayed batch, and the policy info in it.

Training input. `R2D2Agent.train(experience)` takes either

* a `PrioritizedSequences(trajectory, sample_info)`: `[B, T]` trajectories
  and Reverb's `SampleInfo` (`[B]` keys, probabilities, table sizes). The
  probabilities give the importance weights, and `LossInfo.extra.priorities`
  holds the new priority of every sampled sequence, to be written back by
  key (`replay.priority_updater.PriorityUpdater`). `replay.replay_dataset`
  builds such a dataset from a stock `ReverbReplayBuffer`, in the
  `(experience, sample_info)` pairs the stock `Learner` expects; or
* a plain `[B, T]` `Trajectory` (uniform replay: all weights 1).

with `T = sequence_config.sequence_length`.

Policy info. The network input is `{'observation', 'prev_action',
'prev_reward'}` (`networks.recurrent_dueling_q_network.make_input_spec`).
The policy (`policy.R2D2Policy`) emits at every step, and replay stores
with the trajectory:

    {'network_state': [h, c]   the recurrent state the network started from
                               at this step (zeros on FIRST steps, since the
                               network resets there),
     'prev_action': a_{t-1},   the network's extra inputs at this step
     'prev_reward': r_{t-1}}   (zeros on FIRST steps)

The learner starts a replayed sequence from `network_state` at its first
step (R2D2's stored state) and feeds `prev_action` / `prev_reward` as they
were fed to the actor, so the replay unroll sees exactly the actor's inputs.
"""

import collections

import tensorflow as tf
from tf_agents.specs import tensor_spec
from tf_agents.trajectories import trajectory as trajectory_lib

from tfa_explore.networks import recurrent_dueling_q_network as rdqn

NETWORK_STATE = 'network_state'
PREV_ACTION = rdqn.PREV_ACTION_KEY
PREV_REWARD = rdqn.PREV_REWARD_KEY


class PrioritizedSequences(
    collections.namedtuple('PrioritizedSequences',
                           ['trajectory', 'sample_info'])):
  """A batch of replayed sequences with Reverb's `SampleInfo`."""
  __slots__ = ()


def check_action_spec(action_spec):
  """Raises ValueError naming the spec unless it is one discrete scalar."""
  flat = tf.nest.flatten(action_spec)
  spec = flat[0] if len(flat) == 1 else None
  if spec is None or not (tensor_spec.is_bounded(spec) and
                          tensor_spec.is_discrete(spec) and
                          spec.shape.rank == 0):
    raise ValueError(
        'R2D2Agent needs a single scalar bounded discrete (integer) action '
        f'spec; got action_spec={action_spec}.')
  return spec


def specs_match(specs, expected_specs):
  """Same nest structure, shapes and dtypes (names may differ)."""
  try:
    tf.nest.assert_same_structure(specs, expected_specs)
  except (ValueError, TypeError):
    return False
  return all(
      spec.shape == expected.shape and spec.dtype == expected.dtype
      for spec, expected in zip(tf.nest.flatten(specs),
                                tf.nest.flatten(expected_specs)))


def per_sequence_sample_info(sample_info):
  """`SampleInfo` with `[B]` fields.

  Reverb's trajectory datasets repeat the item's info at every step
  (`[B, T]`); it is the same along T.
  """
  def first_step(x):
    x = tf.convert_to_tensor(x)
    return x[:, 0] if x.shape.rank == 2 else x
  return tf.nest.map_structure(first_step, sample_info)


def split_experience(experience):
  """(trajectory, sample_info or None) of a `train` input."""
  if isinstance(experience, trajectory_lib.Trajectory):
    return experience, None
  if isinstance(experience, PrioritizedSequences) or (
      isinstance(experience, tuple) and len(experience) == 2 and
      isinstance(experience[0], trajectory_lib.Trajectory)):
    return experience[0], experience[1]
  raise TypeError(
      'R2D2Agent.train expects a Trajectory or PrioritizedSequences('
      f'trajectory, sample_info); got {type(experience).__name__}.')


def trajectory_of(experience):
  """The `[B, T]` trajectory of any `train` input (R2D3's too)."""
  if isinstance(experience, trajectory_lib.Trajectory):
    return experience
  return experience[0]


def lists_to_tuples(nest):
  """The same nest with lists as tuples.

  Replay buffers refuse lists in data specs, and the LSTM state is [h, c].
  """
  if isinstance(nest, (list, tuple)) and not hasattr(nest, '_fields'):
    return tuple(lists_to_tuples(x) for x in nest)
  if isinstance(nest, dict):
    return {k: lists_to_tuples(v) for k, v in nest.items()}
  return nest


def info_spec(q_network, action_spec, reward_spec):
  """The spec of the policy info above."""
  return {
      NETWORK_STATE: lists_to_tuples(q_network.state_spec),
      PREV_ACTION: action_spec,
      PREV_REWARD: reward_spec,
  }


def stored_network_state(info, q_network):
  """The stored network state of policy info, in the network's structure."""
  return tf.nest.pack_sequence_as(q_network.state_spec,
                                  tf.nest.flatten(info[NETWORK_STATE]))


def network_inputs(observation, info):
  """The network input dict from observations and the stored policy info."""
  return {
      rdqn.OBSERVATION_KEY: observation,
      rdqn.PREV_ACTION_KEY: info[PREV_ACTION],
      rdqn.PREV_REWARD_KEY: info[PREV_REWARD],
  }
