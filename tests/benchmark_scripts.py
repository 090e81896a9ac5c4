"""Loads a script of benchmarks/ as a module, for the tests of it."""

import importlib.util
import os
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCHMARKS = os.path.join(REPO_ROOT, 'benchmarks')


def load(name: str):
  """benchmarks/<name>.py as a module; the scripts import their neighbours
  (`common`, ...) from benchmarks/, so it goes on sys.path first."""
  if BENCHMARKS not in sys.path:
    sys.path.insert(0, BENCHMARKS)
  spec = importlib.util.spec_from_file_location(
      name, os.path.join(BENCHMARKS, f'{name}.py'))
  module = importlib.util.module_from_spec(spec)
  # Scripts set environment variables for their own process (e.g.
  # TF_CPP_MIN_LOG_LEVEL before TensorFlow loads); in a test worker they
  # would reach every binary a later test starts, so they are undone.
  environ = dict(os.environ)
  try:
    spec.loader.exec_module(module)
  finally:
    os.environ.clear()
    os.environ.update(environ)
  return module
