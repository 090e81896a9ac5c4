"""Reverb replay for tfa_explore agents.

R2D2: `tables.make_prioritized_table` (prioritized table with a
SampleToInsertRatio rate limiter and the agent's signature),
`sequence_cutter` (the one pure cutter of episodes into padded,
overlapping, episode-aligned sequences), `sequence_writer` (actor side:
`R2D2SequenceObserver` / `BatchedSequenceWriter` write the cut sequences
with initial priorities; `write_stream` writes a cut episode),
`dataset.replay_dataset` (learner side: sequences with their sample info)
and `priority_updater.PriorityUpdater` (priorities back to Reverb by key).

R2D3: `demonstrations` (file format, recording, demo episodes as
sequences) and `mixed_dataset` (demonstration table, the agent/demo mix,
priorities back to each table).
"""
