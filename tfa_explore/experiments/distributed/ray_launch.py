"""Any distributed family's roles on a Ray cluster (needs Ray).

The three roles of `train/replay_server.py`, `train/learner.py` and
`train/actor.py` as Ray actors, started by one command on the head node
(`train/ray_launch.py`) with the run's gin file; the family is the bound
experiment's (`launch.bound_roles`):

* the replay server, on the head node (its address must not move), with
  its tables checkpointed under root_dir/replay_checkpoints when the
  family checkpoints them;
* the learner, on the head node (it writes root_dir);
* `num_actors` actors, wherever the cluster has room.

Ray restarts a role whose process dies (`max_restarts`) and calls its
`run` again (`max_task_retries`): a restarted replay server restores what
its family keeps, a restarted learner resumes from its checkpoint, a
restarted actor takes its incarnation from a
`ray_restarts.RestartCounter` on the head node and seeds its envs from it
(the learner writes the count as `Actors/restarts`); the others ride out
the gap (`retry.ServerWait`). Every role parses the same gin config, so
they agree on every setting as the binaries do. The Ray cluster's own
failures (the head node, GCS) are Ray's to handle, not ours.

Resources per role are gin settings (the family's `RayResources`); they
are Ray's logical resources, so a local cluster (no `--ray_address`) gets
as many logical CPUs as the roles ask for, and a run on a cluster that
cannot hold every role at once is refused before any role starts
(`ray_resources.check_resources`): Ray would otherwise wait for them
without a word.

Every role's process logs as the binaries do (`console`): our lines, which
Ray forwards to the launching terminal with the role's name in front.
"""

import logging as python_logging
import math
import os
import random
import sys
import time
from typing import Any, Dict, Optional, Sequence

from absl import logging
import gin
import portpicker
import ray
from ray.util import scheduling_strategies

from tfa_explore import errors
from tfa_explore.experiments.distributed import launch
from tfa_explore.experiments.distributed import ray_resources
from tfa_explore.experiments.distributed import roles as roles_lib
from tfa_explore.process import console
from tfa_explore.process import ray_restarts


# The replay server's port is picked by the driver and bound seconds later
# in a Ray worker (and again after a restart there). The kernel's ephemeral
# ports are also the local ports of Ray's many client connections, and
# Ray's workers listen on 10002-19999 by default: a port from either can
# be taken before the server binds it. So the pick comes from between.
_RAY_WORKER_PORTS_END = 20000
_EPHEMERAL_RANGE_FILE = '/proc/sys/net/ipv4/ip_local_port_range'


def _ephemeral_ports_start(path: str = _EPHEMERAL_RANGE_FILE) -> int:
  """The first port of the kernel's ephemeral range (Linux: 32768)."""
  try:
    with open(path) as f:
      return int(f.read().split()[0])
  except (OSError, ValueError, IndexError):
    return 32768


def pick_server_port(ephemeral_start: Optional[int] = None) -> int:
  """A free port for the replay server, clear of Ray's and the kernel's.

  Args:
    ephemeral_start: the kernel's first ephemeral port; None reads it.

  Returns:
    A port in [20000, ephemeral_start) that is free now, or
    `portpicker.pick_unused_port()` when that gap is empty or full.
  """
  if ephemeral_start is None:
    ephemeral_start = _ephemeral_ports_start()
  if ephemeral_start > _RAY_WORKER_PORTS_END:
    for _ in range(100):
      port = random.randrange(_RAY_WORKER_PORTS_END, ephemeral_start)
      if portpicker.is_port_free(port):
        return port
  return portpicker.pick_unused_port()


def plain_role_prefixes(streams: Sequence[Any] = ()) -> None:
  """No colour codes in front of the roles' lines unless on a terminal.

  Ray's driver prints each line a role logs with the role in front,
  coloured with ANSI escape codes even when the output is a file or a
  pipe (`RAY_COLOR_PREFIX=0` turns them off; Ray reads it at every line).
  An explicit setting in the user's environment wins.

  Args:
    streams: where the driver prints (default: stdout and stderr).
  """
  streams = streams or (sys.stdout, sys.stderr)
  if not all(getattr(stream, 'isatty', lambda: False)()
             for stream in streams):
    os.environ.setdefault('RAY_COLOR_PREFIX', '0')


def _head_node_resources() -> Dict[str, float]:
  node_id = ray.get_runtime_context().get_node_id()
  for node in ray.nodes():
    if node['NodeID'] == node_id:
      return node['Resources']
  return {}


class _RayActors:
  """What the learner asks of an actor pool (`actor_pool.ActorPool`), for
  actors Ray restarts: the restart count only."""

  def __init__(self, counter):
    self._counter = counter

  @property
  def restarts(self) -> int:
    return ray.get(self._counter.total.remote())

  def check(self) -> None:
    pass


class _Role:
  """A Ray actor that runs one role from the run's gin config."""

  def __init__(self, roles: roles_lib.Roles, config_str: str):
    # Our records reach the console at INFO (progress lines), also with
    # --verbose, which skips `console.quiet_worker`.
    logging.set_verbosity(logging.INFO)
    # The config string starts with the gin file's imports, which register
    # every configurable it names.
    gin.parse_config(config_str)
    self.roles = roles
    self.settings = roles.settings_from_gin()

  def pid(self) -> int:
    return os.getpid()


class ReplayServerRole(_Role):

  def __init__(self, roles, config_str: str, port: int, checkpoint_dir: str):
    super().__init__(roles, config_str)
    self._server = roles.make_replay_server(self.settings, port,
                                            checkpoint_dir)

  def ready(self) -> bool:
    return True


class LearnerRole(_Role):

  def run(self, replay_server: str, root_dir: str,
          restart_counter) -> Dict[str, float]:
    return self.roles.run_learner(self.settings, replay_server, root_dir,
                                  actors=_RayActors(restart_counter))


class ActorRole(_Role):

  def run(self, task: int, replay_server: str, root_dir: str,
          restart_counter) -> int:
    # A restarted actor (same task) seeds its envs from its incarnation,
    # as `actor_pool.ActorPool`'s do.
    incarnation = 0
    if ray.get_runtime_context().was_current_actor_reconstructed:
      incarnation = ray.get(restart_counter.restarted.remote(task))
    return self.roles.run_actor(self.settings, task, replay_server, root_dir,
                                incarnation=incarnation)


def _head_node_strategy():
  """Pins a role to this (the head) node."""
  return scheduling_strategies.NodeAffinitySchedulingStrategy(
      node_id=ray.get_runtime_context().get_node_id(), soft=False)


def train_eval(root_dir: str, ray_address: Optional[str] = None,
               settings=None,
               resources: Optional[ray_resources.RayResources] = None,
               verbose: bool = False,
               roles: Optional[roles_lib.Roles] = None) -> Dict[str, float]:
  """Runs the gin-configured experiment's roles on a Ray cluster.

  Args:
    root_dir: run directory on the head node (the learner's `run_kit`
      layout, replay_checkpoints/, actors/<i>/ of the actors on this node).
    ray_address: the cluster to join ('auto', 'ray://host:port'); None
      starts a local one with the logical CPUs the roles ask for.
    settings: the run's settings; None builds them from gin.
    resources: `RayResources`; None builds the family's from gin.
    verbose: the roles log everything TensorFlow and Ray do, as the
      binaries' --verbose.
    roles: the family's `Roles`; None: the bound experiment's.

  Returns:
    The learner's final evaluation.

  Raises:
    errors.ConfigError: the experiment runs in one process only, a bad
      setting, or the cluster cannot hold every role at once.
  """
  roles = roles or launch.bound_roles()
  settings = settings or roles.settings_from_gin()
  resources = resources or roles.ray_resources()
  roles.check_setup(settings)
  config_str = gin.config_str()
  started_here = not ray.is_initialized()
  plain_role_prefixes()
  if started_here:
    # Every worker quiets its console before it imports a role's module.
    quiet = {} if verbose else dict(
        logging_level=python_logging.ERROR,
        runtime_env={'worker_process_setup_hook': console.quiet_worker})
    if ray_address is None:
      num_cpus = math.ceil(resources.replay_server_num_cpus +
                           resources.learner_num_cpus +
                           settings.num_actors * resources.actor_num_cpus)
      # Ray starts its workers at nice 15: on a busy machine the roles
      # then get almost no CPU (a replay server took 9 minutes to start
      # at load 10). A training job's roles run at the normal priority.
      ray.init(num_cpus=num_cpus, include_dashboard=False,
               _system_config={'worker_niceness': 0}, **quiet)
    else:
      ray.init(address=ray_address, **quiet)
  try:
    ray_resources.check_resources(settings, resources,
                                  ray.cluster_resources(),
                                  _head_node_resources())
  except errors.ConfigError:
    if started_here:
      ray.shutdown()
    raise
  root_dir = os.path.abspath(root_dir)
  os.makedirs(root_dir, exist_ok=True)
  port = pick_server_port()
  address = f'{ray.util.get_node_ip_address()}:{port}'
  # max_concurrency 2: `pid` answers while `run` runs (fault injection).
  restarts = dict(max_restarts=resources.max_restarts, max_task_retries=-1,
                  max_concurrency=2)
  name = roles.name
  server = ray.remote(ReplayServerRole).options(
      name=f'{name}_replay_server', num_cpus=resources.replay_server_num_cpus,
      scheduling_strategy=_head_node_strategy(), **restarts).remote(
          roles, config_str, port,
          os.path.join(root_dir, launch.REPLAY_CHECKPOINT_DIR))
  counter = ray.remote(ray_restarts.RestartCounter).options(
      name=f'{name}_restart_counter', num_cpus=0,
      scheduling_strategy=_head_node_strategy()).remote(settings.num_actors)
  actors = []
  learner = None
  try:
    ray.get(server.ready.remote())
    logging.info('Ray: replay server at %s; starting the learner and %d '
                 'actors.', address, settings.num_actors)
    learner = ray.remote(LearnerRole).options(
        name=f'{name}_learner', num_cpus=resources.learner_num_cpus,
        num_gpus=resources.learner_num_gpus,
        scheduling_strategy=_head_node_strategy(), **restarts).remote(
            roles, config_str)
    actors = [
        ray.remote(ActorRole).options(
            name=f'{name}_actor_{task}', num_cpus=resources.actor_num_cpus,
            **restarts).remote(roles, config_str)
        for task in range(settings.num_actors)]
    actor_runs = [actor.run.remote(task, address, root_dir, counter)
                  for task, actor in enumerate(actors)]
    result = ray.get(learner.run.remote(address, root_dir, counter))
    # Actors stop once they read `finished` from the learner.
    _, pending = ray.wait(actor_runs, num_returns=len(actor_runs),
                          timeout=settings.shutdown_timeout_seconds)
    if pending:
      logging.warning('%d actors did not stop within %.0f s; killed.',
                      len(pending), settings.shutdown_timeout_seconds)
    return result
  finally:
    for handle in actors + [learner, server, counter]:
      if handle is not None:
        ray.kill(handle, no_restart=True)
    if started_here:
      time.sleep(0.5)  # let the kills land before the cluster goes
      ray.shutdown()
