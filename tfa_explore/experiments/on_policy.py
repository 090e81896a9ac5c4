"""The on-policy experiment loop (PPO and its RND variant).

One iteration: the collect policy steps `num_envs` batched environments for
`rollout_length` steps each (a tf.function loop writing into an in-process
uniform buffer of exactly that size), `agent.train` runs on the whole
[num_envs, rollout_length] batch, the buffer is cleared. An in-process
buffer is the cheapest transport on a few CPUs; Reverb only pays off when
actors and learner live in different processes.

Everything `train_eval` builds is checkpointed (agent with its networks,
optimizer and normalizers, train step, env step and episode counters,
recent-return buffers), so re-running the same command on the same
root_dir continues where the last checkpoint left off.
"""

import os
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
from tf_agents.policies import policy_saver
from tf_agents.replay_buffers import tf_uniform_replay_buffer
from tf_agents.trajectories import trajectory
from tf_agents.utils import common

from tfa_explore.environments import batched
from tfa_explore.environments import exploration
from tfa_explore.experiments import metrics as loop_metrics
from tfa_explore.utils import files
from tfa_explore.utils import summaries

REQUIRED = gin.REQUIRED

# Subdirectories of root_dir (see WORKSPACE.md).
TRAIN_DIR = 'train'
EVAL_DIR = 'eval'
CHECKPOINT_DIR = 'checkpoints'
POLICY_DIR = 'policies'
GREEDY_POLICY = 'greedy_policy'
COLLECT_POLICY = 'collect_policy'
OPERATIVE_CONFIG = 'operative_config.gin'

# Eval envs get seeds far from the collect envs' seed + i.
EVAL_SEED_OFFSET = 1_000_003


def evaluate(policy_action, environment: tf_py_environment.TFPyEnvironment,
             success_threshold: Optional[float] = None) -> Dict[str, float]:
  """Runs ONE episode in each env of the batched `environment`.

  Using one env per episode (rather than counting finished episodes of a few
  envs) avoids the bias toward short episodes.

  Args:
    policy_action: (time_step, policy_state) -> PolicyStep, e.g. a
      tf.function of a greedy policy's `action`.
    environment: A batched TFPyEnvironment; its batch size is the number of
      episodes.
    success_threshold: if set, also 'SuccessRate' (`success_rate`).

  Returns:
    {'AverageReturn': ..., 'AverageEpisodeLength': ...} over the episodes.
  """
  num_episodes = environment.batch_size
  returns = np.zeros(num_episodes, np.float64)
  lengths = np.zeros(num_episodes, np.int64)
  done = np.zeros(num_episodes, bool)
  time_step = environment.reset()
  while not done.all():
    action_step = policy_action(time_step, ())
    time_step = environment.step(action_step.action)
    active = ~done
    returns[active] += time_step.reward.numpy()[active]
    lengths[active] += 1
    done |= time_step.is_last().numpy()
  results = {'AverageReturn': float(returns.mean()),
             'AverageEpisodeLength': float(lengths.mean())}
  if success_threshold is not None:
    results['SuccessRate'] = success_rate(returns, success_threshold)
  return results


def success_rate(episode_returns, threshold: float) -> float:
  """Fraction of episodes whose return is above `threshold`.

  MiniGrid pays 1 - 0.9 * steps / max_steps > 0 only on reaching the goal,
  so with threshold 0 this is the fraction of episodes that reached it.
  """
  episode_returns = np.asarray(episode_returns, np.float64)
  if episode_returns.size == 0:
    raise ValueError('success_rate needs at least one episode.')
  return float(np.mean(episode_returns > threshold))


def _crossed(previous: int, current: int, interval: int) -> bool:
  return interval > 0 and current // interval > previous // interval


def _export_policies(savers: Dict[str, policy_saver.PolicySaver],
                     policy_dir: str) -> None:
  for name, saver in savers.items():
    with files.atomic_directory(os.path.join(policy_dir, name)) as tmp_dir:
      saver.save(tmp_dir)


@gin.configurable(module='on_policy')
def train_eval(
    root_dir: str,
    env_loader: Callable[..., py_environment.PyEnvironment] = REQUIRED,
    agent_fn: Callable[..., Any] = REQUIRED,
    num_env_steps: int = REQUIRED,
    seed: int = REQUIRED,
    num_envs: int = REQUIRED,
    rollout_length: int = REQUIRED,
    eval_interval: int = REQUIRED,
    num_eval_episodes: int = REQUIRED,
    checkpoint_interval: int = REQUIRED,
    log_interval: int = 10_000,
    parallel_envs: bool = False,
    return_buffer_episodes: int = 100,
    max_checkpoints_to_keep: int = 3,
    pre_training_fn: Optional[Callable[..., None]] = None,
) -> Dict[str, float]:
  """Trains an on-policy agent, evaluating and checkpointing as it goes.

  Args:
    root_dir: Run directory (layout in WORKSPACE.md). Resumes from its latest
      checkpoint if there is one.
    env_loader: Called as `env_loader(seed=...)` -> PyEnvironment, e.g.
      `@suite_gymnasium.load`. Collect env i gets `seed + i`.
    agent_fn: Called as `agent_fn(time_step_spec=, action_spec=,
      train_step_counter=)` -> an initialized TF-Agents agent whose `train`
      takes [num_envs, rollout_length] trajectories, e.g.
      `@ppo.ppo_clip_agent`.
    num_env_steps: Stop once this many environment steps (all envs, reset
      steps excluded) have been collected.
    seed: Seeds TF ops and the environments.
    num_envs: Batched collect environments.
    rollout_length: Steps per env per iteration (the PPO horizon T).
    eval_interval: Greedy evaluation every this many env steps (and at the
      end).
    num_eval_episodes: Episodes per evaluation, one per eval env.
    checkpoint_interval: Checkpoint and policy export every this many env
      steps (and at the end).
    log_interval: A progress log line every this many env steps.
    parallel_envs: Step the collect envs in subprocesses.
    return_buffer_episodes: Train `Metrics/AverageReturn` averages over this
      many recent episodes.
    max_checkpoints_to_keep: Older checkpoints are deleted.
    pre_training_fn: If set, called once on a fresh run (not on resume) as
      `pre_training_fn(agent=agent, environment=tf_collect_env)` before
      training, e.g. to warm up observation normalizers. Its env steps are
      not counted.

  Returns:
    The final evaluation: {'AverageReturn', 'AverageEpisodeLength',
    'EnvironmentSteps'}.
  """
  tf.random.set_seed(seed)
  np.random.seed(seed % 2**32)
  root_dir = os.path.abspath(os.path.expanduser(root_dir))
  policy_dir = os.path.join(root_dir, POLICY_DIR)
  train_writer = tf.summary.create_file_writer(
      os.path.join(root_dir, TRAIN_DIR), flush_millis=10_000)
  eval_writer = tf.summary.create_file_writer(
      os.path.join(root_dir, EVAL_DIR), flush_millis=10_000)

  collect_py_env = batched.make_batched_env(env_loader, num_envs, seed,
                                            parallel=parallel_envs)
  collect_env = tf_py_environment.TFPyEnvironment(collect_py_env)
  eval_env = tf_py_environment.TFPyEnvironment(
      batched.make_batched_env(env_loader, num_eval_episodes,
                               seed + EVAL_SEED_OFFSET))

  train_step = common.create_variable('train_step', 0, dtype=tf.int64)
  agent = agent_fn(time_step_spec=collect_env.time_step_spec(),
                   action_spec=collect_env.action_spec(),
                   train_step_counter=train_step)

  env_steps_metric = tf_metrics.EnvironmentSteps()
  env_steps = env_steps_metric.environment_steps
  terminated_metric = loop_metrics.TerminatedEpisodes()
  train_metrics = [
      env_steps_metric,
      tf_metrics.NumberOfEpisodes(),
      tf_metrics.AverageReturnMetric(batch_size=num_envs,
                                     buffer_size=return_buffer_episodes),
      tf_metrics.AverageEpisodeLengthMetric(batch_size=num_envs,
                                            buffer_size=return_buffer_episodes),
      terminated_metric,
  ]
  replay_buffer = tf_uniform_replay_buffer.TFUniformReplayBuffer(
      agent.collect_data_spec, batch_size=num_envs, max_length=rollout_length)
  observers = [replay_buffer.add_batch] + train_metrics

  # TF writes a checkpoint's data and index to temporary names and renames
  # them, then atomically rewrites the `checkpoint` state file, so the
  # latest checkpoint listed is always complete (tests kill -9 a run).
  checkpoint = tf.train.Checkpoint(
      agent=agent,
      train_step=train_step,
      train_metrics=metric_utils.MetricsGroup(train_metrics, 'train_metrics'))
  checkpoint_manager = tf.train.CheckpointManager(
      checkpoint, os.path.join(root_dir, CHECKPOINT_DIR),
      max_to_keep=max_checkpoints_to_keep, checkpoint_name='ckpt')
  resumed = checkpoint_manager.latest_checkpoint is not None
  if resumed:
    # Deferred restore: optimizer slots are restored when first created.
    checkpoint.restore(checkpoint_manager.latest_checkpoint)
  savers = {
      GREEDY_POLICY: policy_saver.PolicySaver(agent.policy,
                                              train_step=train_step),
      COLLECT_POLICY: policy_saver.PolicySaver(agent.collect_policy,
                                               train_step=train_step),
  }

  # Gin records only configurables that were called: write the operative
  # config once the envs and the agent exist.
  config_str = gin.operative_config_str()
  files.atomic_write_text(os.path.join(root_dir, OPERATIVE_CONFIG), config_str)
  summaries.operative_config(train_writer, config_str, step=env_steps)

  if resumed:
    logging.info('Resumed from %s at %d env steps, train step %d.',
                 checkpoint_manager.latest_checkpoint,
                 int(env_steps.numpy()), int(train_step.numpy()))
  elif pre_training_fn is not None:
    pre_training_fn(agent=agent, environment=collect_env)

  collect_policy = agent.collect_policy

  @common.function(autograph=True)
  def collect(time_step, policy_state):
    for _ in tf.range(rollout_length):
      action_step = collect_policy.action(time_step, policy_state)
      next_time_step = collect_env.step(action_step.action)
      traj = trajectory.from_transition(time_step, action_step, next_time_step)
      for observer in observers:
        observer(traj)
      time_step = next_time_step
      policy_state = action_step.state
    return time_step, policy_state

  @common.function
  def train():
    return agent.train(replay_buffer.gather_all())

  greedy_action = common.function(agent.policy.action)

  def run_eval() -> Dict[str, float]:
    results = evaluate(greedy_action, eval_env)
    step = int(env_steps.numpy())
    with eval_writer.as_default():
      summaries.scalars(summaries.METRICS, results, step=step)
    eval_writer.flush()
    logging.info('Eval at %d env steps: average return %.2f, episode length '
                 '%.1f over %d episodes.', step, results['AverageReturn'],
                 results['AverageEpisodeLength'], num_eval_episodes)
    return dict(results, EnvironmentSteps=step)

  def save() -> None:
    checkpoint_manager.save(checkpoint_number=env_steps)
    _export_policies(savers, policy_dir)
    logging.info('Checkpoint and policies saved at %d env steps.',
                 int(env_steps.numpy()))

  time_step = collect_env.reset()
  policy_state = collect_policy.get_initial_state(num_envs)
  start_steps = int(env_steps.numpy())
  log_time, log_steps = time.time(), start_steps
  last_eval = None
  while int(env_steps.numpy()) < num_env_steps:
    previous_steps = int(env_steps.numpy())
    previous_terminated = int(terminated_metric.result().numpy())
    iteration_start = time.time()
    time_step, policy_state = collect(time_step, policy_state)
    terminated = int(terminated_metric.result().numpy())
    with train_writer.as_default(), tf.summary.record_if(True):
      # Default step for summaries an agent writes without an explicit step.
      tf.summary.experimental.set_step(env_steps)
      loss_info = train()
      replay_buffer.clear()
      current_steps = int(env_steps.numpy())
      steps_per_second = ((current_steps - previous_steps) /
                          max(time.time() - iteration_start, 1e-9))
      tf.summary.scalar(f'{summaries.LOSSES}/total_loss', loss_info.loss,
                        step=train_step)
      summaries.scalars(summaries.METRICS, {
          'AverageReturn': train_metrics[2].result(),
          'AverageEpisodeLength': train_metrics[3].result(),
          'EnvironmentSteps': current_steps,
          'NumberOfEpisodes': train_metrics[1].result(),
          'StepsPerSecond': steps_per_second,
          'TerminatedEpisodes': terminated,
          'TerminatedEpisodesPerIteration': terminated - previous_terminated,
      }, step=current_steps)
      exploration_values = exploration.summarize(
          batched.last_infos(collect_py_env))
      if exploration_values:
        summaries.scalars(summaries.EXPLORATION, exploration_values,
                          step=current_steps)

    if (_crossed(previous_steps, current_steps, log_interval) or
        current_steps >= num_env_steps):
      now = time.time()
      rate = (current_steps - log_steps) / max(now - log_time, 1e-9)
      remaining = max(num_env_steps - current_steps, 0)
      logging.info(
          'env steps %d/%d (%.0f%%) | %.0f steps/s | recent return %.2f '
          '(%d episodes) | loss %.4f | ETA %s', current_steps, num_env_steps,
          100.0 * current_steps / num_env_steps, rate,
          float(train_metrics[2].result()),
          int(train_metrics[1].result()), float(loss_info.loss),
          _format_duration(remaining / max(rate, 1e-9)))
      train_writer.flush()
      log_time, log_steps = now, current_steps
    if _crossed(previous_steps, current_steps, eval_interval):
      last_eval = run_eval()
    if _crossed(previous_steps, current_steps, checkpoint_interval):
      save()

  final_steps = int(env_steps.numpy())
  if last_eval is None or last_eval['EnvironmentSteps'] != final_steps:
    last_eval = run_eval()
  latest = checkpoint_manager.latest_checkpoint
  if latest is None or not latest.endswith(f'-{final_steps}'):
    save()
  train_writer.flush()
  eval_writer.flush()
  collect_env.close()
  eval_env.close()
  return last_eval


def _format_duration(seconds: float) -> str:
  seconds = int(round(seconds))
  hours, rest = divmod(seconds, 3600)
  minutes, secs = divmod(rest, 60)
  return f'{hours:d}:{minutes:02d}:{secs:02d}'
