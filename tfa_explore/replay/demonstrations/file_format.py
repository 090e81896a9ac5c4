"""Demonstration episodes and their file format: write, read, validate.

Episodes. A `DemoEpisode` of n transitions holds the n + 1 time steps
s_0 (FIRST) .. s_n (LAST) (`observation`, `step_type`, `reward`,
`discount`, where `reward[t]`/`discount[t]` arrive with s_t as in TF-Agents
time steps, so `reward[0] = 0`) and the n actions a_0 .. a_{n-1}. Its return
is `sum(reward[1:])`.

File format (version 1), little endian:

    offset 0   magic  b'TFADEMO\\0'                        8 bytes
           8   format version, uint32                     4 bytes
          12   header length H, uint32                    4 bytes
          16   CRC32 of the header bytes, uint32          4 bytes
          20   header: UTF-8 JSON                         H bytes
      20 + H   episode records, back to back

The header names the env id, the time step and action specs (every leaf:
path, shape, dtype, bounds: `specs.specs_to_json`), the episode count and,
per episode, its record's offset (from the start of the records), length,
CRC32, number of transitions and return, plus free-form `metadata` (e.g.
the source). A record is an `.npz` (no pickles) with the arrays
`step_type`, `reward`, `discount`, `action` and `observation`
(`observation/<path>` for nested observations).

Robustness. `DemonstrationWriter` streams records to a temporary file next
to the destination and, on `close()`, writes header + records to a second
temporary file, fsyncs and renames it into place: a crash leaves either no
file or the previous one, never a partial file. The reader trusts nothing:
a short file names the byte offset where data is missing, a checksum
mismatch names the header or the episode and its byte range, arrays are
checked against the header's specs (field named), and the header's specs
against the agent's (`specs.check_specs`, field named). Nothing is skipped
silently: any bad episode fails the whole read.
"""

import dataclasses
import io
import json
import os
import struct
import tempfile
import zlib
from typing import Any, Dict, List

import numpy as np
import tensorflow as tf
from tf_agents.specs import tensor_spec
from tf_agents.trajectories import time_step as ts

from tfa_explore.replay.demonstrations import specs as specs_lib

MAGIC = b'TFADEMO\0'
FORMAT_VERSION = 1
_PREAMBLE = struct.Struct('<8sIII')  # magic, version, header length, CRC32.
PREAMBLE_SIZE = _PREAMBLE.size  # 20 bytes.


class DemonstrationFileError(ValueError):
  """A demonstration file is truncated, corrupt or inconsistent."""


@dataclasses.dataclass
class DemoEpisode:
  """One episode of n transitions; see the module docstring."""
  observation: Any  # Nest of [n + 1, ...] arrays.
  step_type: np.ndarray  # [n + 1] int32: FIRST, MID..., LAST.
  reward: np.ndarray  # [n + 1] float32; reward[0] = 0.
  discount: np.ndarray  # [n + 1] float32.
  action: np.ndarray  # [n].

  @property
  def num_transitions(self) -> int:
    return int(len(self.action))

  @property
  def episode_return(self) -> float:
    return float(np.sum(self.reward[1:], dtype=np.float64))


@dataclasses.dataclass
class Demonstrations:
  """The contents of a demonstration file."""
  env_id: str
  episodes: List[DemoEpisode]
  time_step_spec: Any
  action_spec: Any
  metadata: Dict[str, Any]

  @property
  def returns(self) -> List[float]:
    return [episode.episode_return for episode in self.episodes]


# --- episodes <-> arrays ----------------------------------------------------


def _check_episode_arrays(arrays, specs, where):
  """Checks a record's arrays against the header specs; names the field."""
  missing = sorted(set(specs) - set(arrays))
  extra = sorted(set(arrays) - set(specs))
  if missing or extra:
    raise DemonstrationFileError(
        f'{where}: arrays missing {missing}, unexpected arrays {extra}.')
  num_steps = len(arrays['step_type'])
  if num_steps < 2:
    raise DemonstrationFileError(
        f'{where}: an episode needs at least 2 time steps, got {num_steps}.')
  for path, spec in specs.items():
    array = arrays[path]
    steps = num_steps - 1 if path.startswith('action') else num_steps
    shape = [steps] + list(spec['shape'])
    if list(array.shape) != shape or array.dtype.name != spec['dtype']:
      raise DemonstrationFileError(
          f'{where}: field {path!r} is {array.dtype.name}{list(array.shape)}, '
          f'expected {spec["dtype"]}{shape}.')
    if 'minimum' in spec and array.size and (
        np.any(array < np.asarray(spec['minimum'])) or
        np.any(array > np.asarray(spec['maximum']))):
      raise DemonstrationFileError(
          f'{where}: field {path!r} has values outside '
          f'[{spec["minimum"]}, {spec["maximum"]}].')
  step_type = arrays['step_type']
  expected_types = np.full(num_steps, ts.StepType.MID)
  expected_types[0], expected_types[-1] = ts.StepType.FIRST, ts.StepType.LAST
  if not np.array_equal(step_type, expected_types):
    raise DemonstrationFileError(
        f'{where}: field \'step_type\' must be FIRST, MID..., LAST; got '
        f'{step_type.tolist()}.')


def _episode_arrays(episode, time_step_spec, action_spec):
  """{field path: array} of an episode, cast to the specs' dtypes."""
  fields = specs_lib.spec_fields(time_step_spec, action_spec)
  values = dict(specs_lib.leaves_with_paths(episode.observation,
                                            'observation'))
  values.update(step_type=episode.step_type, reward=episode.reward,
                discount=episode.discount)
  values.update(specs_lib.leaves_with_paths(episode.action, 'action'))
  arrays = {}
  for path, spec in fields.items():
    if path not in values:
      raise specs_lib.DemonstrationSpecError(
          f'Episode has no field {path!r} of the specs.')
    arrays[path] = np.asarray(values[path]).astype(
        tf.as_dtype(spec.dtype).as_numpy_dtype, copy=False)
  return arrays


def _episode_from_arrays(arrays, time_step_spec, action_spec):
  observation_paths = [
      path for path, _ in specs_lib.leaves_with_paths(
          tensor_spec.from_spec(time_step_spec).observation, 'observation')]
  observation = tf.nest.pack_sequence_as(
      tensor_spec.from_spec(time_step_spec).observation,
      [arrays[path] for path in observation_paths])
  action_paths = [path for path, _ in specs_lib.leaves_with_paths(
      tensor_spec.from_spec(action_spec), 'action')]
  action = tf.nest.pack_sequence_as(
      tensor_spec.from_spec(action_spec),
      [arrays[path] for path in action_paths])
  return DemoEpisode(observation=observation, step_type=arrays['step_type'],
                     reward=arrays['reward'], discount=arrays['discount'],
                     action=action)


# --- writing ----------------------------------------------------------------


class DemonstrationWriter:
  """Writes a demonstration file atomically; use as a context manager.

  `add_episode` checks and appends one episode; `close` (or leaving the
  `with` block normally) writes the file. Leaving the block with an
  exception, or `abort`, removes the temporary files and leaves `path`
  untouched.
  """

  def __init__(self, path, env_id, time_step_spec, action_spec,
               metadata=None):
    self._path = os.fspath(path)
    self._env_id = str(env_id)
    self._time_step_spec = tensor_spec.from_spec(time_step_spec)
    self._action_spec = tensor_spec.from_spec(action_spec)
    self._specs = specs_lib.specs_to_json(self._time_step_spec,
                                          self._action_spec)
    self._metadata = dict(metadata or {})
    directory = os.path.dirname(os.path.abspath(self._path))
    os.makedirs(directory, exist_ok=True)
    self._directory = directory
    fd, self._records_path = tempfile.mkstemp(
        dir=directory, prefix=f'.{os.path.basename(self._path)}.records-')
    self._records = os.fdopen(fd, 'wb')
    self._episodes = []
    self._offset = 0
    self._closed = False

  def __enter__(self):
    return self

  def __exit__(self, exc_type, exc_value, traceback):
    if exc_type is None:
      self.close()
    else:
      self.abort()
    return False

  @property
  def num_episodes(self):
    return len(self._episodes)

  def add_episode(self, episode: DemoEpisode):
    """Checks `episode` against the specs and appends its record."""
    if self._closed:
      raise ValueError('DemonstrationWriter is closed.')
    arrays = _episode_arrays(episode, self._time_step_spec, self._action_spec)
    _check_episode_arrays(arrays, self._specs,
                          f'Episode {len(self._episodes)} being written')
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    record = buffer.getvalue()
    self._records.write(record)
    self._episodes.append({
        'offset': self._offset,
        'length': len(record),
        'crc32': zlib.crc32(record),
        'num_transitions': episode.num_transitions,
        'return': episode.episode_return,
    })
    self._offset += len(record)

  def close(self):
    """Writes header + records to a temp file and renames it to `path`."""
    if self._closed:
      return
    self._records.close()
    header = json.dumps({
        'env_id': self._env_id,
        'specs': self._specs,
        'num_episodes': len(self._episodes),
        'episodes': self._episodes,
        'metadata': self._metadata,
    }, sort_keys=True).encode('utf-8')
    fd, tmp_path = tempfile.mkstemp(
        dir=self._directory, prefix=f'.{os.path.basename(self._path)}.tmp-')
    try:
      with os.fdopen(fd, 'wb') as f:
        f.write(_PREAMBLE.pack(MAGIC, FORMAT_VERSION, len(header),
                               zlib.crc32(header)))
        f.write(header)
        with open(self._records_path, 'rb') as records:
          while True:
            chunk = records.read(1 << 20)
            if not chunk:
              break
            f.write(chunk)
        f.flush()
        os.fsync(f.fileno())
      # mkstemp creates 0600 files; demonstrations are shared data.
      os.chmod(tmp_path, 0o644)
      os.replace(tmp_path, self._path)
    except BaseException:
      if os.path.exists(tmp_path):
        os.remove(tmp_path)
      raise
    finally:
      self._closed = True
      if os.path.exists(self._records_path):
        os.remove(self._records_path)

  def abort(self):
    """Discards everything written; `path` keeps its previous content."""
    if self._closed:
      return
    self._closed = True
    self._records.close()
    if os.path.exists(self._records_path):
      os.remove(self._records_path)


def write_demonstrations(path, env_id, time_step_spec, action_spec, episodes,
                         metadata=None):
  """Writes `episodes` to `path` (atomically); see `DemonstrationWriter`."""
  with DemonstrationWriter(path, env_id, time_step_spec, action_spec,
                           metadata) as writer:
    for episode in episodes:
      writer.add_episode(episode)


# --- reading ----------------------------------------------------------------


def _read_exactly(f, size, offset, what, path):
  data = f.read(size)
  if len(data) != size:
    raise DemonstrationFileError(
        f'{path} is truncated: {what} needs bytes {offset}..{offset + size} '
        f'but the file ends at byte {offset + len(data)}.')
  return data


def read_header(path):
  """(header dict, byte offset of the first record) of a demo file."""
  path = os.fspath(path)
  with open(path, 'rb') as f:
    preamble = _read_exactly(f, PREAMBLE_SIZE, 0, 'the preamble', path)
    magic, version, header_length, header_crc = _PREAMBLE.unpack(preamble)
    if magic != MAGIC:
      raise DemonstrationFileError(
          f'{path} is not a demonstration file: bytes 0..8 are {magic!r}, '
          f'expected {MAGIC!r}.')
    if version != FORMAT_VERSION:
      raise DemonstrationFileError(
          f'{path} has format version {version}; this reader knows version '
          f'{FORMAT_VERSION}.')
    header_bytes = _read_exactly(f, header_length, PREAMBLE_SIZE,
                                 'the header', path)
  if zlib.crc32(header_bytes) != header_crc:
    raise DemonstrationFileError(
        f'{path}: header checksum mismatch (bytes {PREAMBLE_SIZE}..'
        f'{PREAMBLE_SIZE + header_length}); the file is corrupt.')
  try:
    header = json.loads(header_bytes.decode('utf-8'))
  except (UnicodeDecodeError, json.JSONDecodeError) as error:
    raise DemonstrationFileError(
        f'{path}: header is not valid JSON ({error}).') from error
  for key in ('env_id', 'specs', 'num_episodes', 'episodes', 'metadata'):
    if key not in header:
      raise DemonstrationFileError(f'{path}: header has no {key!r}.')
  if header['num_episodes'] != len(header['episodes']):
    raise DemonstrationFileError(
        f'{path}: header says {header["num_episodes"]} episodes but lists '
        f'{len(header["episodes"])}.')
  return header, PREAMBLE_SIZE + header_length


def _open_checked(path, time_step_spec, action_spec):
  """(header, records start, time_step_spec, action_spec) of a file.

  The specs are the given ones, checked against the header's, or (None,
  None) rebuilt from the header.
  """
  header, records_start = read_header(path)
  specs = header['specs']
  if (time_step_spec is None) != (action_spec is None):
    raise ValueError('Pass both time_step_spec and action_spec, or neither.')
  if time_step_spec is not None:
    specs_lib.check_specs(specs, time_step_spec, action_spec, source=path)
    return (header, records_start, tensor_spec.from_spec(time_step_spec),
            tensor_spec.from_spec(action_spec))
  action_paths = [p for p in specs if p.split('/')[0] == 'action']
  if action_paths != ['action']:
    raise DemonstrationFileError(
        'Only single-array actions are supported; the file has '
        f'{action_paths}.')
  return (header, records_start) + specs_lib.specs_from_json(specs)


def _read_episodes(path, header, records_start, time_step_spec, action_spec):
  """Yields every episode, checked, then checks the file ends after them.

  One episode in memory at a time, so `check_demonstrations` can go
  through a large file.
  """
  specs = header['specs']
  file_size = os.path.getsize(path)
  expected_end = records_start + sum(e['length'] for e in header['episodes'])
  with open(path, 'rb') as f:
    for index, entry in enumerate(header['episodes']):
      start = records_start + entry['offset']
      end = start + entry['length']
      where = f'{path}: episode {index} (bytes {start}..{end})'
      f.seek(start)
      record = _read_exactly(f, entry['length'], start, f'episode {index}',
                             path)
      if zlib.crc32(record) != entry['crc32']:
        raise DemonstrationFileError(
            f'{where}: CRC32 checksum mismatch; the record is corrupt.')
      try:
        with np.load(io.BytesIO(record), allow_pickle=False) as npz:
          arrays = {name: npz[name] for name in npz.files}
      except (ValueError, OSError, zlib.error) as error:
        raise DemonstrationFileError(
            f'{where}: record is not a readable npz ({error}).') from error
      _check_episode_arrays(arrays, specs, where)
      episode = _episode_from_arrays(arrays, time_step_spec, action_spec)
      if episode.num_transitions != entry['num_transitions'] or not np.isclose(
          episode.episode_return, entry['return'], rtol=1e-6, atol=1e-6):
        raise DemonstrationFileError(
            f'{where}: {episode.num_transitions} transitions with return '
            f'{episode.episode_return} but the header lists '
            f'{entry["num_transitions"]} and {entry["return"]}.')
      yield episode
  if file_size != expected_end:
    raise DemonstrationFileError(
        f'{path}: the header accounts for {expected_end} bytes but the file '
        f'has {file_size}; unexpected trailing data from byte {expected_end}.')


def read_demonstrations(path, time_step_spec=None, action_spec=None):
  """Reads and checks every episode of a demonstration file.

  Args:
    path: the file.
    time_step_spec, action_spec: the agent's specs. If given, the file's
      specs must match them (`DemonstrationSpecError` naming the field) and
      observations come back in their nest structure.

  Returns:
    `Demonstrations`.

  Raises:
    DemonstrationFileError: truncated (names the byte offset), corrupt
      (names the header or episode and its bytes) or inconsistent file.
    DemonstrationSpecError: specs differ from the given ones.
  """
  path = os.fspath(path)
  header, records_start, time_step_spec, action_spec = _open_checked(
      path, time_step_spec, action_spec)
  episodes = list(_read_episodes(path, header, records_start, time_step_spec,
                                 action_spec))
  return Demonstrations(env_id=header['env_id'], episodes=episodes,
                        time_step_spec=time_step_spec,
                        action_spec=action_spec,
                        metadata=header['metadata'])


def check_demonstrations(path, time_step_spec=None, action_spec=None):
  """Checks a whole file as `read_demonstrations` does, keeping nothing.

  For a check before a run starts: every episode is read and checked, one
  at a time.

  Returns:
    The header (see `read_header`).

  Raises:
    The errors of `read_demonstrations`.
  """
  path = os.fspath(path)
  header, records_start, time_step_spec, action_spec = _open_checked(
      path, time_step_spec, action_spec)
  for _ in _read_episodes(path, header, records_start, time_step_spec,
                          action_spec):
    pass
  return header
