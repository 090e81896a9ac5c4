"""`Roles`: the three roles of a distributed family, for its launchers.

A family's run is a Reverb replay server, `num_actors` actors and one
learner, each built from the same gin config. The launchers
(`launch.py`, `ray_launch.py`) start, watch and restart them without
knowing the family: they ask its `Roles` object, and read the few
settings every family has (`DistributedSettings`).
"""

import abc
from typing import Any, Dict, Optional, Protocol

from tfa_explore.experiments.distributed import ray_resources


class DistributedSettings(Protocol):
  """The settings the launchers read, whatever the family.

  `r2d2.Settings` has them as fields; the on-policy family's
  `on_policy_distributed.Setup` as properties of its two dataclasses.
  """

  num_actors: int  # actor threads, processes or Ray actors
  actor_mode: str  # 'thread' or 'process' (one machine)
  max_actor_restarts: int  # one machine: restarts before the run stops
  shutdown_timeout_seconds: float  # a finished run's wait for its actors
  replay_retry_seconds: float  # a lost server's wait, before giving up

  def setting(self, name: str) -> str:
    """The gin binding of field `name`, for messages."""


class Roles(abc.ABC):
  """One family's roles; a stateless object, pickled by reference.

  A role that is one of the family's functions, with the method's
  arguments, is that function: `run_actor = staticmethod(actor.run_actor)`.

  Attributes:
    name: the family's short name, in front of thread, process and Ray
      actor names ('r2d2' -> 'r2d2_actor_0').
  """

  name: str = ''

  @abc.abstractmethod
  def settings_from_gin(self) -> DistributedSettings:
    """The run's settings from the parsed gin config.

    Raises:
      errors.ConfigError: a bad or missing value, naming its binding.
    """

  @abc.abstractmethod
  def check_setup(self, settings) -> None:
    """What must hold before any role starts (one env built and closed).

    Raises:
      errors.ConfigError: naming the setting at fault.
    """

  @abc.abstractmethod
  def make_replay_server(self, settings, port: Optional[int] = None,
                         checkpoint_dir: Optional[str] = None):
    """The run's Reverb server (port None: a free one); with
    `checkpoint_dir` it restores the tables checkpointed there, if the
    family checkpoints its replay."""

  @abc.abstractmethod
  def run_learner(self, settings, replay_server: str, root_dir: str,
                  actors: Optional[Any] = None) -> Dict[str, float]:
    """Trains until the budget is spent; the final evaluation.

    `actors`: this machine's pool (`actor_pool.ActorPool`), whose
    `check()` the learner calls while it waits for the actors and whose
    `restarts` it writes as `Actors/restarts`; None when another
    process supervises them.
    """

  @abc.abstractmethod
  def run_actor(self, settings, task: int, replay_server: str,
                root_dir: Optional[str] = None, stop_event=None,
                incarnation: int = 0) -> int:
    """Runs actor `task` until the learner finishes or `stop_event` is
    set; `incarnation` (its restarts) seeds its envs anew. Its env steps.
    """

  @abc.abstractmethod
  def ray_resources(self) -> ray_resources.RayResources:
    """What each role asks Ray for, from gin (the family's binding)."""
