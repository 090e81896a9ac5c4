"""The R2D2 learner: trains on replayed sequences until the env step budget.

One iteration (`Learner.run`): a few learner steps on the replay
strategy's batches (new priorities written back by key), then the actors'
progress reports are read (env steps, episodes), and the weights pushed,
summaries written, the progress line logged, the greedy policy evaluated
and the run checkpointed when each is due. The learner alone decides the
end (`env_steps >= num_env_steps`): it publishes `finished` with the
weights, evaluates and checkpoints a last time, and releases the actors.

The run directory, checkpoints, exports, evaluation and progress line are
the run kit's (`experiments.run_kit`), as in the on-policy loop; the
checkpoint holds the agent (online and target networks, optimizer), the
train step, env steps, episodes, and the replay strategy's learner state.
With `checkpoint_replay` each checkpoint is followed by one of the Reverb
server's tables (the server restores them when restarted on the same
directory, `Builder.make_replay_server`).

Faults. A replay server that stops answering is waited for
(`retry.ServerWait`: back-off, a log line per retry, at most
`replay_retry_seconds`); then the learner starts a new sample iterator,
publishes its weights again (a restored server holds those of its last
checkpoint) and carries on. On one machine the launcher's actor pool
restarts dead actors; the learner asks it to look at every iteration and
writes the restarts (`Actors/restarts`).
"""

import collections
import contextlib
import time
from typing import Any, Dict, Optional

from absl import logging
import numpy as np
import reverb
import tensorflow as tf
from tf_agents.utils import common

from tfa_explore.environments import run_context
from tfa_explore.experiments import checkpointing
from tfa_explore.experiments import evaluation
from tfa_explore.experiments import run_kit
from tfa_explore.process import stop_signals
from tfa_explore.process import run_lock
from tfa_explore.experiments.r2d2 import builder as builder_lib
from tfa_explore.experiments.r2d2 import learner_steps
from tfa_explore.experiments.r2d2 import replay as replay_lib
from tfa_explore.process import retry
from tfa_explore.replay import tables
from tfa_explore.utils import summaries

REPLAY = 'Replay'
ACTOR = 'Actor'
ACTORS = 'Actors'

# The longest the learner blocks in one sample call: between calls it
# sees a stop signal (Python runs signal handlers only between
# TensorFlow ops), so a learner waiting on an empty table stops within
# about this long. Longer waits (`sample_timeout_seconds`) are counted
# over several calls. A timeout drops the samples in flight (up to two
# batches, already counted by the rate limiter), so the poll outlasts a
# healthy wait for a batch's inserts: Pong's 64 sequences of 40 new steps
# take 6.4 s at 400 env steps/s.
SAMPLE_POLL_SECONDS = 20.0


class ProgressReader:
  """Sums the actors' reports: env steps, episodes, recent returns."""

  def __init__(self, client, env_steps, num_episodes, num_slots):
    self._client = client
    self._env_steps = env_steps
    self.num_episodes = num_episodes
    self.recent_returns = collections.deque(maxlen=100)
    self.recent_lengths = collections.deque(maxlen=100)
    # Recent returns per epsilon slot (env k of actor i, see actor.py).
    self.slot_returns = {
        slot: collections.deque(maxlen=10) for slot in range(num_slots)}
    self.stopped = set()

  def drain(self) -> None:
    size = tables.table_sizes(self._client)[builder_lib.PROGRESS_TABLE]
    if not size:
      return
    steps, episodes = 0, 0
    for sample in self._client.sample(builder_lib.PROGRESS_TABLE,
                                      num_samples=size,
                                      emit_timesteps=False,
                                      unpack_as_table_signature=True):
      report = sample.data
      steps += int(report['env_steps'])
      if int(report['episode_length']) > 0:
        episodes += 1
        self.recent_returns.append(float(report['episode_return']))
        self.recent_lengths.append(int(report['episode_length']))
        self.slot_returns.setdefault(
            int(report['slot']), collections.deque(maxlen=10)).append(
                float(report['episode_return']))
      if bool(report['stopped']):
        self.stopped.add(int(report['task']))
    self._env_steps.assign_add(steps)
    self.num_episodes.assign_add(episodes)

  def recent_return(self) -> float:
    return (float(np.mean(self.recent_returns)) if self.recent_returns
            else float('nan'))


class Learner:
  """The learner of one run; `run()` trains until the budget is spent."""

  def __init__(self, settings, replay_server: str, root_dir: str,
               actors: Optional[Any] = None):
    """Builds the agent, the run directory and the replay side; resumes.

    Args:
      settings: `Settings`.
      replay_server: 'host:port' of the Reverb server.
      root_dir: run directory (`run_kit` layout); resumes from its latest
        checkpoint.
      actors: optional pool of this machine's actors
        (`launcher.ActorPool`): `check()` is called at every iteration
        and whenever no sample arrived for `sample_timeout_seconds` (it
        restarts dead actors, and raises once they cannot be restarted);
        `restarts` is written as `Actors/restarts`.
    """
    run_kit.set_global_seeds(settings.seed)
    self._settings = settings
    self._replay_server = replay_server
    self._actors = actors
    # The stop signals of `run` (None before and after it): every wait
    # of the learner ends when they ask it to.
    self._stop = None
    self._server_wait = retry.ServerWait(replay_server, 'learner',
                                         settings.replay_retry_seconds,
                                         should_stop=self._stop_requested)
    builder = builder_lib.Builder(settings)
    # Before anything is built or written: bad input is one clear error.
    builder.check_setup()
    self._replay = settings.replay
    self.train_step = common.create_variable('train_step', 0,
                                             dtype=tf.int64)
    # Before root_dir is touched: the agent's factories check its values.
    self._env_id, self.agent = builder.make_agent(self.train_step)
    self.run_dir = run_kit.RunDirectory(root_dir)
    # The run ends at `num_env_steps` or at this many episodes, if any.
    self._num_episodes = run_kit.episode_budget(
        settings.num_episodes, settings.env_loader, settings.seed,
        settings.num_env_steps, 'r2d2.Settings.num_episodes')
    self._slot_epsilons = [
        epsilon for actor in range(settings.num_actors)
        for epsilon in self.agent.actor_epsilons(
            actor, settings.num_actors, settings.envs_per_actor)]
    self._shared_state = builder_lib.SharedState(self.agent)
    self.env_steps = self._shared_state.env_steps
    num_episodes = tf.Variable(0, dtype=tf.int64, name='num_episodes')

    self._client = reverb.Client(replay_server)
    self._server_wait.wait_until_reachable()
    builder.check_server(self._client, self._shared_state)
    self._variables = builder_lib.SharedVariables(replay_server,
                                                  self._shared_state)
    self._checkpointer = checkpointing.Checkpointer(
        self.run_dir, self.env_steps,
        policies={checkpointing.GREEDY_POLICY: self.agent.policy,
                  checkpointing.COLLECT_POLICY: self.agent.collect_policy},
        train_step=self.train_step,
        max_to_keep=settings.max_checkpoints_to_keep,
        agent=self.agent, env_steps=self.env_steps,
        num_episodes=num_episodes)
    self._checkpointer.restore()
    self.run_dir.write_operative_config(step=self.env_steps)
    self._evaluator = evaluation.Evaluator(
        self.agent.policy, settings.env_loader, settings.num_eval_episodes,
        settings.seed, self.run_dir.eval_writer,
        success_threshold=settings.eval_success_threshold)
    self._progress = ProgressReader(self._client, self.env_steps,
                                    num_episodes, settings.num_slots)
    self._replay_rates = replay_lib.ReplayRates(
        self._client, replay_lib.table_names(self._replay, self.agent,
                                             settings))
    self._updater = None
    self._steps = learner_steps.LearnerSteps(self.single_train_step)
    self._dataset = None
    self._iterator = None
    self._last_eval = None
    self._loss_info = None
    self._start_time = time.time()
    self._train_step_at_start = int(self.train_step)

  # --- named steps ----------------------------------------------------------

  def prepare_replay(self) -> None:
    """The strategy's tables made ready and its steps before any acting
    (R2D3: demonstrations written, pre-training), then its batches."""
    with self._summary_context():
      loss_info = self._replay.prepare(
          self._client, self._replay_server, self.agent, self._env_id,
          self._settings.batch_size)
    if loss_info is not None:
      # The actors' first weights, evaluated and saved so that a resume
      # does not pre-train again.
      self._last_eval = self._evaluator(int(self.env_steps))
      self.checkpoint()
    self._dataset, self._updater = self._replay.sampling(
        self._replay_server, self.agent, self._settings.batch_size,
        self._settings.seed,
        int(min(self._settings.sample_timeout_seconds,
                SAMPLE_POLL_SECONDS) * 1000))

  def publish(self) -> None:
    """Pushes weights and counters to the actors."""
    self._variables.push()

  def train_iteration(self) -> None:
    """Up to `train_steps_per_iteration` learner steps."""
    end = int(self.train_step) + self._settings.train_steps_per_iteration
    while int(self.train_step) < end:
      if not self._run_steps(end - int(self.train_step)):
        break

  def single_train_step(self, iterator):
    """One learner step in the graph: the next batch from `iterator`,
    `agent.train`, its priorities written back; the LossInfo."""
    experience, sample_info = next(iterator)
    # Nothing of the step may run before its batch arrives: the train step
    # counter's increment has no data dependency on the batch, so it would
    # run in a call that a sample timeout ends.
    with tf.control_dependencies(tf.nest.flatten(sample_info)):
      loss_info = self.agent.train(experience)
    self._updater((experience, sample_info), loss_info)
    return loss_info

  def read_progress(self) -> None:
    self._progress.drain()

  def write_summaries(self) -> None:
    """`Metrics/`, `Replay/` and `Actor/<slot>/` values at the env step."""
    env_steps = int(self.env_steps)
    with self.run_dir.train_writer.as_default(step=env_steps):
      metrics = {
          'EnvironmentSteps': env_steps,
          'NumberOfEpisodes': int(self._progress.num_episodes),
          'LearnerSteps': int(self.train_step),
          'StepsPerSecond': env_steps / max(
              time.time() - self._start_time, 1e-9),
      }
      if self._progress.recent_returns:
        metrics['AverageReturn'] = self._progress.recent_return()
        metrics['AverageEpisodeLength'] = float(
            np.mean(self._progress.recent_lengths))
      summaries.scalars(summaries.METRICS, metrics, step=env_steps)
      summaries.scalars(REPLAY, self._replay_rates(), step=env_steps)
      if self._actors is not None:
        tf.summary.scalar(f'{ACTORS}/restarts', self._actors.restarts)
      for slot, returns in sorted(self._progress.slot_returns.items()):
        tf.summary.scalar(
            f'{ACTOR}/{slot}/Epsilon',
            self._slot_epsilons[slot])
        if returns:
          tf.summary.scalar(f'{ACTOR}/{slot}/AverageReturn',
                            float(np.mean(returns)))

  def evaluate(self) -> None:
    self._last_eval = self._evaluator(int(self.env_steps))

  def checkpoint(self) -> None:
    """A checkpoint of the learner, then one of the replay tables."""
    self._checkpointer.save()
    self.checkpoint_replay()

  def checkpoint_replay(self) -> None:
    """The Reverb server checkpoints its tables (with `checkpoint_replay`).

    After the learner's own checkpoint: a kill between the two leaves
    replay one interval older than the learner, which the actors refill.
    """
    if not self._settings.checkpoint_replay:
      return
    start = time.time()
    path = self._client.checkpoint()
    logging.info('Replay tables checkpointed in %.1f s (%s).',
                 time.time() - start, path.rstrip('/').rpartition('/')[2])

  def finish(self) -> Dict[str, float]:
    """Publishes `finished`, evaluates and saves a last time, frees actors."""
    self._shared_state.finished.assign(True)
    self.publish()
    final = run_kit.finish(self._evaluator, self._checkpointer, self.run_dir,
                           int(self.env_steps), self._last_eval)
    # Before the actors are released: that empties the agent table.
    self.checkpoint_replay()
    if int(self.train_step) != self._train_step_at_start:
      # A rerun of a finished run trained nothing: no second point at the
      # same env step.
      self.write_summaries()
    self.run_dir.flush()
    self._release_actors()
    # After the actors stopped: their last episodes are in the journals.
    run_context.end_of_run(self.run_dir.root_dir, self._num_episodes)
    logging.info('Learner finished at env step %s, train step %s.',
                 f'{int(self.env_steps):,}', f'{int(self.train_step):,}')
    return final

  def stop(self, signum: int) -> None:
    """Saves the learner and its replay at this step; raises `RunStopped`.

    The actors are not told to finish and the agent table is not reset: a
    restarted learner carries on with both (its actors on other machines
    wait for it, as after a kill).
    """
    env_steps = int(self.env_steps)
    if not self._checkpointer.saved_at(env_steps):
      self.checkpoint()
    # The sample iterator's Reverb streams end here, while the server is
    # still up, not in the interpreter's clean-up at exit.
    self._iterator = None
    self.run_dir.flush()
    run_context.end_of_run(self.run_dir.root_dir, self._num_episodes)
    self.run_dir.release()
    raise stop_signals.RunStopped(signum, env_steps)

  # --- the loop -------------------------------------------------------------

  def run(self) -> Dict[str, float]:
    """Trains until the actors took `num_env_steps`; the final evaluation."""
    settings = self._settings
    self.prepare_replay()
    self.publish()
    progress_log = run_kit.ProgressLog(settings.num_env_steps,
                                       settings.log_interval,
                                       num_episodes=self._num_episodes)
    # The actors do not know the budget; an exact stop would need them to
    # share one count of steps taken, which the reports give only late.
    logging.info(
        'The run ends at the first learner iteration after the actors\' '
        'reports reach %s env steps; each actor steps on until its next '
        'weight pull (every %s env steps), so it ends past that, the more '
        'so in a short run (the actors fill replay to %s sequences before '
        'the first learner step).', f'{settings.num_env_steps:,}',
        f'{settings.actor_update_period:,}',
        f'{settings.min_size_to_sample:,}')
    self.read_progress()
    with stop_signals.StopSignals() as stop:
      self._stop = stop
      try:
        while not self._budget_spent() and not stop.requested:
          try:
            self._iteration(progress_log)
          except Exception as e:  # pylint: disable=broad-except
            self._reconnect(e)
      finally:
        self._stop = None
    if stop.requested:
      self.stop(stop.signum)
    return self.finish()

  def _reconnect(self, error: Exception) -> None:
    """Waits for a lost server (else raises `error`), then carries on.

    A new sample iterator, and the weights published again: a restored
    server holds those of its last checkpoint.
    """
    while True:
      # Raises unless the server was lost; False: a stop signal came.
      if not self._server_wait.wait(error):
        return
      self._iterator = None
      try:
        self.publish()
        return
      except Exception as e:  # pylint: disable=broad-except
        error = e

  def _iteration(self, progress_log) -> None:
    """One iteration of `run`: train, read progress, what is due."""
    settings = self._settings
    if self._actors is not None:
      self._actors.check()
    steps, train_steps = int(self.env_steps), int(self.train_step)
    self.train_iteration()
    self.read_progress()
    now_steps, now_train_steps = int(self.env_steps), int(self.train_step)
    episodes = int(self._progress.num_episodes)
    progress_log.iteration_done(now_steps,
                                {'learner steps': now_train_steps},
                                episodes=episodes)
    if run_kit.crossed(train_steps, now_train_steps,
                       settings.variable_push_period):
      self.publish()
    if run_kit.crossed(train_steps, now_train_steps,
                       settings.summary_interval):
      self.write_summaries()
    if progress_log.due(steps, now_steps, episodes):
      progress_log.log(now_steps, {
          'train step': f'{now_train_steps:,}',
          'recent return': '%.2f' % self._progress.recent_return(),
          'loss': '%.4f' % (float(self._loss_info.loss)
                            if self._loss_info is not None
                            else float('nan')),
      }, counters={'learner steps': now_train_steps}, episodes=episodes)
      self.run_dir.train_writer.flush()
    run_kit.evaluate_and_checkpoint_when_due(
        steps, now_steps, settings, budget_spent=self._budget_spent(),
        evaluate=self.evaluate, checkpoint=self.checkpoint)

  # --- helpers --------------------------------------------------------------

  def _stop_requested(self) -> bool:
    return self._stop is not None and self._stop.requested

  def _budget_spent(self) -> bool:
    """`num_env_steps` taken, or the episode budget ended (if any)."""
    return (int(self.env_steps) >= self._settings.num_env_steps or
            (self._num_episodes is not None and
             int(self._progress.num_episodes) >= self._num_episodes))

  @contextlib.contextmanager
  def _summary_context(self):
    """The train writer, recording every `summary_interval` learner steps."""
    interval = self._settings.summary_interval
    with self.run_dir.train_writer.as_default(), tf.summary.record_if(
        lambda: tf.equal(self.train_step % interval, 0)):
      yield

  def _run_steps(self, iterations) -> bool:
    """Up to `iterations` learner steps in one call (`LearnerSteps.run`;
    the last `LossInfo` kept); False once the run is over or a stop signal
    came.

    A sample call waits at most `SAMPLE_POLL_SECONDS`; a timeout ends the
    iterator, so the next call starts a new one, and ends this call if it
    made any step (the caller asks again for the rest). Every
    `sample_timeout_seconds` without a sample the learner logs it and
    checks the actors' health.
    """
    waited_since = time.monotonic()
    steps_before = int(self.train_step)
    while True:
      if self._iterator is None:
        self._iterator = iter(self._dataset)
      with self._summary_context():
        loss_info = self._steps.run(self._iterator, iterations)
      if loss_info is not None:
        self._loss_info = loss_info
        return True
      # A sample timeout ended the call.
      self._iterator = None
      if self._stop_requested():
        return False
      if int(self.train_step) > steps_before:
        return True
      waited = time.monotonic() - waited_since
      if waited >= self._settings.sample_timeout_seconds:
        logging.info(
            'No replay sample for %.0f s (%d items in the agent table).',
            waited,
            self._client.server_info()[replay_lib.AGENT_TABLE].current_size)
        if self._actors is not None:
          self._actors.check()
        waited_since = time.monotonic()
      self.read_progress()
      if self._budget_spent():
        return False

  def _release_actors(self) -> None:
    """Lets actors blocked by the rate limiter see `finished`.

    A finished learner stops sampling, so an actor may be blocked by the
    agent table's rate limiter at an insert; resetting the table (and so
    the limiter) releases it, until every actor reported its stop or
    `shutdown_timeout_seconds` pass.
    """
    settings = self._settings
    deadline = time.time() + settings.shutdown_timeout_seconds
    while (len(self._progress.stopped) < settings.num_actors and
           time.time() < deadline):
      self._client.reset(replay_lib.AGENT_TABLE)
      time.sleep(0.2)
      self.read_progress()
    if len(self._progress.stopped) < settings.num_actors:
      logging.warning(
          'Actors %s did not report their stop within %.0f s.',
          sorted(set(range(settings.num_actors)) - self._progress.stopped),
          settings.shutdown_timeout_seconds)


def run_learner(settings, replay_server, root_dir, actors=None):
  """`Learner(...).run()`: the final evaluation dict.

  {'AverageReturn', 'AverageEpisodeLength', 'EnvironmentSteps'}
  (+ 'SuccessRate' with `eval_success_threshold`).
  """
  # Held to the end: `run_kit.finish` releases the run directory's hold
  # before the last replay checkpoint and the actors' release.
  with run_lock.RunLock(root_dir):
    return Learner(settings, replay_server, root_dir, actors).run()
