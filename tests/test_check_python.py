"""The Makefile's interpreter check: one clear line, never a pip backtrace."""

import os
import stat
import subprocess
import sys

import pytest

_SCRIPT = os.path.join(os.path.dirname(__file__), '..', 'tools',
                       'check_python.sh')


def _fake_python(tmp_path, version):
  path = tmp_path / f'python{version}'
  major, minor = version.split('.')
  path.write_text(
      '#!/bin/sh\n'
      f'if [ "$2" = "import venv, ensurepip" ]; then exit 0; fi\n'
      f'echo {major}.{minor}\n')
  path.chmod(path.stat().st_mode | stat.S_IEXEC)
  return str(path)


def _check(python):
  return subprocess.run(['bash', _SCRIPT, python], capture_output=True,
                        text=True, check=False)


@pytest.mark.parametrize('version', ['3.12', '3.8'])
def test_wrong_version_is_one_line_naming_it(tmp_path, version):
  result = _check(_fake_python(tmp_path, version))
  assert result.returncode == 1
  lines = result.stderr.strip().splitlines()
  assert len(lines) == 1
  assert f'Python {version}' in lines[0]
  assert '3.9-3.11' in lines[0]


def test_missing_interpreter_is_named(tmp_path):
  result = _check(str(tmp_path / 'no-such-python'))
  assert result.returncode == 1
  assert 'no-such-python' in result.stderr
  assert 'was not found' in result.stderr


def test_supported_version_passes(tmp_path):
  assert _check(_fake_python(tmp_path, '3.11')).returncode == 0
  assert _check(sys.executable).returncode == 0
