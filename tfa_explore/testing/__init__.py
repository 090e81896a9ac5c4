"""Helpers shared by tests: tiny fake environments."""

from tfa_explore.testing import fake_envs
