"""The errors an experiment reports to the user, and how to recognise them.

Kept apart from `runner` (the binaries' gin handling) so that library code
such as the R2D3 replay strategy can raise a `ConfigError` without
importing the command-line layer.
"""

# Exit code of a binary whose configuration cannot run (absl uses 1 for
# crashes, argparse-style usage errors use 2).
CONFIG_ERROR_EXIT_CODE = 2


class ConfigError(Exception):
  """A gin configuration that cannot run: bad file, binding or value."""


def is_missing_binding(error: BaseException) -> bool:
  """Whether `error` is gin's complaint about an unbound `gin.REQUIRED`.

  Gin only notices a missing required binding when the configurable is
  called, and says so in a RuntimeError('Required bindings for ...'); this
  is the one place that reads its message.
  """
  return (isinstance(error, RuntimeError) and
          'Required bindings for' in str(error))
