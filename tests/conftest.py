"""One temporary folder per pytest process, removed when it ends.

Tests, the binaries they start and the libraries under them (TensorFlow's
autograph writes a file per converted function, Reverb a checkpoint folder
per server without one, absl's test folders) write to the system temp
directory, and a killed binary (the SIGKILL and signal tests) leaves its
files there. TMPDIR (read by Python's `tempfile` and inherited by the
subprocesses) points them all into this folder instead. It is short: Ray's
socket paths under it must stay within the 107-byte limit.
"""

import os
import shutil
import tempfile

_ENV = ('TMPDIR', 'TEST_TMPDIR')


def pytest_configure(config):
  del config
  folder = tempfile.mkdtemp(prefix='tfa_t_')
  _SAVED.update({name: os.environ.get(name) for name in _ENV})
  _SAVED['folder'] = folder
  _SAVED['tempdir'] = tempfile.tempdir
  for name in _ENV:
    os.environ[name] = folder
  tempfile.tempdir = folder


def pytest_unconfigure(config):
  del config
  folder = _SAVED.pop('folder', None)
  if folder is None:
    return
  tempfile.tempdir = _SAVED.pop('tempdir')
  for name in _ENV:
    value = _SAVED.pop(name)
    if value is None:
      os.environ.pop(name, None)
    else:
      os.environ[name] = value
  shutil.rmtree(folder, ignore_errors=True)


_SAVED = {}
