"""What each role asks Ray for, and whether a cluster can hold them all.

Without Ray: a family registers its own subclass with gin
(`r2d2.RayResources`, `on_policy.RayResources`), so its gin files bind
it in the family's namespace, and `check_resources` is pure.
"""

import dataclasses
from typing import Dict

from tfa_explore import errors


@dataclasses.dataclass(frozen=True)
class RayResources:
  """What each role asks Ray for, and how often Ray may restart it.

  Attributes:
    actor_num_cpus: logical CPUs per actor (its batch of envs and one
      policy).
    learner_num_cpus: logical CPUs of the learner.
    learner_num_gpus: GPUs of the learner.
    replay_server_num_cpus: logical CPUs of the Reverb server.
    max_restarts: restarts Ray grants each role (-1: no limit).
  """
  # The subclass's gin name, in messages.
  gin_name = 'RayResources'

  actor_num_cpus: float = 1.0
  learner_num_cpus: float = 1.0
  learner_num_gpus: float = 0.0
  replay_server_num_cpus: float = 1.0
  max_restarts: int = -1


def check_resources(settings, resources: RayResources,
                    cluster: Dict[str, float],
                    head_node: Dict[str, float]) -> None:
  """Raises ConfigError unless the cluster can run every role at once.

  Ray would otherwise wait for the missing resources without a word.

  Args:
    settings: the run's settings (`num_actors`, `setting()`:
      `roles.DistributedSettings`).
    resources: what each role asks for.
    cluster: `ray.cluster_resources()`, the whole cluster's totals.
    head_node: the head node's totals (the server and the learner run
      there).
  """
  name = resources.gin_name
  fix = (f'lower {settings.setting("num_actors")} or the {name} '
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
        f'({name}.replay_server_num_cpus = '
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
        f'{name}.learner_num_gpus = {resources.learner_num_gpus:g}, but the '
        f'Ray head node has {head_gpus:g} GPUs.')
