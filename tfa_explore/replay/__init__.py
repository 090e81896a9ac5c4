"""Reverb replay for tfa_explore agents.

R2D2, in the order a TF-Agents actor/learner pipeline uses them
(examples/r2d2_custom_env.py puts them together):

* `make_prioritized_table` (`tables`): a prioritized table with a
  `SampleToInsertRatio` rate limiter and the agent's signature.
* `R2D2SequenceObserver` (`sequence_writer`): the actor's observer, in
  place of `ReverbAddTrajectoryObserver`: padded, overlapping,
  episode-aligned sequences (cut by `sequence_cutter`, the one pure
  cutter) with their stored recurrent state and initial priorities;
  `BatchedSequenceWriter` does the same for a batch of envs, storing
  them as its `SequenceStorage` says (`sequence_storage`: `StepStream`,
  `SequenceCopies`), and `write_stream` writes a cut episode.
* `replay_dataset` (`dataset`): the learner's dataset over a stock
  `ReverbReplayBuffer`: `(PrioritizedSequences, sample_info)` pairs, as
  the stock `Learner` unpacks them; `sampled_batches` gives the same
  pairs from a table's address, in one sample stream.
* `PriorityUpdater` (`priority_updater`): the stock `Learner`'s
  `after_train_strategy_step_fn`; the learner's priorities back to Reverb
  by key.

R2D3: `demonstrations` (file format, recording, demo episodes as
sequences), `mixed_dataset` (demonstration table, the agent/demo mix,
priorities back to each table) and `success_copies` (the actors' copies
of successful episodes); import those modules by name.
"""

from tfa_explore.replay.dataset import replay_dataset
from tfa_explore.replay.dataset import sampled_batches
from tfa_explore.replay.priority_updater import PriorityUpdater
from tfa_explore.replay.sequence_storage import SequenceCopies
from tfa_explore.replay.sequence_storage import SequenceStorage
from tfa_explore.replay.sequence_storage import StepStream
from tfa_explore.replay.sequence_writer import BatchedSequenceWriter
from tfa_explore.replay.sequence_writer import R2D2SequenceObserver
from tfa_explore.replay.sequence_writer import write_stream
from tfa_explore.replay.tables import make_prioritized_table
