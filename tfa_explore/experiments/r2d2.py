"""R2D2 experiments: replay server, actors and learner, on one or many machines.

Pieces (each used by the single-machine `train_eval` and by the three
binaries `train/replay_server.py`, `train/actor.py`, `train/learner.py`):

* `make_replay_server(settings, port)`: a Reverb server with three tables,
  all built from the agent's specs, so every process that parses the same
  gin file agrees on them:
    - `REPLAY_TABLE`: prioritized sequences (`replay.tables`), rate limited
      by `SampleToInsertRatio` (`samples_per_insert` sequences sampled per
      sequence inserted);
    - `VARIABLES_TABLE`: one item, the learner's latest weights plus its
      counters (`train_step`, `env_steps`, `finished`), read by actors
      through TF-Agents' `ReverbVariableContainer` (on a named client:
      `_variable_container`);
    - `PROGRESS_TABLE`: a queue of small actor reports (env steps since the
      last report, finished episodes with their return, a stop marker).
* `run_actor(settings, task, replay_server, root_dir)`: a batch of
  `envs_per_actor` environments, each one of the paper's actors with its
  own epsilon_j = 0.4^(1 + 7 j / (N - 1)); writes sequences with initial
  priorities computed in one call per step (`replay.sequence_writer`),
  reports progress, pulls weights every `actor_update_period` env steps,
  stops when the learner says so.
* `run_learner(settings, replay_server, root_dir)`: trains on prioritized
  sequences, writes priorities back by key, counts env steps from the
  actors' reports, pushes weights, evaluates, checkpoints, exports, and
  finishes at `num_env_steps`.

Env step counting. Actors count their environment steps (auto-reset steps
excluded, as in `on_policy`) and send the increments through
`PROGRESS_TABLE`; the learner sums them into a checkpointed variable. So a
restarted actor or learner keeps the count, and the learner is the single
place that decides the run is over. It publishes `finished` with the
weights; actors see it at their next pull.

Stopping. A finished learner stops sampling, so actors may be blocked by the
rate limiter at an episode end; the learner resets the replay table (which
resets the limiter) until every actor has sent its stop marker or
`shutdown_timeout_seconds` pass. Replay content is not checkpointed (as in
the paper): a resumed learner refills the table from the actors.

Seams for fault tolerance (not implemented): the learner waits for samples
at most `sample_timeout_seconds` at a time and then calls `health_check`
(threads/processes alive in `train_eval`), and counts come from increments,
so actors can be restarted at any time.

`train_eval` (the gin experiment) holds every setting; the binaries call it
with a `job` (e.g. `functools.partial(run_actor, task=..., ...)`) that gets
the `Settings` instead of running the single-machine experiment.

R2D3. With `demonstrations` bound (an `experiments.r2d3.Demonstrations`)
the same processes run R2D3: the server gets a fourth, demonstration
table; the learner fills it, optionally pre-trains on it, samples mixed
batches and writes priorities to both tables. Actors are unchanged. This
module only calls those hooks; `experiments/r2d3.py` has the rest.
"""

import collections
import dataclasses
import functools
import multiprocessing
import os
import sys
import threading
import time
from typing import Any, Callable, Dict, Optional

from absl import logging
import gin
import numpy as np
import reverb
import tensorflow as tf
from tf_agents.environments import py_environment
from tf_agents.environments import tf_py_environment
from tf_agents.experimental.distributed import reverb_variable_container
from tf_agents.policies import policy_saver
from tf_agents.policies import py_tf_eager_policy
from tf_agents.replay_buffers import reverb_replay_buffer
from tf_agents.specs import tensor_spec
from tf_agents.trajectories import trajectory as trajectory_lib
from tf_agents.utils import common

from tfa_explore.agents.r2d2 import agent as r2d2_agent
from tfa_explore.agents.r2d2 import config as r2d2_config
from tfa_explore.agents.r2d2 import policy as r2d2_policy
from tfa_explore.environments import batched
from tfa_explore.experiments import on_policy
from tfa_explore.networks import recurrent_dueling_q_network as rdqn
from tfa_explore.replay import dataset as replay_dataset
from tfa_explore.replay import priority_updater
from tfa_explore.replay import sequence_writer
from tfa_explore.replay import tables
from tfa_explore.utils import files
from tfa_explore.utils import optimizers
from tfa_explore.utils import summaries

REQUIRED = gin.REQUIRED

REPLAY_TABLE = 'r2d2_sequences'
VARIABLES_TABLE = reverb_variable_container.DEFAULT_TABLE
PROGRESS_TABLE = 'actor_progress'
# Reports the progress queue holds before actors block on it; the learner
# drains it after every few train steps.
PROGRESS_QUEUE_SIZE = 100_000

ACTOR_DIR = 'actors'
ACTOR = 'Actor'
REPLAY = 'Replay'


@dataclasses.dataclass(frozen=True)
class Settings:
  """Everything `train_eval` is configured with (see its Args)."""
  env_loader: Callable[..., py_environment.PyEnvironment]
  agent_fn: Callable[..., r2d2_agent.R2D2Agent]
  num_env_steps: int
  seed: int
  num_actors: int
  envs_per_actor: int
  batch_size: int
  replay_capacity: int
  samples_per_insert: float
  min_size_to_sample: int
  priority_exponent: float
  eval_interval: int
  num_eval_episodes: int
  checkpoint_interval: int
  log_interval: int
  summary_interval: int
  train_steps_per_iteration: int
  variable_push_period: int
  actor_update_period: int
  actor_priorities: bool
  sample_timeout_seconds: float
  shutdown_timeout_seconds: float
  max_checkpoints_to_keep: int
  # R2D3 (`experiments.r2d3.Demonstrations`), None for R2D2.
  demonstrations: Optional[Any] = None
  eval_success_threshold: Optional[float] = None

  @property
  def num_slots(self):
    """Epsilon slots: every env of every actor is one of the paper's actors."""
    return self.num_actors * self.envs_per_actor


# --- agent ------------------------------------------------------------------


# `agent_class` and `agent_kwargs` are for other factories that build a
# subclass on the same network and hyperparameters (`r2d3.r2d3_agent_fn`),
# not gin parameters: a gin file binds the R2D2 ones here and the
# subclass's own in its factory.
@gin.configurable(module='r2d2', denylist=['agent_class', 'agent_kwargs'])
def r2d2_agent_fn(time_step_spec,
                  action_spec,
                  train_step_counter,
                  sequence_config=REQUIRED,
                  lstm_size=REQUIRED,
                  torso_fc_layer_params=REQUIRED,
                  dueling_fc_layer_params=REQUIRED,
                  conv_layer_params=None,
                  image_scale=None,
                  learning_rate=REQUIRED,
                  adam_epsilon=REQUIRED,
                  learning_rate_decay_steps=None,
                  n_step=REQUIRED,
                  gamma=REQUIRED,
                  target_update_period=REQUIRED,
                  importance_sampling_exponent=REQUIRED,
                  priority_max_weight=REQUIRED,
                  gradient_clipping=REQUIRED,
                  use_stored_state=True,
                  debug_summaries=True,
                  agent_class=r2d2_agent.R2D2Agent,
                  agent_kwargs=None):
  """An initialized `R2D2Agent` with a `RecurrentDuelingQNetwork`.

  `lstm_size=None` gives the feed-forward baseline (no recurrence, empty
  state). Hyperparameters are documented on `R2D2Agent` and
  `RecurrentDuelingQNetwork` (`image_scale`: None scales uint8 pixels by
  1/255); Adam as in the paper. `agent_class` (an `R2D2Agent` subclass)
  gets these arguments plus `agent_kwargs`. `learning_rate_decay_steps`:
  if set, the rate decays linearly to 0 over that many learner steps (with
  a sample-to-insert ratio the run's learner steps are known in advance:
  env steps / replay_period x samples_per_insert / batch_size); None keeps
  it constant, as the paper.

  Raises:
    ValueError: if the action spec is not one discrete scalar.
  """
  time_step_spec = tensor_spec.from_spec(time_step_spec)
  # Checked before the network is built, whose own error is less direct.
  action_spec = r2d2_agent.check_action_spec(
      tensor_spec.from_spec(action_spec))
  network = rdqn.RecurrentDuelingQNetwork(
      rdqn.make_input_spec(time_step_spec.observation, action_spec,
                           reward_dtype=time_step_spec.reward.dtype),
      action_spec,
      torso_fc_layer_params=tuple(torso_fc_layer_params),
      lstm_size=lstm_size,
      dueling_fc_layer_params=tuple(dueling_fc_layer_params),
      conv_layer_params=conv_layer_params,
      image_scale=image_scale)
  agent = agent_class(
      time_step_spec,
      action_spec,
      q_network=network,
      optimizer=optimizers.adam_optimizer(learning_rate,
                                          learning_rate_decay_steps,
                                          adam_epsilon),
      sequence_config=sequence_config,
      n_step=n_step,
      gamma=gamma,
      target_update_period=target_update_period,
      importance_sampling_exponent=importance_sampling_exponent,
      priority_max_weight=priority_max_weight,
      use_stored_state=use_stored_state,
      gradient_clipping=gradient_clipping,
      debug_summaries=debug_summaries,
      train_step_counter=train_step_counter,
      **(agent_kwargs or {}))
  agent.initialize()
  return agent


def _make_agent(settings, train_step=None):
  """(py env seeded `seed`, agent) for specs; the caller closes the env."""
  env = settings.env_loader(seed=settings.seed)
  if train_step is None:
    train_step = tf.Variable(0, dtype=tf.int64, name='train_step')
  agent = settings.agent_fn(
      time_step_spec=tensor_spec.from_spec(env.time_step_spec()),
      action_spec=tensor_spec.from_spec(env.action_spec()),
      train_step_counter=train_step)
  if not isinstance(agent, r2d2_agent.R2D2Agent):
    raise TypeError(
        f'agent_fn must build an R2D2Agent, got {type(agent).__name__}.')
  return env, agent


# --- tables -----------------------------------------------------------------


class _SharedState(tf.Module):
  """What the learner publishes to actors: weights and counters."""

  def __init__(self, agent):
    super().__init__(name='r2d2_shared_state')
    self.agent = agent
    self.env_steps = tf.Variable(0, dtype=tf.int64, name='env_steps')
    self.finished = tf.Variable(False, name='finished')

  def nest(self):
    return {
        'q_network': list(self.agent.q_network.variables),
        reverb_variable_container.TRAIN_STEP_KEY:
            self.agent.train_step_counter,
        'env_steps': self.env_steps,
        'finished': self.finished,
    }


def _variables_signature(shared_state):
  return tf.nest.map_structure(
      lambda v: tf.TensorSpec(v.shape, v.dtype), shared_state.nest())


def _progress_signature():
  return {
      'task': tf.TensorSpec((), tf.int64),
      'slot': tf.TensorSpec((), tf.int64),  # epsilon slot of the episode
      'env_steps': tf.TensorSpec((), tf.int64),  # since the last report
      'episode_return': tf.TensorSpec((), tf.float32),
      'episode_length': tf.TensorSpec((), tf.int64),  # 0: no episode ended
      'stopped': tf.TensorSpec((), tf.bool),
  }


def make_tables(settings, agent):
  """The server's tables (module doc), from the agent's specs.

  Three for R2D2; R2D3 (`settings.demonstrations`) adds its demonstration
  table.
  """
  shared_state = _SharedState(agent)
  server_tables = [
      tables.make_prioritized_table(
          REPLAY_TABLE,
          max_size=settings.replay_capacity,
          collect_data_spec=agent.collect_data_spec,
          sequence_length=agent.sequence_config.sequence_length,
          samples_per_insert=settings.samples_per_insert,
          min_size_to_sample=settings.min_size_to_sample,
          priority_exponent=settings.priority_exponent),
      reverb.Table(
          name=VARIABLES_TABLE,
          sampler=reverb.selectors.Uniform(),
          remover=reverb.selectors.Fifo(),
          rate_limiter=reverb.rate_limiters.MinSize(1),
          max_size=1,
          max_times_sampled=0,
          signature=_variables_signature(shared_state)),
      reverb.Table.queue(PROGRESS_TABLE, max_size=PROGRESS_QUEUE_SIZE,
                         signature=_progress_signature()),
  ]
  if settings.demonstrations is not None:
    server_tables.extend(settings.demonstrations.make_tables(
        agent, settings.priority_exponent))
  return server_tables


def _variable_container(replay_server):
  """TF-Agents' `ReverbVariableContainer` on a Reverb client of its own.

  The stock container's client has no resource name, which fails in actor
  threads started beside the learner (see `replay.tables.tf_client`).
  """
  container = reverb_variable_container.ReverbVariableContainer(
      replay_server, table_names=[VARIABLES_TABLE])
  container._tf_client = tables.tf_client(replay_server, 'variables')  # pylint: disable=protected-access
  return container


def make_replay_server(settings, port=None):
  """A Reverb server with the tables of `settings` (port None: any free)."""
  # The agent is built only for its specs, but its weight initializers are
  # random ops: under `tf.config.experimental.enable_op_determinism()` they
  # need a global seed.
  tf.random.set_seed(settings.seed)
  env, agent = _make_agent(settings)
  env.close()
  server_tables = make_tables(settings, agent)
  server = reverb.Server(server_tables, port=port)
  logging.info('Reverb server on port %d with tables %s.', server.port,
               [table.name for table in server_tables])
  return server


def _check_tables(client, shared_state, demonstrations=None):
  """Raises ValueError unless the server's tables fit this agent.

  With `demonstrations` (the learner of an R2D3 run) the demonstration
  table is checked too.
  """
  agent = shared_state.agent
  info = client.server_info(timeout=60)
  missing = [name for name in (REPLAY_TABLE, VARIABLES_TABLE, PROGRESS_TABLE)
             if name not in info]
  if missing:
    raise ValueError(
        f'Reverb server has no table(s) {missing}; it must be started by '
        'train/replay_server.py with the same gin file.')
  tables.check_signature(info[REPLAY_TABLE].signature,
                         agent.collect_data_spec,
                         agent.sequence_config.sequence_length,
                         table_name=REPLAY_TABLE)
  expected = tf.nest.flatten(_variables_signature(shared_state))
  actual = tf.nest.flatten(info[VARIABLES_TABLE].signature or ())
  if len(actual) != len(expected) or any(
      tf.TensorShape(a.shape) != e.shape or tf.as_dtype(a.dtype) != e.dtype
      for a, e in zip(actual, expected)):
    raise ValueError(
        f'Reverb table {VARIABLES_TABLE!r} holds weights of another network '
        f'({actual}); this agent needs {expected}. Start the replay server '
        'with the same gin file.')
  if demonstrations is not None:
    demonstrations.check_server(info, agent)


# --- actor ------------------------------------------------------------------


def run_actor(settings, task, replay_server, root_dir=None,
              stop_event=None):
  """Runs actor `task` until the learner finishes (or `stop_event` is set).

  The actor steps `envs_per_actor` environments as one batch (one policy
  call and one priority computation per step for all of them). Env k of
  actor i is the paper's actor j = i * envs_per_actor + k: seed `seed + j`,
  epsilon_j = 0.4^(1 + 7 j / (N - 1)) with N = num_actors * envs_per_actor.

  Args:
    settings: `Settings`.
    task: actor index i in [0, num_actors).
    replay_server: 'host:port' of the Reverb server.
    root_dir: if set, actor summaries go to root_dir/actors/<task>.
    stop_event: optional `threading.Event` to stop early.

  Returns:
    Env steps this actor took (all its environments).
  """
  if not 0 <= task < settings.num_actors:
    raise ValueError(
        f'task must be in [0, num_actors={settings.num_actors}), got {task}.')
  num_envs = settings.envs_per_actor
  first_slot = task * num_envs
  # No tf.random.set_seed here: actor threads share the process's global
  # seed with the learner. Envs are seeded per slot.
  env = batched.make_batched_env(settings.env_loader, num_envs,
                                 settings.seed + first_slot)
  train_step = tf.Variable(0, dtype=tf.int64, name='train_step')
  agent = settings.agent_fn(
      time_step_spec=tensor_spec.from_spec(env.time_step_spec()),
      action_spec=tensor_spec.from_spec(env.action_spec()),
      train_step_counter=train_step)
  shared_state = _SharedState(agent)
  client = reverb.Client(replay_server)
  _check_tables(client, shared_state)
  variables = _variable_container(replay_server)
  epsilons = r2d2_policy.slot_epsilons(task, settings.num_actors, num_envs)
  logging.info('Actor %d (%d envs, epsilons %s) waiting for the learner\'s '
               'weights.', task, num_envs,
               ', '.join(f'{e:.5f}' for e in epsilons))
  variables.update(shared_state.nest())  # Blocks until the first push.

  replay_writer = sequence_writer.BatchedSequenceWriter(
      client, REPLAY_TABLE, agent.sequence_config, num_envs,
      agent.collect_data_spec,
      priorities_fn=(agent.initial_priorities_fn()
                     if settings.actor_priorities else None),
      **(settings.demonstrations.actor_writer_kwargs()
         if settings.demonstrations is not None else {}))
  policy = py_tf_eager_policy.PyTFEagerPolicy(
      agent.actor_collect_policy(task, settings.num_actors, num_envs),
      use_tf_function=True, batch_time_steps=False)
  progress_writer = client.trajectory_writer(num_keep_alive_refs=1)

  def report(env_steps, slot=-1, episode_return=0.0, episode_length=0,
             stopped=False):
    progress_writer.append({
        'task': np.int64(task),
        'slot': np.int64(slot),
        'env_steps': np.int64(env_steps),
        'episode_return': np.float32(episode_return),
        'episode_length': np.int64(episode_length),
        'stopped': np.bool_(stopped),
    })
    progress_writer.create_item(
        PROGRESS_TABLE, 1.0,
        tf.nest.map_structure(lambda column: column[-1],
                              progress_writer.history))

  summary_writer = None
  if root_dir:
    summary_writer = tf.summary.create_file_writer(
        os.path.join(root_dir, ACTOR_DIR, str(task)), flush_millis=10_000)

  total_steps = 0
  unreported_steps = 0
  episode_returns = np.zeros(num_envs, np.float64)
  episode_lengths = np.zeros(num_envs, np.int64)
  items_at_update = 0
  steps_at_update = 0
  update_time = time.time()
  time_step = env.reset()
  policy_state = policy.get_initial_state(num_envs)
  try:
    while not bool(shared_state.finished.numpy()):
      if stop_event is not None and stop_event.is_set():
        break
      action_step = policy.action(time_step, policy_state)
      next_time_step = env.step(action_step.action)
      replay_writer(trajectory_lib.from_transition(time_step, action_step,
                                             next_time_step))
      # The step after LAST is a reset, not an env step.
      active = ~np.asarray(time_step.is_last())
      num_active = int(active.sum())
      total_steps += num_active
      unreported_steps += num_active
      episode_lengths += active
      episode_returns += np.where(active, next_time_step.reward, 0.0)
      for k in np.flatnonzero(active & np.asarray(next_time_step.is_last())):
        report(unreported_steps, first_slot + k, episode_returns[k],
               episode_lengths[k])
        unreported_steps = 0
        episode_returns[k], episode_lengths[k] = 0.0, 0
      time_step = next_time_step
      policy_state = action_step.state
      if total_steps - steps_at_update >= settings.actor_update_period:
        if unreported_steps:
          report(unreported_steps)
          unreported_steps = 0
        variables.update(shared_state.nest())
        if summary_writer is not None:
          now = time.time()
          elapsed = max(now - update_time, 1e-9)
          items = replay_writer.num_items_written
          with summary_writer.as_default(step=total_steps):
            tf.summary.scalar(f'{ACTOR}/EnvironmentStepsPerSecond',
                              (total_steps - steps_at_update) / elapsed)
            tf.summary.scalar(f'{ACTOR}/SequencesPerSecond',
                              (items - items_at_update) / elapsed)
          items_at_update, update_time = items, now
        steps_at_update = total_steps
  finally:
    # The sequences first: the learner keeps resetting the replay table
    # (releasing its rate limiter) until every actor reported its stop.
    try:
      replay_writer.close(timeout_ms=int(
          settings.shutdown_timeout_seconds * 1000))
    except Exception as e:  # pylint: disable=broad-except
      logging.info('Actor %d dropped its last sequences: %s', task, e)
    try:
      report(unreported_steps, stopped=True)
      progress_writer.flush(timeout_ms=5_000)
    except Exception as e:  # pylint: disable=broad-except
      # The server may be gone already (single machine: stopped after the
      # learner); the learner stops waiting after its shutdown timeout.
      logging.info('Actor %d could not report its stop: %s', task, e)
    try:
      progress_writer.close()
    except Exception:  # pylint: disable=broad-except
      pass
    if summary_writer is not None:
      summary_writer.close()
    env.close()
  logging.info('Actor %d stopped after %d env steps.', task, total_steps)
  return total_steps


# --- learner ----------------------------------------------------------------


class _StatefulGreedyAction:
  """`on_policy.evaluate`'s (time_step, ()) -> PolicyStep for a recurrent policy.

  Carries the policy state between calls; the R2D2 policy zeros it at FIRST
  steps, so each evaluation starts from a clean state.
  """

  def __init__(self, policy, batch_size):
    self._action = common.function(policy.action)
    self._initial_state = policy.get_initial_state(batch_size)
    self._state = self._initial_state

  def __call__(self, time_step, unused_state):
    policy_step = self._action(time_step, self._state)
    self._state = policy_step.state
    return policy_step


class _ProgressReader:
  """Sums actor reports: env steps, recent returns per actor and overall."""

  def __init__(self, client, env_steps, num_episodes, num_actors):
    self._client = client
    self._env_steps = env_steps
    self._num_episodes = num_episodes
    self.recent_returns = collections.deque(maxlen=100)
    self.recent_lengths = collections.deque(maxlen=100)
    # Recent returns per epsilon slot (module doc: env k of actor i).
    self.actor_returns = {
        slot: collections.deque(maxlen=10) for slot in range(num_actors)}
    self.stopped = set()

  def drain(self):
    size = self._client.server_info()[PROGRESS_TABLE].current_size
    if not size:
      return
    steps, episodes = 0, 0
    for sample in self._client.sample(PROGRESS_TABLE, num_samples=size,
                                      emit_timesteps=False,
                                      unpack_as_table_signature=True):
      report = sample.data
      task = int(report['task'])
      steps += int(report['env_steps'])
      if int(report['episode_length']) > 0:
        episodes += 1
        self.recent_returns.append(float(report['episode_return']))
        self.recent_lengths.append(int(report['episode_length']))
        self.actor_returns.setdefault(
            int(report['slot']), collections.deque(maxlen=10)).append(
                float(report['episode_return']))
      if bool(report['stopped']):
        self.stopped.add(task)
    self._env_steps.assign_add(steps)
    self._num_episodes.assign_add(episodes)


class _ReplayRates:
  """Reverb insert/sample counts and rates since the previous call."""

  def __init__(self, client, demonstrations=None):
    self._client = client
    self._demonstrations = demonstrations
    self._previous = None

  def __call__(self):
    info = self._client.server_info()[REPLAY_TABLE]
    stats = info.rate_limiter_info
    now = time.time()
    current = (now, stats.insert_stats.completed,
               stats.sample_stats.completed)
    values = {'size': info.current_size,
              'inserted': current[1], 'sampled': current[2]}
    if self._previous is not None:
      elapsed = max(now - self._previous[0], 1e-9)
      values['inserts_per_second'] = (current[1] - self._previous[1]) / elapsed
      values['samples_per_second'] = (current[2] - self._previous[2]) / elapsed
    self._previous = current
    if self._demonstrations is not None:
      values.update(self._demonstrations.replay_summaries(self._client))
    return values


def run_learner(settings, replay_server, root_dir, health_check=None):
  """Trains until the actors have taken `num_env_steps` env steps.

  Writes the root_dir layout of WORKSPACE.md (operative_config.gin,
  train/, eval/, checkpoints/, policies/) and resumes from the latest
  checkpoint in root_dir.

  With `settings.demonstrations` (R2D3, `experiments.r2d3`): fills the
  demonstration table unless it already holds the file's sequences,
  pre-trains on it (steps done are checkpointed; evaluated and saved at
  env step 0), then trains on mixed batches and writes priorities back to
  both tables.

  Args:
    settings: `Settings`.
    replay_server: 'host:port' of the Reverb server.
    root_dir: run directory.
    health_check: optional callable, called whenever no sample arrived for
      `sample_timeout_seconds`; raises if the actors are gone.

  Returns:
    The final evaluation: {'AverageReturn', 'AverageEpisodeLength',
    'EnvironmentSteps'} (+ 'SuccessRate' with `eval_success_threshold`).
  """
  tf.random.set_seed(settings.seed)
  np.random.seed(settings.seed % 2**32)
  root_dir = os.path.abspath(os.path.expanduser(root_dir))
  train_writer = tf.summary.create_file_writer(
      os.path.join(root_dir, on_policy.TRAIN_DIR), flush_millis=10_000)
  eval_writer = tf.summary.create_file_writer(
      os.path.join(root_dir, on_policy.EVAL_DIR), flush_millis=10_000)

  train_step = common.create_variable('train_step', 0, dtype=tf.int64)
  env, agent = _make_agent(settings, train_step)
  env_id = getattr(env, 'env_id', None)
  env.close()
  demos = settings.demonstrations
  if demos is not None:
    demos.check_agent(agent)
  shared_state = _SharedState(agent)
  env_steps = shared_state.env_steps
  num_episodes = tf.Variable(0, dtype=tf.int64, name='num_episodes')
  eval_env = tf_py_environment.TFPyEnvironment(
      batched.make_batched_env(settings.env_loader,
                               settings.num_eval_episodes,
                               settings.seed + on_policy.EVAL_SEED_OFFSET))

  client = reverb.Client(replay_server)
  _check_tables(client, shared_state, demos)
  sample_timeout_ms = int(settings.sample_timeout_seconds * 1000)
  if demos is None:
    replay_buffer = reverb_replay_buffer.ReverbReplayBuffer(
        agent.collect_data_spec, REPLAY_TABLE,
        agent.sequence_config.sequence_length, server_address=replay_server,
        rate_limiter_timeout_ms=sample_timeout_ms)
    dataset = replay_dataset.replay_dataset(replay_buffer, agent,
                                            settings.batch_size)
    updater = priority_updater.PriorityUpdater(replay_server, REPLAY_TABLE)
  else:
    demos.fill_table(client, agent, env_id)
    dataset = demos.dataset(replay_server, agent, settings.batch_size,
                            settings.seed, sample_timeout_ms)
    updater = demos.priority_updater(replay_server)
  variables = _variable_container(replay_server)

  checkpointed = dict(agent=agent, train_step=train_step,
                      env_steps=env_steps, num_episodes=num_episodes)
  if demos is not None:
    pretrain_steps_done = tf.Variable(0, dtype=tf.int64,
                                      name='pretrain_steps_done')
    checkpointed['pretrain_steps_done'] = pretrain_steps_done
  checkpoint = tf.train.Checkpoint(**checkpointed)
  checkpoint_manager = tf.train.CheckpointManager(
      checkpoint, os.path.join(root_dir, on_policy.CHECKPOINT_DIR),
      max_to_keep=settings.max_checkpoints_to_keep, checkpoint_name='ckpt')
  resumed = checkpoint_manager.latest_checkpoint is not None
  if resumed:
    # Keras optimizers only restore slots that exist at restore time.
    agent._optimizer.build(agent.q_network.trainable_variables)  # pylint: disable=protected-access
    checkpoint.restore(checkpoint_manager.latest_checkpoint)
    logging.info('Resumed from %s at %d env steps, train step %d.',
                 checkpoint_manager.latest_checkpoint, int(env_steps),
                 int(train_step))
  savers = {
      on_policy.GREEDY_POLICY: policy_saver.PolicySaver(
          agent.policy, train_step=train_step),
      on_policy.COLLECT_POLICY: policy_saver.PolicySaver(
          agent.collect_policy, train_step=train_step),
  }
  config_str = gin.operative_config_str()
  files.atomic_write_text(os.path.join(root_dir, on_policy.OPERATIVE_CONFIG),
                          config_str)
  summaries.operative_config(train_writer, config_str, step=env_steps)

  progress = _ProgressReader(client, env_steps, num_episodes,
                             settings.num_slots)
  replay_rates = _ReplayRates(client, demos)

  @common.function(autograph=False)
  def train(experience, sample_info):
    loss_info = agent.train(experience)
    updater((experience, sample_info), loss_info)
    return loss_info

  greedy_action = _StatefulGreedyAction(agent.policy,
                                        settings.num_eval_episodes)

  def run_eval():
    results = on_policy.evaluate(
        greedy_action, eval_env,
        success_threshold=settings.eval_success_threshold)
    step = int(env_steps)
    with eval_writer.as_default():
      summaries.scalars(summaries.METRICS, results, step=step)
    eval_writer.flush()
    logging.info('Eval at %d env steps: average return %.2f, episode length '
                 '%.1f%s over %d episodes.', step, results['AverageReturn'],
                 results['AverageEpisodeLength'],
                 (f', success rate {results["SuccessRate"]:.2f}'
                  if 'SuccessRate' in results else ''),
                 settings.num_eval_episodes)
    return dict(results, EnvironmentSteps=step)

  def save():
    checkpoint_manager.save(checkpoint_number=env_steps)
    on_policy._export_policies(savers, os.path.join(root_dir, on_policy.POLICY_DIR))  # pylint: disable=protected-access
    logging.info('Checkpoint and policies saved at %d env steps.',
                 int(env_steps))

  last_eval = None
  if demos is not None:
    with train_writer.as_default(), tf.summary.record_if(
        lambda: tf.equal(train_step % settings.summary_interval, 0)):
      pretrained = demos.pretrain(agent, replay_server, settings.batch_size,
                                  pretrain_steps_done)
    if pretrained is not None:
      # The actors' first weights, evaluated and saved so that a resume
      # does not pre-train again.
      last_eval = run_eval()
      save()
  variables.push(shared_state.nest())

  def next_batch(iterator):
    while True:
      try:
        return iterator, next(iterator)
      except (StopIteration, tf.errors.OutOfRangeError,
              tf.errors.DeadlineExceededError):
        # Rate limiter timeout: no sample for sample_timeout_seconds.
        logging.info('No replay sample for %.0f s (%d items in the table).',
                     settings.sample_timeout_seconds,
                     client.server_info()[REPLAY_TABLE].current_size)
        if health_check is not None:
          health_check()
        progress.drain()
        if int(env_steps) >= settings.num_env_steps:
          return iterator, None
        iterator = iter(dataset)

  iterator = iter(dataset)
  start_time = time.time()
  log_time, log_steps, log_train_steps = start_time, int(env_steps), int(
      train_step)
  loss_info = None
  progress.drain()
  while int(env_steps) < settings.num_env_steps:
    previous_steps = int(env_steps)
    previous_train_steps = int(train_step)
    for _ in range(settings.train_steps_per_iteration):
      iterator, batch = next_batch(iterator)
      if batch is None:
        break
      experience, sample_info = batch
      with train_writer.as_default(), tf.summary.record_if(
          lambda: tf.equal(train_step % settings.summary_interval, 0)):
        loss_info = train(experience, sample_info)
    progress.drain()
    current_steps = int(env_steps)
    current_train_steps = int(train_step)
    if (current_train_steps // settings.variable_push_period >
        previous_train_steps // settings.variable_push_period):
      variables.push(shared_state.nest())

    if (current_train_steps // settings.summary_interval >
        previous_train_steps // settings.summary_interval):
      _write_train_summaries(train_writer, settings, progress, replay_rates,
                             current_steps, current_train_steps,
                             time.time() - start_time)
    if on_policy._crossed(previous_steps, current_steps, settings.log_interval):  # pylint: disable=protected-access
      now = time.time()
      elapsed = max(now - log_time, 1e-9)
      rate = (current_steps - log_steps) / elapsed
      remaining = max(settings.num_env_steps - current_steps, 0)
      recent = (np.mean(progress.recent_returns)
                if progress.recent_returns else float('nan'))
      logging.info(
          'env steps %d/%d (%.0f%%) | %.0f env steps/s | %.1f learner '
          'steps/s | train step %d | recent return %.2f | loss %.4f | ETA %s',
          current_steps, settings.num_env_steps,
          100.0 * current_steps / settings.num_env_steps, rate,
          (current_train_steps - log_train_steps) / elapsed,
          current_train_steps, recent,
          float(loss_info.loss) if loss_info is not None else float('nan'),
          on_policy._format_duration(remaining / max(rate, 1e-9)))  # pylint: disable=protected-access
      train_writer.flush()
      log_time, log_steps, log_train_steps = now, current_steps, (
          current_train_steps)
    if on_policy._crossed(previous_steps, current_steps,  # pylint: disable=protected-access
                          settings.eval_interval):
      last_eval = run_eval()
    if on_policy._crossed(previous_steps, current_steps,  # pylint: disable=protected-access
                          settings.checkpoint_interval):
      save()

  shared_state.finished.assign(True)
  variables.push(shared_state.nest())
  final_steps = int(env_steps)
  if last_eval is None or last_eval['EnvironmentSteps'] != final_steps:
    last_eval = run_eval()
  latest = checkpoint_manager.latest_checkpoint
  if latest is None or not latest.endswith(f'-{final_steps}'):
    save()
  _write_train_summaries(train_writer, settings, progress, replay_rates,
                         final_steps, int(train_step),
                         time.time() - start_time)
  train_writer.flush()
  eval_writer.flush()
  eval_env.close()
  _release_actors(client, progress, settings)
  logging.info('Learner finished at %d env steps, train step %d.',
               int(env_steps), int(train_step))
  return last_eval


def _write_train_summaries(writer, settings, progress, replay_rates,
                           env_steps, train_steps, elapsed_seconds):
  replay = replay_rates()
  with writer.as_default(step=env_steps):
    metrics = {
        'EnvironmentSteps': env_steps,
        'NumberOfEpisodes': int(progress._num_episodes),  # pylint: disable=protected-access
        'LearnerSteps': train_steps,
        'StepsPerSecond': env_steps / max(elapsed_seconds, 1e-9),
    }
    if progress.recent_returns:
      metrics['AverageReturn'] = float(np.mean(progress.recent_returns))
      metrics['AverageEpisodeLength'] = float(np.mean(progress.recent_lengths))
    summaries.scalars(summaries.METRICS, metrics, step=env_steps)
    summaries.scalars(REPLAY, replay, step=env_steps)
    for slot, returns in sorted(progress.actor_returns.items()):
      if returns:
        tf.summary.scalar(f'{ACTOR}/{slot}/AverageReturn',
                          float(np.mean(returns)))
        tf.summary.scalar(f'{ACTOR}/{slot}/Epsilon',
                          r2d2_policy.actor_epsilon(slot, settings.num_slots))


def _release_actors(client, progress, settings):
  """Lets actors blocked by the rate limiter see `finished` (module doc)."""
  deadline = time.time() + settings.shutdown_timeout_seconds
  while (len(progress.stopped) < settings.num_actors and
         time.time() < deadline):
    client.reset(REPLAY_TABLE)
    time.sleep(0.2)
    progress.drain()
  if len(progress.stopped) < settings.num_actors:
    logging.warning('Actors %s did not report their stop within %.0f s.',
                    sorted(set(range(settings.num_actors)) - progress.stopped),
                    settings.shutdown_timeout_seconds)


# --- single machine ---------------------------------------------------------


def _exit_when_orphaned(parent_pid, poll_seconds=1.0):
  """Ends this process once `parent_pid` is gone (a daemon thread).

  A killed train_eval (SIGKILL, or SIGTERM without Python's clean-up) takes
  the in-process Reverb server with it but cannot stop its actor
  subprocesses, which would then wait on the dead server forever. The
  actor holds nothing that outlives the replay it was feeding, so it
  exits at once.
  """
  def watch():
    while os.getppid() == parent_pid:
      time.sleep(poll_seconds)
    logging.warning('Parent process %d is gone: actor exits.', parent_pid)
    os._exit(1)  # pylint: disable=protected-access

  threading.Thread(target=watch, name='orphan_watchdog', daemon=True).start()


def _actor_process_main(config_str, task, replay_server, root_dir,
                        parent_pid=None):
  """Entry point of an actor subprocess (spawned: a fresh interpreter)."""
  if parent_pid is not None:
    _exit_when_orphaned(parent_pid)
  gin.parse_config(config_str)
  train_eval(root_dir=root_dir, job=functools.partial(
      run_actor, task=task, replay_server=replay_server, root_dir=root_dir))


class _ActorThread(threading.Thread):

  def __init__(self, settings, task, replay_server, root_dir, stop_event):
    super().__init__(name=f'r2d2_actor_{task}', daemon=True)
    self._args = (settings, task, replay_server, root_dir, stop_event)
    self.error = None

  def run(self):
    try:
      run_actor(*self._args)
    except Exception as e:  # pylint: disable=broad-except
      self.error = e
      logging.exception('Actor thread %s failed.', self.name)


@gin.configurable(module='r2d2')
def train_eval(
    root_dir: Optional[str],
    env_loader: Callable[..., py_environment.PyEnvironment] = REQUIRED,
    agent_fn: Callable[..., Any] = REQUIRED,
    num_env_steps: int = REQUIRED,
    seed: int = REQUIRED,
    num_actors: int = REQUIRED,
    envs_per_actor: int = 1,
    batch_size: int = REQUIRED,
    replay_capacity: int = REQUIRED,
    samples_per_insert: float = REQUIRED,
    min_size_to_sample: int = REQUIRED,
    priority_exponent: float = REQUIRED,
    eval_interval: int = REQUIRED,
    num_eval_episodes: int = REQUIRED,
    checkpoint_interval: int = REQUIRED,
    actor_mode: str = 'thread',
    log_interval: int = 10_000,
    summary_interval: int = 100,
    train_steps_per_iteration: int = 10,
    variable_push_period: int = 10,
    actor_update_period: int = 400,
    actor_priorities: bool = True,
    sample_timeout_seconds: float = 60.0,
    shutdown_timeout_seconds: float = 30.0,
    max_checkpoints_to_keep: int = 3,
    demonstrations: Optional[Any] = None,
    eval_success_threshold: Optional[float] = None,
    job: Optional[Callable[[Settings], Any]] = None,
) -> Any:
  """R2D2 on one machine: Reverb server, actors and learner in one run.

  Args:
    root_dir: run directory (WORKSPACE.md layout, plus actors/<i>/ actor
      summaries); resumes from its latest checkpoint.
    env_loader: `env_loader(seed=...)` -> PyEnvironment; actor slot j
      (see `envs_per_actor`) gets seed `seed + j`, eval env j
      `seed + 1000003 + j`.
    agent_fn: `agent_fn(time_step_spec=, action_spec=, train_step_counter=)`
      -> initialized `R2D2Agent`, e.g. `@r2d2.r2d2_agent_fn`.
    num_env_steps: stop once the actors together took this many env steps.
    seed: seeds TF ops and environments.
    num_actors: actor threads or processes.
    envs_per_actor: environments each actor steps as one batch. Env k of
      actor i is the paper's actor j = i * envs_per_actor + k, exploring
      with 0.4^(1 + 7 j / (N - 1)), N = num_actors * envs_per_actor; its
      seed is `seed + j`.
    batch_size: sequences per learner step (paper: 64).
    replay_capacity: sequences in the replay table (FIFO eviction).
    samples_per_insert: sequences sampled per sequence inserted
      (`SampleToInsertRatio`).
    min_size_to_sample: sequences in replay before the learner starts.
    priority_exponent: alpha of prioritized sampling (paper: 0.9).
    eval_interval: greedy evaluation every this many env steps (and at the
      end).
    num_eval_episodes: episodes per evaluation (one per eval env).
    checkpoint_interval: checkpoint + policy export every this many env
      steps (and at the end).
    actor_mode: 'thread' (actors as threads of this process) or 'process'
      (spawned subprocesses that parse this gin config).
    log_interval: progress log line every this many env steps.
    summary_interval: train/ summaries every this many learner steps.
    train_steps_per_iteration: learner steps between reads of the actors'
      progress reports.
    variable_push_period: learner steps between weight pushes.
    actor_update_period: env steps between an actor's weight pulls (and
      progress reports).
    actor_priorities: initial priorities from the actor's TD errors (paper)
      instead of a constant.
    sample_timeout_seconds: longest wait for a sample before the learner
      checks the actors' health.
    shutdown_timeout_seconds: how long a finished learner waits for actors
      to stop.
    max_checkpoints_to_keep: older checkpoints are deleted.
    demonstrations: R2D3: an `r2d3.Demonstrations` (demonstration table,
      mixed batches, pre-training; `experiments.r2d3`); None for R2D2.
    eval_success_threshold: if set, evaluations also report
      `SuccessRate`, the fraction of episodes whose return exceeds it
      (MiniGrid: 0, reward only at the goal).
    job: if set, called with the `Settings` instead of running (what the
      multi-machine binaries do, see module doc).

  Returns:
    The final evaluation {'AverageReturn', 'AverageEpisodeLength',
    'EnvironmentSteps'} (+ 'SuccessRate'), or what `job` returns.
  """
  settings = Settings(
      env_loader=env_loader, agent_fn=agent_fn, num_env_steps=num_env_steps,
      seed=seed, num_actors=num_actors, envs_per_actor=envs_per_actor,
      batch_size=batch_size,
      replay_capacity=replay_capacity, samples_per_insert=samples_per_insert,
      min_size_to_sample=min_size_to_sample,
      priority_exponent=priority_exponent, eval_interval=eval_interval,
      num_eval_episodes=num_eval_episodes,
      checkpoint_interval=checkpoint_interval, log_interval=log_interval,
      summary_interval=summary_interval,
      train_steps_per_iteration=train_steps_per_iteration,
      variable_push_period=variable_push_period,
      actor_update_period=actor_update_period,
      actor_priorities=actor_priorities,
      sample_timeout_seconds=sample_timeout_seconds,
      shutdown_timeout_seconds=shutdown_timeout_seconds,
      max_checkpoints_to_keep=max_checkpoints_to_keep,
      demonstrations=demonstrations,
      eval_success_threshold=eval_success_threshold)
  if num_actors < 1:
    raise ValueError(f'num_actors must be >= 1, got {num_actors}.')
  if envs_per_actor < 1:
    raise ValueError(f'envs_per_actor must be >= 1, got {envs_per_actor}.')
  if actor_mode not in ('thread', 'process'):
    raise ValueError(
        f"actor_mode must be 'thread' or 'process', got {actor_mode!r}.")
  if job is not None:
    return job(settings)

  if demonstrations is not None:
    # Before any actor starts: actors block until the learner's first
    # weights, so a bad file found by the learner would keep them waiting.
    env = env_loader(seed=seed)
    try:
      demonstrations.check_file(env.time_step_spec(), env.action_spec(),
                                getattr(env, 'env_id', None))
    finally:
      env.close()
  server = make_replay_server(settings)
  address = f'localhost:{server.port}'
  stop_event = threading.Event()
  if actor_mode == 'thread':
    actors = [_ActorThread(settings, task, address, root_dir, stop_event)
              for task in range(num_actors)]
  else:
    context = multiprocessing.get_context('spawn')
    config_str = gin.config_str()
    actors = [
        context.Process(target=_actor_process_main,
                        args=(config_str, task, address, root_dir,
                              os.getpid()),
                        name=f'r2d2_actor_{task}', daemon=True)
        for task in range(num_actors)]
  for actor_runner in actors:
    actor_runner.start()

  def health_check():
    for actor_runner in actors:
      error = getattr(actor_runner, 'error', None)
      if error is not None:
        raise RuntimeError(f'{actor_runner.name} failed: {error!r}') from error
      if not actor_runner.is_alive():
        raise RuntimeError(
            f'{actor_runner.name} exited before the learner finished '
            f'(exit code {getattr(actor_runner, "exitcode", None)}).')

  try:
    return run_learner(settings, address, root_dir, health_check=health_check)
  finally:
    stop_event.set()
    for actor_runner in actors:
      actor_runner.join(timeout=shutdown_timeout_seconds)
      if isinstance(actor_runner, multiprocessing.process.BaseProcess):
        if actor_runner.is_alive():
          actor_runner.terminate()
          actor_runner.join(timeout=10)
    server.stop()


def run_job(gin_files, gin_bindings, job):
  """What the multi-machine binaries do: parse gin, run `job(settings)`.

  A bad gin file or binding prints gin's message and exits with code 2,
  like train/train_eval.py.
  """
  # Imported here: runner registers every experiment module, r2d2 included.
  from tfa_explore.experiments import runner  # pylint: disable=g-import-not-at-top
  try:
    runner.parse_gin(gin_files, gin_bindings)
    try:
      return train_eval(root_dir=None, job=job)
    except RuntimeError as e:
      if 'Required bindings for' in str(e):
        raise runner.ConfigError(f'Missing gin binding: {e}') from e
      raise
  except runner.ConfigError as e:
    logging.error('%s', e)
    print(f'ERROR: {e}', file=sys.stderr)
    sys.exit(runner.CONFIG_ERROR_EXIT_CODE)
