"""Demonstrations for R2D3: a checked file format, recording, sequences.

By concern:

* `file_format`: `DemoEpisode`, the file format (magic, version, CRC'd
  JSON header, one `.npz` record per episode), `DemonstrationWriter` /
  `write_demonstrations` (atomic), `read_header` / `read_demonstrations`
  (every byte checked, errors name the offset, episode or field) and
  `check_demonstrations` (the same checks, keeping nothing).
* `specs`: the header's specs (`specs_to_json`) and `check_specs`
  against the agent's specs (`DemonstrationSpecError` naming the field).
* `recording`: the sources (`ScriptedExpertSource`, `SavedPolicySource`),
  `record_episode(s)` and the gin-configurable `collect` of
  `train/collect_demonstrations.py` (gin names `demonstrations.collect`,
  `demonstrations.scripted_expert`, `demonstrations.saved_policy`).
* `sequences`: demo episodes as the agent's own R2D2 sequences
  (`episode_trajectories`), cut by the actors' cutter
  (`replay.sequence_cutter`): `write_to_table`, `episode_sequences`,
  `count_sequences`, `sequences_dataset`.

Every public name is importable from this package, as from the single
module it replaces (`demonstrations.read_demonstrations`, ...); importing
it registers the gin names.
"""

from tfa_explore.replay.demonstrations.file_format import check_demonstrations
from tfa_explore.replay.demonstrations.file_format import DemoEpisode
from tfa_explore.replay.demonstrations.file_format import DemonstrationFileError
from tfa_explore.replay.demonstrations.file_format import Demonstrations
from tfa_explore.replay.demonstrations.file_format import DemonstrationWriter
from tfa_explore.replay.demonstrations.file_format import FORMAT_VERSION
from tfa_explore.replay.demonstrations.file_format import MAGIC
from tfa_explore.replay.demonstrations.file_format import PREAMBLE_SIZE
from tfa_explore.replay.demonstrations.file_format import read_demonstrations
from tfa_explore.replay.demonstrations.file_format import read_header
from tfa_explore.replay.demonstrations.file_format import write_demonstrations
from tfa_explore.replay.demonstrations.recording import collect
from tfa_explore.replay.demonstrations.recording import record_episode
from tfa_explore.replay.demonstrations.recording import record_episodes
from tfa_explore.replay.demonstrations.recording import saved_policy
from tfa_explore.replay.demonstrations.recording import SavedPolicySource
from tfa_explore.replay.demonstrations.recording import scripted_expert
from tfa_explore.replay.demonstrations.recording import ScriptedExpertSource
from tfa_explore.replay.demonstrations.sequences import count_sequences
from tfa_explore.replay.demonstrations.sequences import episode_sequences
from tfa_explore.replay.demonstrations.sequences import episode_stream
from tfa_explore.replay.demonstrations.sequences import episode_trajectories
from tfa_explore.replay.demonstrations.sequences import sequences_dataset
from tfa_explore.replay.demonstrations.sequences import write_to_table
from tfa_explore.replay.demonstrations.specs import check_specs
from tfa_explore.replay.demonstrations.specs import DemonstrationSpecError
from tfa_explore.replay.demonstrations.specs import specs_to_json
