"""The on-policy experiment loop (PPO and its RND variant).

One iteration: a `RolloutCollector` steps `num_envs` batched environments
for `rollout_length` steps each in one traced call (policy, env bridge and
metrics in a graph loop), and `agent.train` runs on the whole
[num_envs, rollout_length] batch it returns: no replay buffer in between
(docs/performance.md measures what each piece costs). Reverb only pays
off when actors and learner live in different processes.

Everything `train_eval` builds is checkpointed (agent with its networks,
optimizer and normalizers, train step, env step and episode counters,
recent-return buffers), so re-running the same command on the same
root_dir continues where the last checkpoint left off.
"""

import dataclasses
import time
from typing import Any, Callable, Dict, Optional

from absl import logging
import gin
import tensorflow as tf
from tf_agents.environments import py_environment
from tf_agents.environments import tf_py_environment
from tf_agents.eval import metric_utils
from tf_agents.metrics import tf_metrics
from tf_agents.trajectories import trajectory
from tf_agents.utils import common

from tfa_explore import errors
from tfa_explore.agents import ppo_clip
from tfa_explore.config import experiment as experiment_lib
from tfa_explore.environments import batched
from tfa_explore.environments import exploration
from tfa_explore.environments import run_context
from tfa_explore.experiments import checkpointing
from tfa_explore.experiments import metrics as loop_metrics
from tfa_explore.experiments import evaluation
from tfa_explore.experiments import run_kit
from tfa_explore.experiments import settings as settings_lib
from tfa_explore.process import stop_signals
from tfa_explore.utils import summaries

REQUIRED = gin.REQUIRED


@gin.configurable(module='on_policy')
@dataclasses.dataclass(frozen=True)
class Settings(settings_lib.RunSettings):
  """On-policy run settings, checked when built.

  The shared ones (`env_loader`, `agent_fn`, the budget, evaluation and
  checkpoints) are `RunSettings`'; collect env i gets seed `seed + i`, and
  `agent_fn`'s agent trains on [num_envs, rollout_length] trajectories,
  e.g. `@ppo.ppo_clip_agent`.

  Attributes:
    num_envs: batched collect environments.
    rollout_length: steps per env per iteration (the PPO horizon T).
    parallel_envs: step the collect envs in subprocesses.
    return_buffer_episodes: train `Metrics/AverageReturn` averages over
      this many recent episodes.
    pre_training_fn: if set, called once on a fresh run (not on resume) as
      `pre_training_fn(agent=agent, environment=collect_py_env)` (the
      batched PyEnvironment) before training, e.g. to warm up observation
      normalizers. Its env steps are not counted.
    tf_threads: if set, TensorFlow's intra- and inter-op thread pools get
      this many threads (`run_kit.set_tf_threads`); 1 is fastest for the
      small networks of our CartPole, MountainCar and MiniGrid files.
  """
  gin_name = 'on_policy.Settings'

  num_envs: int = REQUIRED
  rollout_length: int = REQUIRED
  parallel_envs: bool = False
  return_buffer_episodes: int = 100
  pre_training_fn: Optional[Callable[..., None]] = None
  tf_threads: Optional[int] = None

  def __post_init__(self):
    # Before anything is built: a budget of -5 env steps would run no
    # iteration and end as a success, and a zero interval would never fire.
    super().__post_init__()
    for name in ('num_envs', 'rollout_length', 'return_buffer_episodes'):
      self.check_count(name)
    if self.tf_threads is not None:
      self.check_count('tf_threads')


@gin.configurable(module='on_policy', allowlist=[])
def train_eval(root_dir: str,
               settings: Optional[Settings] = None) -> Dict[str, float]:
  """Trains an on-policy agent, evaluating and checkpointing as it goes.

  Args:
    root_dir: Run directory (layout in WORKSPACE.md). Resumes from its latest
      checkpoint if there is one.
    settings: the run's `Settings`; None builds them from gin
      (`on_policy.Settings.*`).

  Returns:
    The final evaluation: {'AverageReturn', 'AverageEpisodeLength',
    'EnvironmentSteps'} (+ 'SuccessRate'). A rerun of a finished run
    returns the stored one (`run_kit.finish`).

  Raises:
    errors.ConfigError: a count or interval below 1 (naming the gin
      setting), or root_dir taken by another run or not writable.
  """
  settings = settings or settings_lib.build_from_gin(Settings)
  run_kit.set_tf_threads(settings.tf_threads)
  run_kit.set_global_seeds(settings.seed)
  run = run_kit.RunDirectory(root_dir)
  num_episodes = run_kit.episode_budget(
      settings.num_episodes, settings.env_loader, settings.seed,
      settings.num_env_steps, settings.setting('num_episodes'))
  collect_py_env = batched.make_batched_env(
      settings.env_loader, settings.num_envs, settings.seed,
      parallel=settings.parallel_envs)
  time_step_spec, action_spec = run_kit.env_specs(
      settings, env=collect_py_env).tensor_specs()

  train_step = common.create_variable('train_step', 0, dtype=tf.int64)
  agent = make_agent(settings, time_step_spec, action_spec, train_step)

  metrics = TrainMetrics(settings.num_envs, settings.return_buffer_episodes)
  env_steps = metrics.env_steps.environment_steps

  checkpointer = make_checkpointer(settings, run, agent, train_step, metrics)
  resumed = checkpointer.restore()
  run.write_operative_config(step=env_steps)
  if not resumed and settings.pre_training_fn is not None:
    settings.pre_training_fn(agent=agent, environment=collect_py_env)
  loop = TrainLoop(settings, run, agent, metrics, checkpointer, num_episodes)
  collector = RolloutCollector(collect_py_env, agent.collect_policy,
                               settings.rollout_length, metrics.as_list())

  with stop_signals.StopSignals() as stop:
    while loop.running(stop):
      previous_steps = int(env_steps)
      previous_terminated = int(metrics.terminated.result())
      iteration_start = time.time()
      experience = collector.collect()
      loop.train(experience, previous_steps, previous_terminated,
                 iteration_start,
                 exploration.summarize(batched.last_infos(collect_py_env)))
      loop.iteration_done(previous_steps)

  _close(collect_py_env)
  # After the collect envs closed: their journals are complete.
  return loop.end(stop)


def _close(environment) -> None:
  """Closes the collect envs; subprocess envs a terminal's Ctrl-C already
  ended may fail to answer."""
  try:
    environment.close()
  except Exception as e:  # pylint: disable=broad-except
    logging.warning('Closing the collect envs: %s', e)


def make_checkpointer(settings: Settings, run: run_kit.RunDirectory, agent,
                      train_step, metrics: 'TrainMetrics'
                      ) -> checkpointing.Checkpointer:
  """The loop's checkpoints: agent, train step, the collect metrics
  (with the env step count) and the policy exports."""
  return checkpointing.Checkpointer(
      run, metrics.env_steps.environment_steps,
      policies={checkpointing.GREEDY_POLICY: agent.policy,
                checkpointing.COLLECT_POLICY: agent.collect_policy},
      train_step=train_step, max_to_keep=settings.max_checkpoints_to_keep,
      agent=agent,
      train_metrics=metric_utils.MetricsGroup(metrics.as_list(),
                                              'train_metrics'))


class TrainLoop:
  """What an on-policy loop does around each collected batch.

  `train` on the `[num_envs, rollout_length]` batch, with the `Metrics/`
  and `Losses/total_loss` summaries; `iteration_done`: the progress line,
  evaluation and checkpoint when due; `end`: the final evaluation and
  checkpoint (`run_kit.finish`), or the save of a stopped run. The loop in
  one process (`train_eval`) and the learner of the distributed one
  (`on_policy_distributed.learner`) run the same steps; only where the
  batch comes from differs.
  """

  def __init__(self, settings: Settings, run: run_kit.RunDirectory, agent,
               metrics: 'TrainMetrics',
               checkpointer: checkpointing.Checkpointer,
               num_episodes: Optional[int]):
    self._settings = settings
    self._run = run
    self._agent = agent
    self._metrics = metrics
    self._env_steps = metrics.env_steps.environment_steps
    self._checkpointer = checkpointer
    self._num_episodes = num_episodes
    self._evaluator = evaluation.Evaluator(
        agent.policy, settings.env_loader, settings.num_eval_episodes,
        settings.seed, run.eval_writer,
        success_threshold=settings.eval_success_threshold)
    self._train = common.function(agent.train, autograph=False)
    self._progress = run_kit.ProgressLog(settings.num_env_steps,
                                         settings.log_interval,
                                         num_episodes=num_episodes)
    self._last_eval = None
    self._loss_info = None

  def running(self, stop) -> bool:
    """Budget left (env steps and episodes) and no stop signal."""
    return (int(self._env_steps) < self._settings.num_env_steps and
            not stop.requested and not self._episodes_spent())

  def _episodes_spent(self) -> bool:
    return (self._num_episodes is not None and
            int(self._metrics.episodes.result()) >= self._num_episodes)

  def train(self, experience, previous_steps: int, previous_terminated: int,
            iteration_start: float,
            exploration_values: Optional[Dict[str, float]] = None):
    """`agent.train(experience)` with the iteration's summaries.

    Args:
      experience: the `[num_envs, rollout_length]` batch, already seen by
        the collect metrics.
      previous_steps: env steps before the batch was collected.
      previous_terminated: `TerminatedEpisodes` before it.
      iteration_start: `time.time()` when its collection started.
      exploration_values: `Exploration/` scalars of the collect envs.

    Returns:
      The agent's `LossInfo`.
    """
    metrics = self._metrics
    with self._run.train_writer.as_default(), tf.summary.record_if(True):
      # Default step for summaries an agent writes without an explicit step.
      tf.summary.experimental.set_step(self._env_steps)
      loss_info = self._train(experience)
      current_steps = int(self._env_steps)
      tf.summary.scalar(f'{summaries.LOSSES}/total_loss', loss_info.loss,
                        step=self._agent.train_step_counter)
      terminated = int(metrics.terminated.result())
      summaries.scalars(summaries.METRICS, dict(
          metrics.results(),
          EnvironmentSteps=current_steps,
          StepsPerSecond=((current_steps - previous_steps) /
                          max(time.time() - iteration_start, 1e-9)),
          TerminatedEpisodesPerIteration=terminated - previous_terminated,
      ), step=current_steps)
      if exploration_values:
        summaries.scalars(summaries.EXPLORATION, exploration_values,
                          step=current_steps)
    self._loss_info = loss_info
    return loss_info

  def iteration_done(self, previous_steps: int) -> None:
    """The progress line, evaluation and checkpoint, each when due."""
    settings = self._settings
    current_steps = int(self._env_steps)
    episodes = int(self._metrics.episodes.result())
    self._progress.iteration_done(current_steps, episodes=episodes)
    if self._progress.due(previous_steps, current_steps, episodes):
      self._progress.log(current_steps, {
          'recent return': (
              f'{float(self._metrics.average_return.result()):.2f} '
              f'({episodes} episodes)'),
          'loss': f'{float(self._loss_info.loss):.4f}'}, episodes=episodes)
      self._run.train_writer.flush()
    run_kit.evaluate_and_checkpoint_when_due(
        previous_steps, current_steps, settings,
        budget_spent=(current_steps >= settings.num_env_steps or
                      self._episodes_spent()),
        evaluate=self._evaluate, checkpoint=self._checkpointer.save)

  def _evaluate(self) -> None:
    self._last_eval = self._evaluator(int(self._env_steps))

  def end(self, stop) -> Dict[str, float]:
    """The final evaluation and checkpoint; a stopped run saved instead.

    Call after the collect envs closed: their journals are complete.

    Raises:
      stop_signals.RunStopped: `stop` was requested (what the run did is
        saved; no final evaluation: the run did not end).
    """
    env_steps = int(self._env_steps)
    run_context.end_of_run(self._run.root_dir, self._num_episodes)
    if stop.requested:
      if not self._checkpointer.saved_at(env_steps):
        self._checkpointer.save()
      self._evaluator.close()
      self._run.release()
      raise stop_signals.RunStopped(stop.signum, env_steps)
    return run_kit.finish(self._evaluator, self._checkpointer, self._run,
                          env_steps, self._last_eval)


def make_agent(settings: Settings, time_step_spec, action_spec, train_step):
  """`agent_fn`'s agent, checked against the batch it will train on."""
  agent = settings.agent_fn(time_step_spec=time_step_spec,
                            action_spec=action_spec,
                            train_step_counter=train_step)
  # A train batch is one sequence per env: our PPO agents cut their
  # minibatches along the envs, and say here, not at their first train
  # step, when the envs are too few.
  if isinstance(agent, ppo_clip.EpochLoopPPOClipAgent):
    try:
      agent.check_batch_size(settings.num_envs)
    except ValueError as e:
      raise errors.ConfigError(
          f'{settings.setting("num_envs")} = {settings.num_envs} is too few '
          f'for the agent: {e} Each minibatch is a share of the envs: use at '
          'least as many envs as minibatches.') from e
  return agent


def check_before_start() -> None:
  """Every value of the run checked before it starts.

  `config.run` calls it before it writes anything: the
  settings, then one env (built outside the run, so it keeps no journal)
  and the agent built on its specs, whose factories check their values.
  Building the agent twice costs a second or two; a bad value found by
  the real build would leave run.lock and summaries behind.

  Raises:
    errors.ConfigError: the first bad value, naming its gin parameter.
  """
  settings = settings_lib.build_from_gin(Settings)
  # Before the agent below runs TensorFlow's first op: the thread pools
  # can only be sized until then.
  run_kit.set_tf_threads(settings.tf_threads)
  time_step_spec, action_spec = run_kit.env_specs(settings).tensor_specs()
  # Seeded as train_eval seeds, so the check's build needs no global seed
  # set by whatever ran before it in this process (op determinism refuses
  # an unseeded initialiser).
  run_kit.set_global_seeds(settings.seed)
  make_agent(settings, time_step_spec, action_spec,
             tf.Variable(0, dtype=tf.int64, name='train_step'))


EXPERIMENT = experiment_lib.declare_experiment(train_eval, check_before_start)


class RolloutCollector:
  """Steps a batched PyEnvironment with a TF policy, `rollout_length` steps.

  The whole rollout is one traced call: a graph loop over the policy, the
  env step (the `TFPyEnvironment` bridge to the batched py env) and the
  observers, writing each step into `TensorArray`s. On our CPUs a graph
  loop costs less per step than calling a traced policy from Python once
  per step, and the env's own cost is what `GymnasiumBatch` cut
  (docs/performance.md measures both). The policy state and the current
  time step carry over between rollouts, so episodes run across
  iteration boundaries.
  """

  def __init__(self, environment: py_environment.PyEnvironment, policy,
               rollout_length: int, observers=()):
    """Creates the collector (traced at its first `collect`).

    Args:
      environment: A batched PyEnvironment (`batched.make_batched_env`).
      policy: A TF policy, e.g. `agent.collect_policy`.
      rollout_length: Steps per env per `collect` call.
      observers: Callables on a `[num_envs]` Trajectory, e.g. TF-Agents
        metrics, called at every step.
    """
    self._py_environment = environment
    self._environment = tf_py_environment.TFPyEnvironment(environment)
    self._policy = policy
    self._rollout_length = rollout_length
    self._observers = list(observers)
    self._collect = common.function(self._collect_rollout, autograph=False)
    self._time_step = None
    self._policy_state = None

  def _collect_rollout(self, time_step, policy_state):
    # An explicit while_loop, traced without autograph: autograph would
    # convert the policy's and TF-Probability's code, which takes seconds.
    def step(t, time_step, policy_state, arrays):
      action_step = self._policy.action(time_step, policy_state)
      next_time_step = self._environment.step(action_step.action)
      transition = trajectory.from_transition(time_step, action_step,
                                              next_time_step)
      for observer in self._observers:
        observer(transition)
      arrays = tf.nest.map_structure(lambda array, x: array.write(t, x),
                                     arrays, transition)
      return t + 1, next_time_step, action_step.state, arrays

    arrays = tf.nest.map_structure(
        lambda spec: tf.TensorArray(spec.dtype, size=self._rollout_length),
        self._policy.trajectory_spec)
    _, time_step, policy_state, arrays = tf.while_loop(
        lambda t, *_: t < self._rollout_length, step,
        (tf.constant(0), time_step, policy_state, arrays))
    # [T, num_envs, ...] -> [num_envs, T, ...], the layout `train` takes.
    experience = tf.nest.map_structure(
        lambda array: _swap_leading_axes(array.stack()), arrays)
    return experience, time_step, policy_state

  def collect(self) -> trajectory.Trajectory:
    """One rollout: a `[num_envs, rollout_length]` Trajectory of tensors."""
    if self._time_step is None:
      # Where a pre-training warm-up left the env, or a reset.
      self._time_step = tf.nest.map_structure(
          tf.convert_to_tensor,
          batched.current_time_step(self._py_environment))
      self._policy_state = self._policy.get_initial_state(
          self._environment.batch_size)
    experience, self._time_step, self._policy_state = self._collect(
        self._time_step, self._policy_state)
    return experience

  def restart(self) -> None:
    """The next rollout starts new episodes from a reset of the envs.

    For a collector whose last rollout was lost (a distributed actor's
    replay server went away): its episodes would otherwise go on from
    steps no batch holds.
    """
    self._py_environment.reset()
    self._time_step = None


def _swap_leading_axes(tensor):
  rank = tensor.shape.rank
  return tf.transpose(tensor, [1, 0] + list(range(2, rank)))


class TrainMetrics:
  """The collect metrics, by name (checkpointed with the agent)."""

  def __init__(self, num_envs: int, return_buffer_episodes: int):
    self.env_steps = tf_metrics.EnvironmentSteps()
    self.episodes = tf_metrics.NumberOfEpisodes()
    self.average_return = tf_metrics.AverageReturnMetric(
        batch_size=num_envs, buffer_size=return_buffer_episodes)
    self.average_length = tf_metrics.AverageEpisodeLengthMetric(
        batch_size=num_envs, buffer_size=return_buffer_episodes)
    self.terminated = loop_metrics.TerminatedEpisodes()

  def as_list(self):
    # This order is the checkpoint's (MetricsGroup numbers its metrics).
    return [self.env_steps, self.episodes, self.average_return,
            self.average_length, self.terminated]

  def results(self) -> Dict[str, Any]:
    return {
        'AverageReturn': self.average_return.result(),
        'AverageEpisodeLength': self.average_length.result(),
        'NumberOfEpisodes': self.episodes.result(),
        'TerminatedEpisodes': self.terminated.result(),
    }
