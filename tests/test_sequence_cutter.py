"""The one cutter of R2D2 sequences: padding, item ends, streams."""

import numpy as np
import tensorflow as tf
from tf_agents.trajectories import trajectory as trajectory_lib

from tfa_explore.agents.r2d2 import config as r2d2_config
from tfa_explore.replay import sequence_cutter
from tfa_explore.replay import sequence_writer
from tfa_explore.testing import r2d2 as support

F, M, L = 0, 1, 2
# burn-in 2, trace 4, period 2 -> sequence_length 7, an item every 2 steps.
CONFIG = support.SMALL_CONFIG


def _episode(num_steps, start=0, first=True):
  """Trajectories of observations start..start + num_steps (last = LAST).

  Reward of step t is t + 1; `first=False` starts mid-episode (MID).
  """
  steps = []
  for t in range(num_steps + 1):
    step_type = L if t == num_steps else (F if t == 0 and first else M)
    next_step_type = F if t == num_steps else (
        L if t + 1 == num_steps else M)
    steps.append(trajectory_lib.Trajectory(
        step_type=np.int32(step_type),
        observation=np.array([start + t], np.float32),
        action=np.int64(t % 2),
        policy_info={'prev_action': np.int64(0)},
        next_step_type=np.int32(next_step_type),
        reward=np.float32(0 if t == num_steps else t + 1),
        discount=np.float32(1)))
  return steps


def _layout(stream):
  """(observations, step types, 1-based stream offsets of item ends)."""
  observations = [int(s.step.observation[0]) for s in stream]
  step_types = [int(s.step.step_type) for s in stream]
  ends = [i for i, s in enumerate(stream, start=1) if s.item is not None]
  return observations, step_types, ends


class SequenceCutterTest(support.TestCase):

  def test_an_episode_is_padded_and_cut_every_stride(self):
    # 9 transitions: observations 0..9 (9 is the LAST boundary step).
    # Stream: 2 front pads + 10 steps = 12; items of 7 end at 7, 9, 11;
    # step 12 misses an item end, so one rear pad makes the item at 13.
    stream = sequence_cutter.cut_episode(_episode(9), CONFIG)
    observations, step_types, ends = _layout(stream)
    self.assertEqual(observations, [0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0])
    self.assertEqual(step_types, [F, F, F] + [M] * 8 + [L, L])
    self.assertEqual(ends, [7, 9, 11, 13])
    # Each item is the 7 stream steps ending with its step.
    for end in ends:
      self.assertEqual(
          [int(s.observation[0]) for s in stream[end - 1].item],
          observations[end - 7:end])
    # Paddings are zeros, with the step types the learner's mask knows.
    front, rear = stream[0].step, stream[-1].step
    self.assertEqual((int(front.step_type), int(front.next_step_type)),
                     (F, F))
    self.assertEqual((int(rear.step_type), int(rear.next_step_type)), (L, F))
    self.assertEqual(float(rear.reward), 0.0)

  def test_an_episode_ending_on_an_item_end_gets_no_rear_padding(self):
    # 4 transitions: 2 pads + 5 steps = 7 = one item, ending at the LAST.
    _, step_types, ends = _layout(
        sequence_cutter.cut_episode(_episode(4), CONFIG))
    self.assertEqual(step_types, [F, F, F, M, M, M, L])
    self.assertEqual(ends, [7])

  def test_a_stream_started_mid_episode_has_no_front_padding(self):
    stream = sequence_cutter.cut_episode(_episode(6, first=False), CONFIG)
    observations, _, ends = _layout(stream)
    # 7 steps: exactly one item, no padding at either end.
    self.assertEqual(observations, [0, 1, 2, 3, 4, 5, 6])
    self.assertEqual(ends, [7])

  def test_the_stream_restarts_after_a_boundary(self):
    cutter = sequence_cutter.SequenceCutter(CONFIG)
    first = [s for t in _episode(4) for s in cutter.add(t)]
    second = [s for t in _episode(4, start=10) for s in cutter.add(t)]
    # Each episode is its own padded stream of one item.
    self.assertEqual(_layout(first),
                     ([0, 0, 0, 1, 2, 3, 4], [F, F, F, M, M, M, L], [7]))
    self.assertEqual(_layout(second),
                     ([0, 0, 10, 11, 12, 13, 14], [F, F, F, M, M, M, L],
                      [7]))

  def test_reset_drops_the_unfinished_stream(self):
    cutter = sequence_cutter.SequenceCutter(CONFIG)
    for t in _episode(9)[:4]:
      cutter.add(t)
    cutter.reset()
    # The next FIRST step starts a fresh stream with its front padding.
    added = cutter.add(_episode(9)[0])
    self.assertEqual(_layout(added)[1], [F, F, F])

  def test_one_step_adds_padding_and_its_items(self):
    cutter = sequence_cutter.SequenceCutter(
        r2d2_config.SequenceConfig(burn_in_steps=1, trace_length=2,
                                   replay_period=2))  # length 4
    episode = _episode(1)  # observations 0, 1 (LAST)
    self.assertEqual(_layout(cutter.add(episode[0])), ([0, 0], [F, F], []))
    # 1 + 2 steps, then 1 rear pad to the first item end at 4.
    self.assertEqual(_layout(cutter.add(episode[1])),
                     ([1, 0], [L, L], [2]))

  def test_stack_and_stream_items(self):
    stream = sequence_cutter.cut_episode(_episode(9), CONFIG)
    items = sequence_cutter.stream_items(stream)
    self.assertLen(items, 4)
    stacked = sequence_cutter.stack(items[1])
    self.assertEqual(stacked.observation.shape, (7, 1))
    self.assertAllEqual(stacked.observation[:, 0], [0, 1, 2, 3, 4, 5, 6])
    self.assertEqual(stacked.policy_info['prev_action'].shape, (7,))


class WriteStreamTest(support.TestCase):

  def test_each_step_is_appended_once_and_items_get_their_priority(self):
    stream = sequence_cutter.cut_episode(_episode(9), CONFIG)
    writer = _RecordingWriter()
    written = sequence_writer.write_stream(writer, 'table', stream,
                                           [1.0, 2.0, 3.0, 4.0])
    self.assertEqual(written, 4)
    self.assertLen(writer.appended, len(stream))
    self.assertEqual(
        writer.items,
        [('table', 1.0, 7), ('table', 2.0, 9), ('table', 3.0, 11),
         ('table', 4.0, 13)])

  def test_a_priority_per_item(self):
    stream = sequence_cutter.cut_episode(_episode(9), CONFIG)
    with self.assertRaisesRegex(ValueError, '3 priorities .* 4 items'):
      sequence_writer.write_stream(_RecordingWriter(), 'table', stream,
                                   [1.0] * 3)


class _RecordingWriter:
  """Records appends; an item is (table, priority, end offset)."""

  def __init__(self):
    self.appended = []
    self.items = []

  @property
  def history(self):
    return _Columns(len(self.appended))

  def append(self, step):
    self.appended.append(step)

  def create_item(self, table, priority, trajectory):
    self.items.append((table, priority, trajectory))


class _Columns:
  """A history whose slice `[-n:]` is the end offset of the last n steps."""

  def __init__(self, length):
    self._length = length

  def __getitem__(self, index):
    assert index == slice(-7, None), index
    return self._length


if __name__ == '__main__':
  tf.test.main()
