"""Demonstration episodes as the agent's own R2D2 sequences.

Demonstrations are replayed as the agent's own data: each episode becomes
the trajectories an R2D2 actor would have written (`episode_trajectories`),
with the policy info of `collect_data_spec` (`network_state` zeros:
demonstrations have no recurrent state, so every demo sequence starts from
the zero state and the learner's burn-in warms it up, as in Paine et al.
2019; `prev_action` / `prev_reward` from the demo itself), cut into
overlapping sequences by the cutter the actors use
(`replay.sequence_cutter`: burn-in front padding, an item every stride,
rear padding at the end). `write_to_table` writes them to Reverb as the
actors do (`sequence_writer.write_stream`: each step appended once);
`episode_sequences` gives them in memory and `count_sequences` counts
them.
"""

from typing import List, Sequence

import numpy as np
import tensorflow as tf
from tf_agents.trajectories import time_step as ts
from tf_agents.trajectories import trajectory as trajectory_lib

from tfa_explore.agents.r2d2 import inputs as r2d2_inputs
from tfa_explore.replay import sequence_cutter
from tfa_explore.replay import sequence_writer
from tfa_explore.replay import tables


def _observation_at(observation, t):
  return tf.nest.map_structure(lambda x: x[t], observation)


def episode_trajectories(episode, collect_data_spec):
  """The unbatched numpy `Trajectory`s an R2D2 actor would have observed.

  One per time step (n + 1, the LAST one included, as actors write them);
  the LAST step's action is 0 and never trained on. Policy info: zero
  network state, `prev_action` = a_{t-1} and `prev_reward` = reward[t]
  (zeros on the FIRST step), exactly what `R2D2Policy` records.
  """
  info_spec = collect_data_spec.policy_info
  action_dtype = tf.as_dtype(collect_data_spec.action.dtype).as_numpy_dtype
  # Zero network state, and zeros for any other info (an episodic
  # novelty), as for a demonstrator without that memory.
  zero_info = tf.nest.map_structure(
      lambda s: np.zeros(s.shape, s.dtype.as_numpy_dtype), info_spec)
  reward_dtype = tf.as_dtype(
      info_spec[r2d2_inputs.PREV_REWARD].dtype).as_numpy_dtype
  step_dtype = tf.as_dtype(collect_data_spec.step_type.dtype).as_numpy_dtype
  num_steps = len(episode.step_type)
  actions = np.concatenate([np.asarray(episode.action, action_dtype),
                            np.zeros([1], action_dtype)])
  for t in range(num_steps):
    last = t == num_steps - 1
    info = {
        **zero_info,
        r2d2_inputs.PREV_ACTION: actions[t - 1] if t else action_dtype(0),
        r2d2_inputs.PREV_REWARD: reward_dtype(episode.reward[t] if t else 0),
    }
    yield trajectory_lib.Trajectory(
        step_type=step_dtype(episode.step_type[t]),
        observation=_observation_at(episode.observation, t),
        action=actions[t],
        policy_info=info,
        # The LAST step's successor is the next episode's FIRST (auto-reset).
        next_step_type=step_dtype(ts.StepType.FIRST if last
                                  else episode.step_type[t + 1]),
        reward=reward_dtype(0 if last else episode.reward[t + 1]),
        discount=np.float32(1 if last else episode.discount[t + 1]))


def episode_stream(episode, agent):
  """The padded stream (`sequence_cutter.StreamStep`s) of one demo episode.

  Args:
    episode: a `DemoEpisode` in the agent's specs.
    agent: the `R2D2Agent` / `R2D3Agent` (sequence config, data spec).
  """
  return sequence_cutter.cut_episode(
      episode_trajectories(episode, agent.collect_data_spec),
      agent.sequence_config)


def write_to_table(episodes, py_client, table_name, agent, priority_fn=None,
                   default_priority=1.0, max_in_flight_items=4):
  """Writes demo episodes as the agent's sequences into a Reverb table.

  Args:
    episodes: `DemoEpisode`s (e.g. `read_demonstrations(...).episodes`,
      read with the agent's specs).
    py_client: `reverb.Client`.
    table_name: the demonstration table (e.g. `mixed_dataset
      .make_demo_table`); its signature is checked against the agent's.
    agent: the `R2D2Agent` / `R2D3Agent` (sequence config, data spec).
    priority_fn: callable, `[sequence_length]` numpy trajectory -> float
      priority; None to insert with `default_priority`.
    default_priority: priority when `priority_fn` is None.
    max_in_flight_items: items not yet confirmed by the server after each
      episode (bounds the writer's memory).

  Returns:
    The number of sequences written.
  """
  length = agent.sequence_config.sequence_length
  server_info = py_client.server_info()
  tables.check_sequence_tables(
      server_info, [table_name], agent.collect_data_spec, length,
      missing_hint=f'the server has tables {sorted(server_info)}.')
  writer = py_client.trajectory_writer(num_keep_alive_refs=length)
  written = 0
  try:
    for episode in episodes:
      stream = episode_stream(episode, agent)
      if priority_fn is None:
        priorities = [default_priority] * len(
            sequence_cutter.stream_items(stream))
      else:
        priorities = [priority_fn(sequence_cutter.stack(item))
                      for item in sequence_cutter.stream_items(stream)]
      written += sequence_writer.write_stream(writer, table_name, stream,
                                              priorities)
      writer.flush(block_until_num_items=max_in_flight_items)
    writer.end_episode(clear_buffers=True)
    return written
  finally:
    writer.close()


def episode_sequences(episodes, agent) -> List[trajectory_lib.Trajectory]:
  """The `[sequence_length]` numpy sequences `write_to_table` would write.

  Same cutting, without Reverb: for inspection, tests, or an in-memory
  `tf.data` demo dataset (`sequences_dataset`).
  """
  return [sequence_cutter.stack(item)
          for episode in episodes
          for item in sequence_cutter.stream_items(
              episode_stream(episode, agent))]


def count_sequences(episodes, agent) -> int:
  """How many sequences `write_to_table` writes for `episodes`.

  Same cutting as `episode_sequences`, but no sequence is built and only
  the cutter's last `sequence_length` steps are held, so it also suits
  long (Atari) demonstrations. The demonstration table must hold at least
  this many items.
  """
  count = 0
  for episode in episodes:
    cutter = sequence_cutter.SequenceCutter(agent.sequence_config)
    for trajectory in episode_trajectories(episode, agent.collect_data_spec):
      count += sum(stream_step.item is not None
                   for stream_step in cutter.add(trajectory))
  return count


def sequences_dataset(sequences: Sequence[trajectory_lib.Trajectory]):
  """A `tf.data.Dataset` of the given `[T]` sequences (unbatched)."""
  return tf.data.Dataset.from_tensor_slices(sequence_cutter.stack(sequences))
