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
import numpy as np
import tensorflow as tf
from tf_agents.environments import py_environment
from tf_agents.environments import tf_py_environment
from tf_agents.eval import metric_utils
from tf_agents.metrics import tf_metrics
from tf_agents.specs import tensor_spec
from tf_agents.trajectories import trajectory
from tf_agents.utils import common

from tfa_explore import errors
from tfa_explore.config import experiment as experiment_lib
from tfa_explore.environments import batched
from tfa_explore.environments import exploration
from tfa_explore.environments import run_context
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
  settings = settings or settings_lib.from_gin(Settings)
  run_kit.set_tf_threads(settings.tf_threads)
  tf.random.set_seed(settings.seed)
  np.random.seed(settings.seed % 2**32)
  run = run_kit.RunDirectory(root_dir)
  num_episodes = run_kit.episode_budget(
      settings.num_episodes, settings.env_loader, settings.seed,
      settings.num_env_steps, settings.setting('num_episodes'))
  collect_py_env = batched.make_batched_env(
      settings.env_loader, settings.num_envs, settings.seed,
      parallel=settings.parallel_envs)
  time_step_spec = tensor_spec.from_spec(collect_py_env.time_step_spec())
  action_spec = tensor_spec.from_spec(collect_py_env.action_spec())

  train_step = common.create_variable('train_step', 0, dtype=tf.int64)
  agent = _make_agent(settings, time_step_spec, action_spec, train_step)

  metrics = _TrainMetrics(settings.num_envs, settings.return_buffer_episodes)
  env_steps = metrics.env_steps.environment_steps

  checkpointer = run_kit.Checkpointer(
      run, env_steps,
      policies={run_kit.GREEDY_POLICY: agent.policy,
                run_kit.COLLECT_POLICY: agent.collect_policy},
      train_step=train_step, max_to_keep=settings.max_checkpoints_to_keep,
      agent=agent,
      train_metrics=metric_utils.MetricsGroup(metrics.as_list(),
                                              'train_metrics'))
  resumed = checkpointer.restore()
  run.write_operative_config(step=env_steps)
  if not resumed and settings.pre_training_fn is not None:
    settings.pre_training_fn(agent=agent, environment=collect_py_env)
  evaluator = evaluation.Evaluator(
      agent.policy, settings.env_loader, settings.num_eval_episodes,
      settings.seed, run.eval_writer,
      success_threshold=settings.eval_success_threshold)
  collector = RolloutCollector(collect_py_env, agent.collect_policy,
                               settings.rollout_length, metrics.as_list())
  train = common.function(agent.train, autograph=False)

  progress = run_kit.ProgressLog(settings.num_env_steps,
                                 settings.log_interval,
                                 num_episodes=num_episodes)
  last_eval = None
  with stop_signals.StopSignals() as stop:
    while (int(env_steps) < settings.num_env_steps and
           not stop.requested and (
               num_episodes is None or
               int(metrics.episodes.result()) < num_episodes)):
      previous_steps = int(env_steps)
      previous_terminated = int(metrics.terminated.result())
      iteration_start = time.time()
      experience = collector.collect()
      with run.train_writer.as_default(), tf.summary.record_if(True):
        # Default step for summaries an agent writes without an explicit step.
        tf.summary.experimental.set_step(env_steps)
        loss_info = train(experience)
        current_steps = int(env_steps)
        tf.summary.scalar(f'{summaries.LOSSES}/total_loss', loss_info.loss,
                          step=train_step)
        terminated = int(metrics.terminated.result())
        summaries.scalars(summaries.METRICS, dict(
            metrics.results(),
            EnvironmentSteps=current_steps,
            StepsPerSecond=((current_steps - previous_steps) /
                            max(time.time() - iteration_start, 1e-9)),
            TerminatedEpisodesPerIteration=terminated - previous_terminated,
        ), step=current_steps)
        exploration_values = exploration.summarize(
            batched.last_infos(collect_py_env))
        if exploration_values:
          summaries.scalars(summaries.EXPLORATION, exploration_values,
                            step=current_steps)

      episodes = int(metrics.episodes.result())
      progress.iteration_done(current_steps, episodes=episodes)
      if progress.due(previous_steps, current_steps, episodes):
        progress.log(current_steps, {
            'recent return': (f'{float(metrics.average_return.result()):.2f} '
                              f'({episodes} episodes)'),
            'loss': f'{float(loss_info.loss):.4f}'}, episodes=episodes)
        run.train_writer.flush()
      if run_kit.crossed(previous_steps, current_steps,
                         settings.eval_interval):
        last_eval = evaluator(current_steps)
      # At the budget's end `finish` saves, once, with the final eval.
      budget_spent = current_steps >= settings.num_env_steps or (
          num_episodes is not None and episodes >= num_episodes)
      if (run_kit.crossed(previous_steps, current_steps,
                          settings.checkpoint_interval) and not budget_spent):
        checkpointer.save()

  _close(collect_py_env)
  # After the collect envs closed: their journals are complete.
  run_context.end_of_run(run.root_dir, num_episodes)
  if stop.requested:
    # What the run did is kept; no final evaluation (the run did not end).
    if not checkpointer.saved_at(int(env_steps)):
      checkpointer.save()
    evaluator.close()
    run.release()
    raise stop_signals.RunStopped(stop.signum, int(env_steps))
  return run_kit.finish(evaluator, checkpointer, run, int(env_steps),
                        last_eval)


def _close(environment) -> None:
  """Closes the collect envs; subprocess envs a terminal's Ctrl-C already
  ended may fail to answer."""
  try:
    environment.close()
  except Exception as e:  # pylint: disable=broad-except
    logging.warning('Closing the collect envs: %s', e)


def _make_agent(settings: Settings, time_step_spec, action_spec, train_step):
  """`agent_fn`'s agent, checked against the batch it will train on."""
  agent = settings.agent_fn(time_step_spec=time_step_spec,
                            action_spec=action_spec,
                            train_step_counter=train_step)
  # A train batch is one sequence per env: an agent that splits it into
  # minibatches says here, not at its first train step, if it cannot.
  check_batch_size = getattr(agent, 'check_batch_size', None)
  if check_batch_size is not None:
    try:
      check_batch_size(settings.num_envs)
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
  settings = settings_lib.from_gin(Settings)
  # Before the agent below runs TensorFlow's first op: the thread pools
  # can only be sized until then.
  run_kit.set_tf_threads(settings.tf_threads)
  env = settings.env_loader(seed=settings.seed)
  try:
    time_step_spec = tensor_spec.from_spec(env.time_step_spec())
    action_spec = tensor_spec.from_spec(env.action_spec())
  finally:
    env.close()
  _make_agent(settings, time_step_spec, action_spec,
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


def _swap_leading_axes(tensor):
  rank = tensor.shape.rank
  return tf.transpose(tensor, [1, 0] + list(range(2, rank)))


class _TrainMetrics:
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
