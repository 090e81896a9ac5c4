"""Ending the binaries a whole-run test starts."""

import subprocess


def end(process: subprocess.Popen) -> None:
  """Kills `process` if it still runs, reaps it and closes its stderr pipe:
  what a test's `finally` owes a binary it read from, however it failed."""
  if process.poll() is None:
    process.kill()
  process.wait()
  if process.stderr is not None:
    process.stderr.close()
