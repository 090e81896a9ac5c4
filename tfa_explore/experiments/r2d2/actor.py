"""An R2D2 actor: steps a batch of envs, writes sequences, reports progress.

Env k of actor i is the paper's actor j = i * envs_per_actor + k: seed
`seed + j`, epsilon_j = 0.4^(1 + 7 j / (N - 1)) with N = num_actors *
envs_per_actor. One policy call and at most one priority computation serve
all of an actor's envs per step.

Env step counting. An actor counts its env steps (auto-reset steps
excluded) and sends the increments as progress reports; the learner sums
them, so a restarted actor keeps the count and the learner alone decides
that the run is over. The actor sees `finished` at its next weight pull.
Steps an actor took but had not reported when it died are not counted
(at most `actor_update_period` per actor).
"""

import os
import time

from absl import logging
import numpy as np
import reverb
import tensorflow as tf
from tf_agents.policies import py_tf_eager_policy
from tf_agents.trajectories import trajectory as trajectory_lib

from tfa_explore.environments import batched
from tfa_explore.environments import run_context
from tfa_explore.experiments.distributed import actor_pool
from tfa_explore.experiments.r2d2 import builder as builder_lib
from tfa_explore.process import retry
from tfa_explore.replay import sequence_storage
from tfa_explore.replay import tables

ACTOR_DIR = actor_pool.ACTOR_DIR
ACTOR = 'Actor'

# An actor told to stop by its launcher flushes and reports for at most
# this long: what it holds is not part of the saved run.
_TOLD_TO_STOP_SECONDS = 2.0


class _ProgressWriter:
  """Sends this actor's reports to `PROGRESS_TABLE`."""

  def __init__(self, client: reverb.Client, task: int):
    self._task = task
    self._writer = client.trajectory_writer(num_keep_alive_refs=1)

  def report(self, env_steps, slot=-1, episode_return=0.0, episode_length=0,
             stopped=False):
    tables.insert_whole(self._writer, builder_lib.PROGRESS_TABLE,
                        builder_lib.progress_report(
                            self._task, env_steps, slot, episode_return,
                            episode_length, stopped))

  def close(self, timeout_ms: int) -> None:
    try:
      self._writer.flush(timeout_ms=timeout_ms)
    finally:
      self._writer.close()


class _ActorSummaries:
  """Actor/{EnvironmentStepsPerSecond, SequencesPerSecond} under actors/<i>."""

  def __init__(self, root_dir, task):
    self._writer = None
    if root_dir:
      self._writer = tf.summary.create_file_writer(
          os.path.join(root_dir, ACTOR_DIR, str(task)), flush_millis=10_000)
    self._time = time.time()
    self._steps = 0
    self._items = 0

  def write(self, total_steps, items):
    if self._writer is None:
      return
    now = time.time()
    elapsed = max(now - self._time, 1e-9)
    with self._writer.as_default(step=total_steps):
      tf.summary.scalar(f'{ACTOR}/EnvironmentStepsPerSecond',
                        (total_steps - self._steps) / elapsed)
      tf.summary.scalar(f'{ACTOR}/SequencesPerSecond',
                        (items - self._items) / elapsed)
    self._time, self._steps, self._items = now, total_steps, items

  def close(self):
    if self._writer is not None:
      self._writer.close()


class _ReplayLink:
  """What an actor holds on the server: writers and the weights' reader.

  Rebuilt after the server was lost: a Reverb writer that saw its server
  die is broken, and the sequences it held are gone.
  """

  def __init__(self, builder, replay_server, agent, shared_state, task,
               num_envs):
    self.client = reverb.Client(replay_server)
    builder.check_server(self.client, shared_state)
    self.variables = builder_lib.SharedVariables(replay_server, shared_state)
    self.replay_writer = builder.sequence_writer(self.client, agent, num_envs)
    self.progress = _ProgressWriter(self.client, task)

  def abandon(self) -> None:
    for writer in (self.replay_writer, self.progress):
      try:
        writer.close(timeout_ms=100)
      except Exception:  # pylint: disable=broad-except
        pass  # the server is gone: nothing to flush to


def run_actor(settings, task, replay_server, root_dir=None, stop_event=None,
              incarnation=0):
  """Runs actor `task` until the learner finishes (or `stop_event` is set).

  A replay server that stops answering is waited for (`retry.ServerWait`,
  at most `replay_retry_seconds`); then the actor rebuilds its writers,
  resets its envs (the sequences under way were lost with the server) and
  carries on with the weights it has until the learner publishes again.

  Args:
    settings: `Settings`.
    task: actor index i in [0, num_actors).
    replay_server: 'host:port' of the Reverb server.
    root_dir: if set, actor summaries go to root_dir/actors/<task>.
    stop_event: optional `threading.Event` to stop early.
    incarnation: how many times this task was restarted; env j is seeded
      `seed + j + incarnation * num_slots` (`actor_pool.actor_envs`), so a
      restarted actor does not replay its predecessor's episodes.

  Returns:
    Env steps this actor took (all its environments).

  Raises:
    errors.ConfigError: `task` out of range, or the task runs already.
  """
  actor_pool.check_task(settings, task)
  with actor_pool.actor_lock(root_dir, task):
    return _run_actor(settings, task, replay_server, root_dir, stop_event,
                      incarnation)


def _run_actor(settings, task, replay_server, root_dir, stop_event,
               incarnation):
  """`run_actor`'s loop, once the task is known to be this one's."""
  builder = builder_lib.Builder(settings)
  num_envs = settings.envs_per_actor
  envs = actor_pool.actor_envs(task, settings.num_actors, num_envs,
                               settings.seed, incarnation)
  # Envs that keep their own logs (bsuite) write them under the run's
  # directory, on whichever machine the actor runs.
  run_context.set_run_dir(root_dir)
  # No tf.random.set_seed here: actor threads share the process's global
  # seed with the learner. Envs are seeded per slot.
  env = batched.make_batched_env(settings.env_loader, num_envs, envs.seed)
  _, agent = builder.make_agent(env=env)
  shared_state = builder_lib.SharedState(agent)
  server_wait = retry.ServerWait(
      replay_server, f'actor {task}', settings.replay_retry_seconds,
      should_stop=lambda: stop_event is not None and stop_event.is_set())
  server_wait.wait_until_reachable()
  link = _ReplayLink(builder, replay_server, agent, shared_state, task,
                     num_envs)
  collect_policy = builder.actor_policy(agent, task)
  epsilons = agent.actor_epsilons(task, settings.num_actors, num_envs)
  logging.info('Actor %d (%d envs, epsilons %s%s) waiting for the learner\'s '
               'weights.', task, num_envs,
               ', '.join(f'{e:.5f}' for e in epsilons),
               f', restart {incarnation}' if incarnation else '')
  link.variables.pull()  # Blocks until the learner's first push.

  policy = py_tf_eager_policy.PyTFEagerPolicy(
      collect_policy, use_tf_function=True, batch_time_steps=False)
  actor_summaries = _ActorSummaries(root_dir, task)

  total_steps = 0
  unreported_steps = 0
  steps_at_update = 0
  items_before_link = 0
  episode_returns = np.zeros(num_envs, np.float64)
  episode_lengths = np.zeros(num_envs, np.int64)
  time_step = env.reset()
  policy_state = policy.get_initial_state(num_envs)
  try:
    while not bool(shared_state.finished.numpy()):
      if stop_event is not None and stop_event.is_set():
        break
      try:
        action_step = policy.action(time_step, policy_state)
        next_time_step = env.step(action_step.action)
        # The step after LAST is a reset, not an env step.
        active = ~np.asarray(time_step.is_last())
        num_active = int(active.sum())
        total_steps += num_active
        unreported_steps += num_active
        episode_lengths += active
        episode_returns += np.where(active, next_time_step.reward, 0.0)
        link.replay_writer(trajectory_lib.from_transition(
            time_step, action_step, next_time_step))
        for k in np.flatnonzero(active &
                                np.asarray(next_time_step.is_last())):
          link.progress.report(unreported_steps, envs.first + k,
                               episode_returns[k], episode_lengths[k])
          unreported_steps = 0
          episode_returns[k], episode_lengths[k] = 0.0, 0
        time_step = next_time_step
        policy_state = action_step.state
        if total_steps - steps_at_update >= settings.actor_update_period:
          if unreported_steps:
            link.progress.report(unreported_steps)
            unreported_steps = 0
          link.variables.pull()
          actor_summaries.write(
              total_steps,
              items_before_link + link.replay_writer.num_items_written)
          steps_at_update = total_steps
      except Exception as e:  # pylint: disable=broad-except
        if not server_wait.wait(e):  # raises unless the server was lost
          break
        items_before_link += link.replay_writer.num_items_written
        link.abandon()
        link = _ReplayLink(builder, replay_server, agent, shared_state, task,
                           num_envs)
        # The episodes under way lost their sequences: start new ones.
        time_step = env.reset()
        policy_state = policy.get_initial_state(num_envs)
        episode_returns[:], episode_lengths[:] = 0.0, 0
  finally:
    # Told to stop by the launcher (a stopped run, or actors that outlived
    # the learner's wait for them): the run was saved without what this
    # actor still holds and the server is going, so a short deadline; the
    # launcher then joins this thread before the process exits.
    told_to_stop = stop_event is not None and stop_event.is_set()
    _stop(task, link.replay_writer, link.progress, unreported_steps,
          _TOLD_TO_STOP_SECONDS if told_to_stop
          else settings.shutdown_timeout_seconds)
    actor_summaries.close()
    env.close()
  logging.info('Actor %d stopped after %d env steps.', task, total_steps)
  return total_steps


def _stop(task, replay_writer, progress, unreported_steps, timeout_seconds):
  """Flushes the sequences, then reports the stop.

  The sequences first: the learner keeps resetting the agent table
  (releasing its rate limiter) until every actor reported its stop. One
  deadline (`timeout_seconds`) covers all of this actor's envs.
  """
  deadline = sequence_storage.Deadline(timeout_seconds * 1000)
  try:
    replay_writer.close(timeout_ms=deadline.remaining_ms())
  except Exception as e:  # pylint: disable=broad-except
    logging.info('Actor %d dropped its last sequences: %s', task, e)
  try:
    progress.report(unreported_steps, stopped=True)
    progress.close(timeout_ms=min(deadline.remaining_ms(), 5_000))
  except Exception as e:  # pylint: disable=broad-except
    # The server may be gone already (single machine: stopped after the
    # learner); the learner stops waiting after its shutdown timeout.
    logging.info('Actor %d could not report its stop: %s', task, e)
