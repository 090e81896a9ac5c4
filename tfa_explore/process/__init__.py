"""The process plumbing of a run, apart from what it trains.

`console` (what a binary prints), `run_lock` (one run per root_dir),
`stop_signals` (SIGINT/SIGTERM to a saved stop), `retry` (riding out a
restarted replay server) and `ray_restarts` (the Ray actors' restart
count). `experiments/` keeps the loops and factories and uses these; they
import nothing of the agents, experiments or environments, so a Ray
worker or a subprocess can load one without TensorFlow's start-up where
the module itself needs none.
"""
