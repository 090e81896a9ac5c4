"""The distributed on-policy run's pieces: agent, tables, what moves.

The server has two tables:

* `variables.VARIABLES_TABLE`: one item, the learner's latest
  `SharedState`: the collect policy's variables (its networks and
  observation normaliser), the intrinsic reward's `acting_variables`
  (RND: its observation normaliser), the train step, `finished`, and
  `publication`, a fresh random id per push;
* `ROLLOUTS_TABLE`: a queue of whole rollouts, one item per actor and
  publication: `[envs_per_actor, rollout_length]` steps of the collect
  policy's trajectory, with the actor's task and the `publication` (and
  train step) of the weights that collected it.

A rollout is on-policy for the learner iff its `publication` is the one
the learner pushed last: the learner trains on nothing else.
"""

import random
from typing import Any, Dict, Optional, Tuple

from absl import logging
import numpy as np
import reverb
import tensorflow as tf

from tfa_explore.experiments import on_policy
from tfa_explore.experiments import run_kit
from tfa_explore.experiments.distributed import variables as variables_lib
from tfa_explore.replay import tables

ROLLOUTS_TABLE = 'rollouts'
# Rollouts the queue holds per actor before an actor's write waits: the
# learner drains it at every poll; a learner restart or an actor restart
# can leave an actor's rollout of an older publication in it.
_QUEUE_ROLLOUTS_PER_ACTOR = 4


def make_agent(setup, train_step: Optional[tf.Variable] = None, env=None):
  """The agent of `on_policy.Settings.agent_fn` on the env's specs.

  Without `env`, one env is built (seed `seed`) for its specs and closed.
  """
  settings = setup.settings
  time_step_spec, action_spec = run_kit.env_specs(settings,
                                                 env).tensor_specs()
  if train_step is None:
    train_step = tf.Variable(0, dtype=tf.int64, name='train_step')
  return on_policy.make_agent(settings, time_step_spec, action_spec,
                              train_step)


class SharedState(tf.Module):
  """What the learner publishes to the actors (module docstring)."""

  def __init__(self, agent):
    super().__init__(name='on_policy_shared_state')
    self.agent = agent
    self.finished = tf.Variable(False, name='finished')
    self.publication = tf.Variable(0, dtype=tf.int64, name='publication')

  def nest(self) -> Dict[str, Any]:
    nest = {
        'policy': list(self.agent.collect_policy.variables()),
        'train_step': self.agent.train_step_counter,
        'finished': self.finished,
        'publication': self.publication,
    }
    # The plain PPO agent has no intrinsic reward; a reward without acting
    # state adds no empty entry.
    intrinsic_reward = getattr(self.agent, 'intrinsic_reward', None)
    acting = list(intrinsic_reward.acting_variables
                  if intrinsic_reward is not None else ())
    if acting:
      nest['intrinsic_reward'] = acting
    return nest

  def new_publication(self) -> int:
    """A fresh id for the next push (never 0, the unpublished value)."""
    publication = random.SystemRandom().randrange(1, 2**63)
    self.publication.assign(publication)
    return publication


def rollout_spec(agent, envs_per_actor: int,
                 rollout_length: int) -> Dict[str, Any]:
  """The spec of one `ROLLOUTS_TABLE` item."""
  outer = [envs_per_actor, rollout_length]
  return {
      'trajectory': tf.nest.map_structure(
          lambda spec: tf.TensorSpec(outer + spec.shape.as_list(),
                                     spec.dtype),
          agent.collect_policy.trajectory_spec),
      'task': tf.TensorSpec((), tf.int64),
      'publication': tf.TensorSpec((), tf.int64),
      'train_step': tf.TensorSpec((), tf.int64),
  }


def make_tables(setup, agent):
  """The server's tables: the learner's variables, the rollout queue."""
  return [
      variables_lib.variables_table(SharedState(agent)),
      reverb.Table.queue(
          ROLLOUTS_TABLE,
          max_size=_QUEUE_ROLLOUTS_PER_ACTOR * setup.num_actors,
          signature=rollout_spec(agent, setup.envs_per_actor,
                                 setup.settings.rollout_length)),
  ]


def make_replay_server(setup, port: Optional[int] = None) -> reverb.Server:
  """A Reverb server with the run's tables (port None: any free one).

  Nothing in it outlives the iteration under way (rollouts of the
  current weights, the weights the learner publishes again after a
  restart), so it keeps no checkpoint.
  """
  # The agent is built only for its specs, but its weight initializers
  # are random ops: under op determinism they need a global seed.
  tf.random.set_seed(setup.settings.seed)
  agent = make_agent(setup)
  server, _ = tables.start_server(lambda: make_tables(setup, agent), port,
                                  None)
  logging.info('Reverb server on port %d with tables %s.', server.port,
               [variables_lib.VARIABLES_TABLE, ROLLOUTS_TABLE])
  return server


def check_server(client: reverb.Client, setup, shared_state) -> None:
  """Raises ValueError unless the server's tables fit this run's agent."""
  info = client.server_info(timeout=60)
  variables_lib.check_variables_table(info, shared_state)
  variables_lib.check_table(
      info, ROLLOUTS_TABLE,
      rollout_spec(shared_state.agent, setup.envs_per_actor,
                   setup.settings.rollout_length), 'rollouts')


class RolloutWriter:
  """An actor's writes to `ROLLOUTS_TABLE`: one item per rollout."""

  def __init__(self, client: reverb.Client, task: int):
    self._task = task
    self._writer = client.trajectory_writer(num_keep_alive_refs=1)

  def write(self, experience, publication: int, train_step: int) -> None:
    """Inserts `experience` ([E, T] tensors); returns once it is stored."""
    tables.insert_whole(self._writer, ROLLOUTS_TABLE, {
        'trajectory': tf.nest.map_structure(np.asarray, experience),
        'task': np.int64(self._task),
        'publication': np.int64(publication),
        'train_step': np.int64(train_step),
    })
    self._writer.flush()

  def close(self, timeout_ms: int) -> None:
    try:
      self._writer.flush(timeout_ms=timeout_ms)
    finally:
      self._writer.close()


class RolloutReader:
  """The learner's reads of `ROLLOUTS_TABLE`: a batch of one publication.

  `take(publication)` drains the queue: a rollout of `publication` is kept
  (one per actor task), any other is dropped and counted (`stale`: of
  other weights, e.g. pushed before a learner restart; `duplicates`: a
  second rollout of a task, from an actor restarted after it wrote).
  """

  def __init__(self, client: reverb.Client, item_spec, num_actors: int):
    self._client = client
    self._item_spec = item_spec
    self._num_actors = num_actors
    self._rollouts = {}
    self._publication = None
    self.stale = 0
    self.duplicates = 0

  def missing(self) -> Tuple[int, ...]:
    """The tasks whose rollout of the current publication is not in yet."""
    return tuple(task for task in range(self._num_actors)
                 if task not in self._rollouts)

  def take(self, publication: int) -> bool:
    """Reads what the queue holds; True once every task's rollout is in."""
    if publication != self._publication:
      self._rollouts, self._publication = {}, publication
    size = tables.table_sizes(self._client)[ROLLOUTS_TABLE]
    if size:
      stale_steps = set()
      for sample in self._client.sample(ROLLOUTS_TABLE, num_samples=size,
                                        emit_timesteps=False,
                                        unpack_as_table_signature=True):
        item = tf.nest.pack_sequence_as(self._item_spec,
                                        tf.nest.flatten(sample.data))
        task = int(item['task'])
        if int(item['publication']) != publication:
          self.stale += 1
          stale_steps.add(int(item['train_step']))
        elif task in self._rollouts:
          self.duplicates += 1
        else:
          self._rollouts[task] = item['trajectory']
      if stale_steps:
        logging.warning(
            'Dropped rollouts of earlier weights (of train steps %s), not '
            'trained on; %d stale rollouts so far.',
            ', '.join(f'{step:,}' for step in sorted(stale_steps)),
            self.stale)
    return not self.missing()

  def batch(self):
    """The `[num_envs, rollout_length]` batch, envs in task order."""
    rollouts = [self._rollouts[task] for task in range(self._num_actors)]
    self._rollouts = {}
    return tf.nest.map_structure(
        lambda *parts: tf.convert_to_tensor(np.concatenate(parts, axis=0)),
        *rollouts)
