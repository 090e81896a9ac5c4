"""An on-policy actor: one whole rollout per set of weights the learner
publishes.

Actor i steps envs j = i * E + k (k < E = num_envs / num_actors) of the
learner's batch as one batched env, seeded `seed + j` as the loop in one
process seeds its env j (a restarted actor: `+ incarnation * num_envs`,
so it does not replay its predecessor's episodes): the layout of
`actor_pool.actor_envs`, R2D2's too. It waits for the learner's
weights, collects `rollout_length` steps with the collect policy
(`on_policy.RolloutCollector`, the one-process loop's collector: its
episodes run across rollouts), writes them as one item tagged with the
weights' `publication`, and waits for the next publication. It counts
nothing itself: the learner counts env steps and episodes from the
rollouts it trains on.
"""

import time

from absl import logging
import reverb

from tfa_explore.environments import batched
from tfa_explore.environments import run_context
from tfa_explore.experiments import on_policy
from tfa_explore.experiments import run_kit
from tfa_explore.experiments.distributed import actor_pool
from tfa_explore.experiments.distributed import variables as variables_lib
from tfa_explore.experiments.on_policy_distributed import builder
from tfa_explore.process import retry

# An actor told to stop by its launcher flushes for at most this long:
# what it holds is not part of the saved run.
_TOLD_TO_STOP_SECONDS = 2.0


class _ReplayLink:
  """What an actor holds on the server: the weights' reader and its
  rollout writer. Rebuilt after the server was lost: a Reverb writer that
  saw its server die is broken."""

  def __init__(self, setup, replay_server, shared_state, task):
    self.client = reverb.Client(replay_server)
    builder.check_server(self.client, setup, shared_state)
    self.variables = variables_lib.SharedVariables(replay_server,
                                                   shared_state)
    self.writer = builder.RolloutWriter(self.client, task)

  def close(self, timeout_ms: int) -> None:
    try:
      self.writer.close(timeout_ms=timeout_ms)
    except Exception:  # pylint: disable=broad-except
      pass  # the server is gone, or the learner no longer reads


def run_actor(setup, task, replay_server, root_dir=None, stop_event=None,
              incarnation=0) -> int:
  """Runs actor `task` until the learner finishes (or `stop_event` is set).

  A replay server that stops answering is waited for (`retry.ServerWait`);
  then the actor rebuilds its writer and starts new episodes (the rollout
  under way was lost with the server).

  Args:
    setup: `settings.Setup`.
    task: actor index i in [0, num_actors).
    replay_server: 'host:port' of the Reverb server.
    root_dir: if set, the task's lock goes to root_dir/actors/<task>, and
      envs that keep logs write them under root_dir.
    stop_event: optional `threading.Event` to stop early.
    incarnation: how many times this task was restarted.

  Returns:
    Env steps of the rollouts this actor wrote (auto-reset steps included).

  Raises:
    errors.ConfigError: `task` out of range, or the task runs already.
  """
  actor_pool.check_task(setup, task)
  with actor_pool.actor_lock(root_dir, task):
    return _run_actor(setup, task, replay_server, root_dir, stop_event,
                      incarnation)


def _run_actor(setup, task, replay_server, root_dir, stop_event,
               incarnation):
  """`run_actor`'s loop, once the task is known to be this one's."""
  settings = setup.settings
  # A process of its own sizes its pools as the learner's; an actor thread
  # finds them sized already.
  run_kit.set_tf_threads(settings.tf_threads)
  num_envs = setup.envs_per_actor
  envs = actor_pool.actor_envs(task, setup.num_actors, num_envs,
                               settings.seed, incarnation)
  run_context.set_run_dir(root_dir)
  # No tf.random.set_seed here: actor threads share the process's global
  # seed with the learner. Envs are seeded per env of the batch.
  env = batched.make_batched_env(settings.env_loader, num_envs, envs.seed,
                                 parallel=settings.parallel_envs)
  agent = builder.make_agent(setup, env=env)
  shared_state = builder.SharedState(agent)

  def stopping():
    return stop_event is not None and stop_event.is_set()

  server_wait = retry.ServerWait(
      replay_server, f'actor {task}', setup.replay_retry_seconds,
      should_stop=stopping, setting=setup.setting('replay_retry_seconds'))
  server_wait.wait_until_reachable()
  link = _ReplayLink(setup, replay_server, shared_state, task)
  collector = on_policy.RolloutCollector(env, agent.collect_policy,
                                         settings.rollout_length)
  logging.info('Actor %d (envs %d-%d of the batch%s) waiting for the '
               'learner\'s weights.', task, envs.first,
               envs.first + num_envs - 1,
               f', restart {incarnation}' if incarnation else '')
  poll_seconds = setup.distributed.actor_poll_seconds
  pushes_seen = None
  publication_collected = None
  rollouts = 0
  # A server restarted within a call answers at once, and the call fails
  # with an error of its own: such an error is taken for a restart once;
  # the same error right after the new link is raised.
  relinked = False
  try:
    while not stopping():
      try:
        pushes = variables_lib.num_pushes(link.client)
        if pushes in (0, pushes_seen):
          time.sleep(poll_seconds)
          continue
        link.variables.pull()
        pushes_seen = pushes
        if bool(shared_state.finished.numpy()):
          break
        publication = int(shared_state.publication.numpy())
        if publication == publication_collected:
          continue
        experience = collector.collect()
        link.writer.write(experience, publication,
                          int(agent.train_step_counter.numpy()))
        publication_collected = publication
        rollouts += 1
        relinked = False
      except Exception as e:  # pylint: disable=broad-except
        if not relinked and not server_wait.is_server_fault(e):
          logging.warning('Actor %d: a call to the replay server failed '
                          '(%s); it starts a new link and new episodes.',
                          task, type(e).__name__)
        elif not server_wait.wait(e):  # raises unless the server was lost
          break
        relinked = True
        link.close(timeout_ms=100)
        link = _ReplayLink(setup, replay_server, shared_state, task)
        # The rollout under way was lost: start new episodes.
        collector.restart()
        pushes_seen = None
  finally:
    link.close(timeout_ms=int(1000 * (
        _TOLD_TO_STOP_SECONDS if stopping()
        else setup.shutdown_timeout_seconds)))
    env.close()
  logging.info('Actor %d stopped after %d rollouts.', task, rollouts)
  return rollouts * num_envs * settings.rollout_length
