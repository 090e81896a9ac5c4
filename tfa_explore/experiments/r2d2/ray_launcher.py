"""R2D2-family runs on a Ray cluster (`pip install tfa_explore[ray]`).

The three roles of `train/replay_server.py`, `train/learner.py` and
`train/actor.py` as Ray actors, started by one command on the head node
(`train/ray_launch.py`) with the run's gin file:

* the replay server, on the head node (its address must not move), with
  its tables checkpointed under root_dir/replay_checkpoints;
* the learner, on the head node (it writes root_dir);
* `r2d2.Settings.num_actors` actors, wherever the cluster has room.

Ray restarts a role whose process dies (`max_restarts`) and calls its
`run` again (`max_task_retries`): a restarted replay server restores its
tables, a restarted learner resumes from its checkpoint, a restarted actor
takes its incarnation from a `ray_restarts.RestartCounter` on the head
node and seeds its envs from it (the learner writes the count as
`Actors/restarts`); the others ride out the gap (`retry.ServerWait`).
Every role parses the same gin config, so they agree on every setting as
the binaries do. The Ray cluster's own failures (the head node, GCS) are
Ray's to handle, not ours.

Resources per role are gin settings (`r2d2.RayResources.*`); they are
Ray's logical resources, so a local cluster (no `--ray_address`) gets as
many logical CPUs as the roles ask for, and a run on a cluster that cannot
hold every role at once is refused before any role starts
(`check_resources`): Ray would otherwise wait for them without a word.

Every role's process logs as the binaries do (`console`): our lines, which
Ray forwards to the launching terminal with the role's name in front.
"""

import dataclasses
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
from tfa_explore.process import console
from tfa_explore.process import ray_restarts
from tfa_explore.experiments.r2d2 import actor as actor_lib
from tfa_explore.experiments.r2d2 import builder as builder_lib
from tfa_explore.experiments.r2d2 import launcher
from tfa_explore.experiments.r2d2 import learner as learner_lib
from tfa_explore.experiments.r2d2 import settings as settings_lib


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


@gin.configurable(module='r2d2')
@dataclasses.dataclass(frozen=True)
class RayResources:
  """What each role asks Ray for, and how often Ray may restart it.

  Attributes:
    actor_num_cpus: logical CPUs per actor (`Settings.envs_per_actor`
      envs and one policy).
    learner_num_cpus: logical CPUs of the learner.
    learner_num_gpus: GPUs of the learner.
    replay_server_num_cpus: logical CPUs of the Reverb server.
    max_restarts: restarts Ray grants each role (-1: no limit).
  """
  actor_num_cpus: float = 1.0
  learner_num_cpus: float = 1.0
  learner_num_gpus: float = 0.0
  replay_server_num_cpus: float = 1.0
  max_restarts: int = -1


def check_resources(settings: settings_lib.Settings,
                    resources: RayResources,
                    cluster: Dict[str, float],
                    head_node: Dict[str, float]) -> None:
  """Raises ConfigError unless the cluster can run every role at once.

  Args:
    settings: the run's settings (`num_actors`).
    resources: what each role asks for.
    cluster: `ray.cluster_resources()`, the whole cluster's totals.
    head_node: the head node's totals (the server and the learner run
      there).
  """
  fix = ('lower r2d2.Settings.num_actors or the r2d2.RayResources '
         'requests, or start Ray with more logical CPUs (ray start '
         '--num-cpus=N: they may exceed the cores)')
  head_cpus, head_gpus = head_node.get('CPU', 0.0), head_node.get('GPU', 0.0)
  cluster_cpus = cluster.get('CPU', 0.0)
  on_head = resources.replay_server_num_cpus + resources.learner_num_cpus
  needed = on_head + settings.num_actors * resources.actor_num_cpus
  if head_cpus < on_head:
    raise errors.ConfigError(
        f'The Ray head node has {head_cpus:g} CPUs; the replay server and '
        f'the learner need {on_head:g} there '
        f'(r2d2.RayResources.replay_server_num_cpus = '
        f'{resources.replay_server_num_cpus:g}, learner_num_cpus = '
        f'{resources.learner_num_cpus:g}): {fix}.')
  if cluster_cpus < needed:
    raise errors.ConfigError(
        f'The Ray cluster has {cluster_cpus:g} CPUs; this run needs '
        f'{needed:g} (replay server {resources.replay_server_num_cpus:g} + '
        f'learner {resources.learner_num_cpus:g} + {settings.num_actors} '
        f'actors x {resources.actor_num_cpus:g}), and Ray would wait for '
        f'them without a word: {fix}.')
  if head_gpus < resources.learner_num_gpus:
    raise errors.ConfigError(
        f'r2d2.RayResources.learner_num_gpus = '
        f'{resources.learner_num_gpus:g}, but the Ray head node has '
        f'{head_gpus:g} GPUs.')


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


def _settings_from(config_str: str):
  # The config string starts with the gin file's imports, which register
  # every configurable it names.
  gin.parse_config(config_str)
  return settings_lib.from_gin()


class _RayActors:
  """What the learner asks of an actor pool (`launcher.ActorPool`), for
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

  def __init__(self, config_str: str):
    # Our records reach the console at INFO (progress lines), also with
    # --verbose, which skips `console.quiet_worker`.
    logging.set_verbosity(logging.INFO)
    self.settings = _settings_from(config_str)

  def pid(self) -> int:
    return os.getpid()


class ReplayServerRole(_Role):

  def __init__(self, config_str: str, port: int, checkpoint_dir: str):
    super().__init__(config_str)
    self._server = builder_lib.Builder(self.settings).make_replay_server(
        port, checkpoint_dir)

  def ready(self) -> bool:
    return True


class LearnerRole(_Role):

  def run(self, replay_server: str, root_dir: str,
          restart_counter) -> Dict[str, float]:
    return learner_lib.run_learner(self.settings, replay_server, root_dir,
                                   actors=_RayActors(restart_counter))


class ActorRole(_Role):

  def run(self, task: int, replay_server: str, root_dir: str,
          restart_counter) -> int:
    # A restarted actor (same task, so the same epsilons) seeds its envs
    # from its incarnation, as `launcher.ActorPool`'s do.
    incarnation = 0
    if ray.get_runtime_context().was_current_actor_reconstructed:
      incarnation = ray.get(restart_counter.restarted.remote(task))
    return actor_lib.run_actor(self.settings, task, replay_server, root_dir,
                               incarnation=incarnation)


def _head_node_strategy():
  """Pins a role to this (the head) node."""
  return scheduling_strategies.NodeAffinitySchedulingStrategy(
      node_id=ray.get_runtime_context().get_node_id(), soft=False)


def train_eval(root_dir: str, ray_address: Optional[str] = None,
               settings: Optional[settings_lib.Settings] = None,
               resources: Optional[RayResources] = None,
               verbose: bool = False) -> Dict[str, float]:
  """Runs the gin-configured R2D2/R2D3 experiment on a Ray cluster.

  Args:
    root_dir: run directory on the head node (the learner's `run_kit`
      layout, replay_checkpoints/, actors/<i>/ of the actors on this node).
    ray_address: the cluster to join ('auto', 'ray://host:port'); None
      starts a local one with the logical CPUs the roles ask for.
    settings: the run's `Settings`; None builds them from gin.
    resources: `RayResources`; None builds them from gin.
    verbose: the roles log everything TensorFlow and Ray do, as the
      binaries' --verbose.

  Returns:
    The learner's final evaluation.

  Raises:
    errors.ConfigError: the cluster cannot hold every role at once.
  """
  settings = settings or settings_lib.from_gin()
  resources = resources or RayResources()
  builder_lib.Builder(settings).check_setup()
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
    check_resources(settings, resources, ray.cluster_resources(),
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
  server = ray.remote(ReplayServerRole).options(
      name='r2d2_replay_server', num_cpus=resources.replay_server_num_cpus,
      scheduling_strategy=_head_node_strategy(), **restarts).remote(
          config_str, port,
          os.path.join(root_dir, launcher.REPLAY_CHECKPOINT_DIR))
  counter = ray.remote(ray_restarts.RestartCounter).options(
      name='r2d2_restart_counter', num_cpus=0,
      scheduling_strategy=_head_node_strategy()).remote(settings.num_actors)
  actors = []
  learner = None
  try:
    ray.get(server.ready.remote())
    logging.info('Ray: replay server at %s; starting the learner and %d '
                 'actors.', address, settings.num_actors)
    learner = ray.remote(LearnerRole).options(
        name='r2d2_learner', num_cpus=resources.learner_num_cpus,
        num_gpus=resources.learner_num_gpus,
        scheduling_strategy=_head_node_strategy(), **restarts).remote(
            config_str)
    actors = [
        ray.remote(ActorRole).options(
            name=f'r2d2_actor_{task}', num_cpus=resources.actor_num_cpus,
            **restarts).remote(config_str)
        for task in range(settings.num_actors)]
    actor_runs = [actor.run.remote(task, address, root_dir, counter)
                  for task, actor in enumerate(actors)]
    result = ray.get(learner.run.remote(address, root_dir, counter))
    # Actors stop once they read `finished` at their next weight pull.
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
