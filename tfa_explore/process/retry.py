"""Riding out a replay server that died and is being restarted.

A killed Reverb server shows up in its clients as whatever call was under
way: a writer's `RuntimeError`, a dataset's `UnavailableError`, a
`DeadlineExceededError`. `ServerWait.wait(error)` decides whether the
error is the server being gone (a connection error, or the server not
answering now) and, if so, returns once it answers again, retrying with
back-off (1 s, 2 s, 4 s, ... at most 30 s) and logging each wait; any
other error is raised again. The caller then rebuilds what the server held
for it (an iterator, a writer) and carries on. Reverb's gRPC channels
reconnect by themselves to a server restarted on the same address.
"""

import time
from typing import Callable

from absl import logging
import reverb
import tensorflow as tf

# Errors that mean "the server is gone" whatever it answers now.
_CONNECTION_ERRORS = (tf.errors.UnavailableError,
                      tf.errors.DeadlineExceededError,
                      tf.errors.CancelledError,
                      reverb.errors.DeadlineExceededError,
                      ConnectionError)

FIRST_DELAY_SECONDS = 1.0
MAX_DELAY_SECONDS = 30.0


class ReplayServerLost(RuntimeError):
  """The replay server did not come back within the retry time."""


def reachable(address: str, timeout_seconds: float = 2.0) -> bool:
  """Whether the Reverb server at `address` answers within the timeout."""
  try:
    reverb.Client(address).server_info(timeout=max(int(timeout_seconds), 1))
    return True
  except Exception:  # pylint: disable=broad-except
    return False


class ServerWait:
  """Waits for a lost replay server; one per role (actor i, learner)."""

  def __init__(self, address: str, role: str, retry_seconds: float,
               should_stop: Callable[[], bool] = lambda: False,
               sleep: Callable[[float], None] = time.sleep,
               setting: str = 'r2d2.Settings.replay_retry_seconds'):
    """Creates the wait.

    Args:
      address: 'host:port' of the Reverb server.
      role: who waits, for the log lines ('learner', 'actor 3').
      retry_seconds: give up (`ReplayServerLost`) after this long.
      should_stop: polled between retries; True ends the wait early
        (returns False from `wait`), e.g. a launcher stopping its actors.
      sleep: `time.sleep` (tests pass a fake one).
      setting: the gin binding of `retry_seconds`, named when it gives up.
    """
    self._address = address
    self._role = role
    self._retry_seconds = retry_seconds
    self._should_stop = should_stop
    self._sleep = sleep
    self._setting = setting
    self.num_waits = 0

  def wait_until_reachable(self) -> bool:
    """Returns at once if the server answers, else waits as `wait` does."""
    if reachable(self._address):
      return True
    return self.wait(ConnectionError(
        f'no Reverb server at {self._address} yet'))

  def is_server_fault(self, error: BaseException) -> bool:
    return (isinstance(error, _CONNECTION_ERRORS) or
            not reachable(self._address))

  def wait(self, error: BaseException) -> bool:
    """Returns True once the server answers again (False: told to stop).

    Raises:
      error: if it is not the server being gone.
      ReplayServerLost: if the server does not answer within
        `retry_seconds`.
    """
    if not self.is_server_fault(error):
      raise error
    self.num_waits += 1
    start = time.monotonic()
    delay = FIRST_DELAY_SECONDS
    first_line = (f'{type(error).__name__}: '
                  f'{str(error).strip().splitlines()[0] if str(error) else ""}')
    while True:
      waited = time.monotonic() - start
      if waited >= self._retry_seconds:
        raise ReplayServerLost(
            f'The replay server at {self._address} did not answer for '
            f'{waited:.0f} s ({self._setting} = '
            f'{self._retry_seconds:.0f}); the {self._role} stops. Last '
            f'error: {first_line}') from error
      logging.warning(
          'Replay server %s unreachable (%s); the %s retries in %.0f s '
          '(%.0f s of at most %.0f s waited).', self._address, first_line,
          self._role, delay, waited, self._retry_seconds)
      self._sleep(delay)
      if self._should_stop():
        return False
      if reachable(self._address):
        logging.warning('Replay server %s answers again; the %s carries on '
                        'after %.0f s.', self._address, self._role,
                        time.monotonic() - start)
        return True
      delay = min(2 * delay, MAX_DELAY_SECONDS)
