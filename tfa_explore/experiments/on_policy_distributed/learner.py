"""The distributed on-policy learner: the one-process loop's training on
rollouts the actors collected with its latest weights.

One iteration: publish the weights (a new `publication`), wait until
every actor's rollout of that publication is in (`builder.RolloutReader`:
others are dropped and counted), put them side by side as the
`[num_envs, rollout_length]` batch, feed it to the collect metrics as
the one-process collector does step by step, then `on_policy.TrainLoop`:
the same `agent.train` (both value heads, intrinsic rewards, the epoch
and minibatch updates, the normaliser updates), summaries, progress
line, evaluation and checkpoints. The checkpoint is the one-process
loop's (`on_policy.make_checkpointer`), so a learner resumes from it.

The synchronous scheme is RLlib's for PPO (every worker samples with the
weights just broadcast, the update waits for all): PPO's importance
ratios and clipping assume the batch comes from the policy that is
updated. Acme's PPO and TF-Agents' distributed examples let actors run
ahead on older weights instead; docs/distributed.md says why we do not.
"""

import time
from typing import Dict

from absl import logging
import reverb
import tensorflow as tf
from tf_agents.utils import common

from tfa_explore.environments import batched
from tfa_explore.experiments import on_policy
from tfa_explore.experiments import run_kit
from tfa_explore.experiments.distributed import variables as variables_lib
from tfa_explore.experiments.on_policy_distributed import builder
from tfa_explore.process import retry
from tfa_explore.process import run_lock
from tfa_explore.process import stop_signals
from tfa_explore.replay import tables
from tfa_explore.utils import summaries

REPLAY = 'Replay'
ACTORS = 'Actors'

# How often the learner looks for rollouts while it waits for a batch (a
# look at the server's table sizes).
_POLL_SECONDS = 0.02


def observe_rollout(observers, experience) -> None:
  """Calls each observer on every step of a `[B, T]` batch, in time order,
  as the one-process collector does while it collects."""
  num_steps = tf.nest.flatten(experience)[0].shape[1]
  for t in range(num_steps):
    transition = tf.nest.map_structure(lambda x: x[:, t], experience)  # pylint: disable=cell-var-from-loop
    for observer in observers:
      observer(transition)


class Learner:
  """The learner of one run; `run()` trains until the budget is spent."""

  def __init__(self, setup, replay_server: str, root_dir: str,
               actors=None):
    """Builds the agent, the run directory and the replay side; resumes.

    Args:
      setup: `settings.Setup`.
      replay_server: 'host:port' of the Reverb server.
      root_dir: run directory (`run_kit` layout); resumes from its latest
        checkpoint.
      actors: optional pool of this machine's actors
        (`actor_pool.ActorPool`): `check()` while the learner waits for
        rollouts; `restarts` is written as `Actors/restarts`.
    """
    settings = setup.settings
    run_kit.set_tf_threads(settings.tf_threads)
    run_kit.set_global_seeds(settings.seed)
    self._setup = setup
    self._actors = actors
    self._stop = None
    self._server_wait = retry.ServerWait(
        replay_server, 'learner', setup.replay_retry_seconds,
        should_stop=lambda: self._stop is not None and self._stop.requested,
        setting=setup.setting('replay_retry_seconds'))
    self.train_step = common.create_variable('train_step', 0,
                                             dtype=tf.int64)
    # Before root_dir is touched: the agent's factories check its values.
    self.agent = builder.make_agent(setup, self.train_step)
    self.run_dir = run_kit.RunDirectory(root_dir)
    self._num_episodes = run_kit.episode_budget(
        settings.num_episodes, settings.env_loader, settings.seed,
        settings.num_env_steps, settings.setting('num_episodes'))
    self.metrics = on_policy.TrainMetrics(settings.num_envs,
                                          settings.return_buffer_episodes)
    self.env_steps = self.metrics.env_steps.environment_steps
    self._shared_state = builder.SharedState(self.agent)

    self._replay_server = replay_server
    self._client = reverb.Client(replay_server)
    self._server_wait.wait_until_reachable()
    builder.check_server(self._client, setup, self._shared_state)
    self._variables = variables_lib.SharedVariables(replay_server,
                                                    self._shared_state)
    self._reader = builder.RolloutReader(
        self._client,
        builder.rollout_spec(self.agent, setup.envs_per_actor,
                             settings.rollout_length),
        setup.num_actors)
    checkpointer = on_policy.make_checkpointer(
        settings, self.run_dir, self.agent, self.train_step, self.metrics)
    resumed = checkpointer.restore()
    self.run_dir.write_operative_config(step=self.env_steps)
    if not resumed and settings.pre_training_fn is not None:
      self._pre_train()
    self._loop = on_policy.TrainLoop(settings, self.run_dir, self.agent,
                                     self.metrics, checkpointer,
                                     self._num_episodes)
    self._observe = common.function(
        lambda experience: observe_rollout(self.metrics.as_list(),
                                           experience), autograph=False)
    self._publication = None
    self._wait_seconds = 0.0

  def _pre_train(self) -> None:
    """`pre_training_fn` on the batch's envs, built here (seeds `seed +
    j`, as in one process) and closed: the actors' own envs start from
    their reset."""
    settings = self._setup.settings
    env = batched.make_batched_env(settings.env_loader, settings.num_envs,
                                   settings.seed,
                                   parallel=settings.parallel_envs)
    try:
      settings.pre_training_fn(agent=self.agent, environment=env)
    finally:
      env.close()

  # --- named steps ----------------------------------------------------------

  def publish(self) -> None:
    """Pushes the weights with a new publication: the actors collect the
    next batch with them, and only that batch is trained on."""
    self._publication = self._shared_state.new_publication()
    self._variables.push()

  def wait_for_batch(self):
    """The next batch, once every actor's rollout of the latest
    publication is in; None if a stop signal came first."""
    start = time.monotonic()
    logged = start
    timeout = self._setup.distributed.rollout_timeout_seconds
    while not self._reader.take(self._publication):
      if self._stop is not None and self._stop.requested:
        return None
      if self._actors is not None:
        self._actors.check()
      if self._server_has_no_weights():
        # A server restarted between two calls: Reverb's client reconnects
        # without an error, and the new server has no weights, so no actor
        # would collect. The rollouts in flight are gone with the old one.
        logging.warning('The replay server holds no weights (restarted); '
                        'the learner publishes them again.')
        self.publish()
      if time.monotonic() - logged >= timeout:
        logging.info('No rollout for %.0f s from actors %s.',
                     time.monotonic() - start, list(self._reader.missing()))
        logged = time.monotonic()
      time.sleep(_POLL_SECONDS)
    self._wait_seconds = time.monotonic() - start
    return self._reader.batch()

  def write_summaries(self) -> None:
    """`Replay/` (dropped rollouts, the wait) and `Actors/restarts`."""
    env_steps = int(self.env_steps)
    with self.run_dir.train_writer.as_default(step=env_steps):
      summaries.scalars(REPLAY, {
          'stale_rollouts': self._reader.stale,
          'duplicate_rollouts': self._reader.duplicates,
          'rollout_wait_seconds': self._wait_seconds,
      }, step=env_steps)
      if self._actors is not None:
        tf.summary.scalar(f'{ACTORS}/restarts', self._actors.restarts)

  def finish(self, stop) -> Dict[str, float]:
    """Publishes `finished`, then the loop's end (final eval and
    checkpoint, or the save of a stopped run)."""
    if not stop.requested:
      self._shared_state.finished.assign(True)
      try:
        self.publish()
        # An actor waiting to write into a full queue is freed.
        self._client.reset(builder.ROLLOUTS_TABLE)
      except Exception as e:  # pylint: disable=broad-except
        logging.warning('Could not tell the actors the run finished: %s', e)
    return self._loop.end(stop)

  # --- the loop -------------------------------------------------------------

  def run(self) -> Dict[str, float]:
    """Trains until the budget is spent; the final evaluation."""
    with stop_signals.StopSignals() as stop:
      self._stop = stop
      try:
        self._with_server(self.publish)
        while self._loop.running(stop):
          self._with_server(self._iteration)
      finally:
        self._stop = None
    return self.finish(stop)

  def _iteration(self) -> None:
    metrics = self.metrics
    previous_steps = int(self.env_steps)
    previous_terminated = int(metrics.terminated.result())
    iteration_start = time.time()
    experience = self.wait_for_batch()
    if experience is None:
      return  # a stop signal: `run` saves
    self._observe(experience)
    self._loop.train(experience, previous_steps, previous_terminated,
                     iteration_start)
    # Before the evaluation and checkpoint: the actors collect meanwhile.
    self.publish()
    self.write_summaries()
    self._loop.iteration_done(previous_steps)

  def _with_server(self, step) -> None:
    """`step()`; a lost server is waited for (else the error is raised),
    then the weights are published again: a restarted server has none,
    and the rollouts in flight are gone.

    A server restarted within a call answers at once, and the call fails
    with an error of its own (a push: "Error when confirming that all
    items written"): a server that answers without the weights is that
    case, once; the same error again is raised.
    """
    restarted = False
    while True:
      try:
        step()
        return
      except Exception as e:  # pylint: disable=broad-except
        if (not restarted and not self._server_wait.is_server_fault(e) and
            self._server_has_no_weights()):
          restarted = True
          logging.warning('The replay server restarted under a call (%s); '
                          'the learner publishes its weights again.',
                          type(e).__name__)
        elif not self._server_wait.wait(e):
          return  # a stop signal
        step = self.publish

  def _server_has_no_weights(self) -> bool:
    # A fresh client: the learner's own may still hold the connection to
    # the server that died, and fail on it once more (a broken pipe).
    try:
      return not tables.table_sizes(reverb.Client(
          self._replay_server))[variables_lib.VARIABLES_TABLE]
    except Exception:  # pylint: disable=broad-except
      return False


def run_learner(setup, replay_server, root_dir, actors=None
                ) -> Dict[str, float]:
  """`Learner(...).run()`: the final evaluation dict."""
  with run_lock.RunLock(root_dir):
    return Learner(setup, replay_server, root_dir, actors).run()
