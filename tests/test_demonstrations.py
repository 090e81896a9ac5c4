"""Demonstration files: round trip, corruption, spec checks, sequences."""

import os
import subprocess
import sys

import numpy as np
import portpicker
import pytest
import reverb
import tensorflow as tf
from tf_agents.policies import policy_saver
from tf_agents.specs import tensor_spec

from tfa_explore.replay import demonstrations
from tfa_explore.replay import mixed_dataset
from tfa_explore.testing import fake_envs
from tfa_explore.testing import r2d2 as r2d2_support
from tfa_explore.testing import r2d3 as support
import test_console  # pylint: disable=g-bad-import-order

F, M, L = 0, 1, 2
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _assert_episodes_equal(test, actual, expected):
  test.assertEqual(len(actual), len(expected))
  for a, e in zip(actual, expected):
    for field in ('step_type', 'reward', 'discount', 'action'):
      test.assertAllEqual(getattr(a, field), getattr(e, field))
    tf.nest.map_structure(test.assertAllEqual, a.observation, e.observation)


class FileTest(support.TestCase):

  def _write(self, num_episodes=3):
    episodes, env = support.counting_episodes(num_episodes=num_episodes,
                                              episode_length=4)
    path = os.path.join(self.get_temp_dir(), 'demos.demo')
    demonstrations.write_demonstrations(
        path, env.env_id, env.time_step_spec(), env.action_spec(), episodes,
        metadata={'source': 'test'})
    return path, episodes, env

  def test_round_trip(self):
    path, episodes, env = self._write()
    demos = demonstrations.read_demonstrations(path, env.time_step_spec(),
                                               env.action_spec())
    _assert_episodes_equal(self, demos.episodes, episodes)
    self.assertEqual(demos.env_id, fake_envs.COUNTING_ID)
    self.assertEqual(demos.metadata, {'source': 'test'})
    header, _ = demonstrations.read_header(path)
    # Counting episodes of 4 steps return 1 + 2 + 3 + 4.
    self.assertEqual([e['return'] for e in header['episodes']], [10.0] * 3)
    self.assertEqual(header['specs']['observation']['shape'], [1])
    # No temporary files are left next to the file.
    self.assertEqual(os.listdir(os.path.dirname(path)), ['demos.demo'])

  def test_round_trip_of_dict_observations(self):
    env = fake_envs.load_dict_obs(seed=3)
    episodes = demonstrations.record_episodes(
        env, support.ActionSequenceSource([0, 1]), 2)
    path = os.path.join(self.get_temp_dir(), 'dict.demo')
    demonstrations.write_demonstrations(
        path, env.env_id, env.time_step_spec(), env.action_spec(), episodes)
    demos = demonstrations.read_demonstrations(path, env.time_step_spec(),
                                               env.action_spec())
    self.assertIsInstance(demos.episodes[0].observation, dict)
    _assert_episodes_equal(self, demos.episodes, episodes)
    # Without the agent's specs the reader rebuilds them from the header.
    unchecked = demonstrations.read_demonstrations(path)
    self.assertEqual(unchecked.time_step_spec.observation['image'].shape,
                     (4, 4, 1))

  def test_truncated_file_names_the_byte_offset(self):
    path, _, _ = self._write()
    size = os.path.getsize(path)
    with open(path, 'rb') as f:
      data = f.read()
    with open(path, 'wb') as f:
      f.write(data[:size - 10])
    with self.assertRaisesRegex(demonstrations.DemonstrationFileError,
                                f'truncated.*episode 2.*ends at byte '
                                f'{size - 10}'):
      demonstrations.read_demonstrations(path)
    with open(path, 'wb') as f:
      f.write(data[:15])
    with self.assertRaisesRegex(demonstrations.DemonstrationFileError,
                                'truncated.*ends at byte 15'):
      demonstrations.read_demonstrations(path)

  def test_flipped_byte_in_an_episode_names_the_episode(self):
    path, _, _ = self._write()
    header, records_start = demonstrations.read_header(path)
    entry = header['episodes'][1]
    position = records_start + entry['offset'] + entry['length'] // 2
    with open(path, 'r+b') as f:
      f.seek(position)
      byte = f.read(1)
      f.seek(position)
      f.write(bytes([byte[0] ^ 0xFF]))
    start = records_start + entry['offset']
    with self.assertRaisesRegex(
        demonstrations.DemonstrationFileError,
        f'episode 1 \\(bytes {start}\\.\\.{start + entry["length"]}\\): '
        'CRC32 checksum mismatch'):
      demonstrations.read_demonstrations(path)

  def test_check_reads_every_episode_and_keeps_none(self):
    path, _, env = self._write()
    header = demonstrations.check_demonstrations(path, env.time_step_spec(),
                                                 env.action_spec())
    self.assertEqual(header['num_episodes'], 3)
    header, records_start = demonstrations.read_header(path)
    entry = header['episodes'][2]  # The last one: the header is fine.
    position = records_start + entry['offset'] + entry['length'] // 2
    with open(path, 'r+b') as f:
      f.seek(position)
      f.write(b'\x00\xff\x00\xff')
    with self.assertRaisesRegex(demonstrations.DemonstrationFileError,
                                'episode 2 .*CRC32 checksum mismatch'):
      demonstrations.check_demonstrations(path, env.time_step_spec(),
                                          env.action_spec())

  def test_flipped_byte_in_the_header(self):
    path, _, _ = self._write()
    with open(path, 'r+b') as f:
      f.seek(demonstrations.PREAMBLE_SIZE + 5)
      byte = f.read(1)
      f.seek(demonstrations.PREAMBLE_SIZE + 5)
      f.write(bytes([byte[0] ^ 0x01]))
    with self.assertRaisesRegex(demonstrations.DemonstrationFileError,
                                'header checksum mismatch'):
      demonstrations.read_demonstrations(path)

  def test_trailing_bytes_and_wrong_magic_are_rejected(self):
    path, _, _ = self._write()
    size = os.path.getsize(path)
    with open(path, 'ab') as f:
      f.write(b'junk')
    with self.assertRaisesRegex(demonstrations.DemonstrationFileError,
                                f'trailing data from byte {size}'):
      demonstrations.read_demonstrations(path)
    other = os.path.join(self.get_temp_dir(), 'other.demo')
    with open(other, 'wb') as f:
      f.write(b'NOTADEMOFILE' * 4)
    with self.assertRaisesRegex(demonstrations.DemonstrationFileError,
                                'not a demonstration file'):
      demonstrations.read_demonstrations(other)

  def test_spec_mismatch_names_the_field(self):
    path, _, env = self._write()
    time_step_spec = tensor_spec.from_spec(env.time_step_spec())
    action_spec = tensor_spec.from_spec(env.action_spec())
    wider_actions = tensor_spec.BoundedTensorSpec((), action_spec.dtype, 0, 3)
    with self.assertRaisesRegex(demonstrations.DemonstrationSpecError,
                                "field 'action' has maximum 1 .* needs 3"):
      demonstrations.read_demonstrations(path, time_step_spec, wider_actions)
    bigger_obs = time_step_spec._replace(
        observation=tensor_spec.BoundedTensorSpec((2,), tf.float32, 0, 4))
    with self.assertRaisesRegex(demonstrations.DemonstrationSpecError,
                                "field 'observation' has shape \\[1\\]"):
      demonstrations.read_demonstrations(path, bigger_obs, action_spec)
    dict_env = fake_envs.load_dict_obs()
    with self.assertRaisesRegex(demonstrations.DemonstrationSpecError,
                                'observation/image'):
      demonstrations.read_demonstrations(path, dict_env.time_step_spec(),
                                         action_spec)

  def test_failed_write_leaves_previous_file(self):
    path, episodes, env = self._write()
    with open(path, 'rb') as f:
      before = f.read()
    with self.assertRaisesRegex(RuntimeError, 'crash'):
      with demonstrations.DemonstrationWriter(
          path, env.env_id, env.time_step_spec(), env.action_spec()) as w:
        w.add_episode(episodes[0])
        raise RuntimeError('crash')
    with open(path, 'rb') as f:
      self.assertEqual(f.read(), before)
    self.assertEqual(os.listdir(os.path.dirname(path)), ['demos.demo'])

  def test_writer_rejects_inconsistent_episodes(self):
    episodes, env = support.counting_episodes(num_episodes=1)
    bad = episodes[0]
    bad.action = bad.action[:-1]
    path = os.path.join(self.get_temp_dir(), 'bad.demo')
    with self.assertRaisesRegex(demonstrations.DemonstrationFileError,
                                "field 'action'"):
      demonstrations.write_demonstrations(
          path, env.env_id, env.time_step_spec(), env.action_spec(),
          [bad])
    self.assertFalse(os.path.exists(path))


class SequenceTest(support.TestCase):

  def test_demo_sequences_layout_and_policy_info(self):
    agent = support.make_agent()  # burn-in 2, trace 4, period 2 -> 7.
    episodes, _ = support.counting_episodes(num_episodes=1, episode_length=4,
                                            actions=(1, 0))
    sequences = demonstrations.episode_sequences(episodes, agent)
    # Stream: 2 front pads + obs 0..4 (LAST) = 7 steps: exactly one item,
    # which already ends at the LAST step, so no rear padding.
    self.assertLen(sequences, 1)
    first = sequences[0]
    self.assertAllEqual(first.step_type, [F, F, F, M, M, M, L])
    self.assertAllEqual(first.observation[:, 0], [0, 0, 0, 1, 2, 3, 4])
    self.assertAllEqual(first.action, [0, 0, 1, 0, 1, 0, 0])
    # prev_action = a_{t-1}, prev_reward = reward of s_t, zeros on FIRST.
    self.assertAllEqual(first.policy_info['prev_action'],
                        [0, 0, 0, 1, 0, 1, 0])
    self.assertAllEqual(first.policy_info['prev_reward'],
                        [0, 0, 0, 1, 2, 3, 4])
    self.assertAllEqual(first.reward, [0, 0, 1, 2, 3, 4, 0])
    for state in tf.nest.flatten(first.policy_info['network_state']):
      self.assertAllEqual(state, np.zeros_like(state))

  def test_reverb_table_gets_the_same_sequences(self):
    agent = support.make_agent()
    episodes, _ = support.counting_episodes(num_episodes=2, episode_length=6)
    expected = demonstrations.episode_sequences(episodes, agent)
    length = agent.sequence_config.sequence_length
    table = mixed_dataset.make_demo_table(
        'demo', 100, agent.collect_data_spec, length)
    server = reverb.Server([table], port=portpicker.pick_unused_port())
    self.addCleanup(server.stop)
    client = reverb.Client(f'localhost:{server.port}')
    written = demonstrations.write_to_table(episodes, client, 'demo', agent)
    self.assertLen(expected, written)
    self.assertEqual(client.server_info()['demo'].current_size, written)
    # Every in-memory sequence is in the table (compare observations and
    # step types of all items, sampled until each was seen).
    wanted = {(tuple(s.observation[:, 0]), tuple(s.step_type))
              for s in expected}
    seen = set()
    for sample in client.sample('demo', num_samples=200,
                                emit_timesteps=False,
                                unpack_as_table_signature=True):
      seen.add((tuple(sample.data.observation[:, 0]),
                tuple(sample.data.step_type)))
      if seen == wanted:
        break
    self.assertEqual(seen, wanted)


@pytest.mark.integration
class RecordingTest(support.TestCase):

  def test_saved_r2d2_policy_source_replays_the_greedy_policy(self):
    agent = r2d2_support.make_agent(
        r2d2_support.counting_env(episode_length=6))
    policy_dir = os.path.join(self.get_temp_dir(), 'greedy_policy')
    policy_saver.PolicySaver(agent.policy, batch_size=None).save(policy_dir)
    source = demonstrations.SavedPolicySource(policy_dir)
    env = r2d2_support.counting_env(episode_length=6)
    episode = demonstrations.record_episode(env, source)
    # The same actions from the in-memory greedy policy, state carried.
    time_step = env.reset()
    state = agent.policy.get_initial_state(1)
    expected = []
    while not time_step.is_last():
      step = agent.policy.action(
          tf.nest.map_structure(lambda x: tf.constant(x)[None], time_step),
          state)
      state = step.state
      expected.append(int(step.action[0]))
      time_step = env.step(step.action[0].numpy())
    self.assertEqual(episode.action.tolist(), expected)
    self.assertEqual(episode.episode_return, 21.0)

  def test_collect_binary_writes_a_checked_file(self):
    output = os.path.join(self.get_temp_dir(), 'out', 'counting.demo')
    bindings = [
        'import tfa_explore.environments.experts',
        'import tfa_explore.replay.demonstrations',
        'demonstrations.collect.env_loader = @minigrid.load',
        'import tfa_explore.environments.minigrid',
        "minigrid.load.env_id = 'MiniGrid-DoorKey-5x5-v0'",
        'demonstrations.collect.source = @demonstrations.scripted_expert()',
        'demonstrations.scripted_expert.expert = @experts.doorkey_expert',
        'demonstrations.collect.seed = 7',
    ]
    command = [sys.executable,
               os.path.join(REPO, 'train', 'collect_demonstrations.py'),
               f'--output={output}', '--num_episodes=3']
    result = subprocess.run(
        command + [f'--gin_bindings={b}' for b in bindings],
        capture_output=True, text=True, timeout=120, cwd=REPO, check=False)
    self.assertEqual(result.returncode, 0, result.stderr[-2000:])
    # Our lines only, the console promise of every binary.
    self.assertEqual([line for line in result.stderr.splitlines()
                      if line.strip() and
                      not test_console.OUR_LINE.match(line)], [])
    demos = demonstrations.read_demonstrations(output)
    self.assertEqual(demos.env_id, 'MiniGrid-DoorKey-5x5-v0')
    self.assertLen(demos.episodes, 3)
    self.assertTrue(all(r > 0.5 for r in demos.returns), demos.returns)
    self.assertEqual(demos.metadata['seed'], 7)
    missing = subprocess.run(command, capture_output=True, text=True,
                             timeout=120, cwd=REPO, check=False)
    self.assertEqual(missing.returncode, 2)
    self.assertIn('Required bindings', missing.stderr)


if __name__ == '__main__':
  tf.test.main()
