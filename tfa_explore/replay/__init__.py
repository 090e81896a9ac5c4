"""Reverb replay for tfa_explore agents.

R2D2: `tables.make_prioritized_table` (prioritized table with a
SampleToInsertRatio rate limiter and the agent's signature),
`sequence_writer.R2D2SequenceObserver` (actor side: padded, overlapping,
episode-aligned sequences with initial priorities), `dataset.replay_dataset`
(learner side: sequences with their sample info) and
`priority_updater.PriorityUpdater` (priorities back to Reverb by key).
"""
