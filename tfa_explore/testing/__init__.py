"""Helpers shared by tests.

`fake_envs`: tiny fake environments. `processes.end`: what a test owes a
binary it started. `r2d2`, `r2d3`: a test case, small
R2D2 / R2D3 agents, sequences and demonstration episodes (import them
explicitly; they build TensorFlow agents).
"""

from tfa_explore.testing import fake_envs
