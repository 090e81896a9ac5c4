"""Counts the restarts of Ray-hosted actor roles (`r2d2.ray_launcher`).

A module of its own, importing nothing heavy: the Ray worker that hosts
the counter imports only this, not TensorFlow, so on a busy machine it
starts in seconds and does not hold up the roles' start (Ray starts as
many workers at once as the cluster has CPUs).
"""


class RestartCounter:
  """Counts each actor task's restarts; lives on the head node."""

  def __init__(self, num_actors: int):
    self._restarts = [0] * num_actors

  def restarted(self, task: int) -> int:
    """Counts a restart of `task`; its incarnation (1 for the first)."""
    self._restarts[task] += 1
    return self._restarts[task]

  def total(self) -> int:
    return sum(self._restarts)
