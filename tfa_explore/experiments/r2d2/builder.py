"""The R2D2 family's builder: the agent, the tables, and what reads them.

Acme's seam in our words: the builder answers "which agent, which tables,
which dataset, which writer, which policy"; the actor and the learner only
run loops over what it gives them. The replay strategy (`replay.py`) holds
the part of those answers that differs between R2D2 and R2D3.

The server has, besides the strategy's replay tables:

* `VARIABLES_TABLE`: one item, the learner's latest weights plus its
  counters (`train_step`, `env_steps`, `finished`), read by the actors
  (`SharedVariables`);
* `PROGRESS_TABLE`: a queue of small actor reports (env steps since the
  last report, a finished episode with its return, a stop marker).
"""

from typing import Any, Dict, List, Optional, Tuple

from absl import logging
import gin
import numpy as np
import reverb
import tensorflow as tf
from tf_agents.specs import tensor_spec

from tfa_explore import errors
from tfa_explore.agents.r2d2 import agent as r2d2_agent
from tfa_explore.agents.r2d2 import inputs as r2d2_inputs
from tfa_explore.experiments import run_kit
from tfa_explore.experiments.distributed import variables as variables_lib
from tfa_explore.experiments.r2d2 import replay as replay_lib
from tfa_explore.networks import recurrent_dueling_q_network as rdqn
from tfa_explore.replay import sequence_writer
from tfa_explore.replay import tables
from tfa_explore.utils import optimizers

REQUIRED = gin.REQUIRED

VARIABLES_TABLE = variables_lib.VARIABLES_TABLE
# The learner's `SharedState` in `VARIABLES_TABLE` (push, pull).
SharedVariables = variables_lib.SharedVariables
PROGRESS_TABLE = 'actor_progress'
# Reports the progress queue holds before actors block on it; the learner
# drains it after every few train steps.
PROGRESS_QUEUE_SIZE = 100_000


# The specs and the counter come from the loop; `agent_class` and
# `agent_kwargs` are for other factories that build a subclass on the same
# network and hyperparameters (`r2d3.r2d3_agent_fn`). None of them is a
# gin parameter: a gin file binds the R2D2 ones here and the subclass's own
# in its factory.
@gin.configurable(module='r2d2', denylist=[
    'time_step_spec', 'action_spec', 'train_step_counter', 'agent_class',
    'agent_kwargs'])
def r2d2_agent_fn(time_step_spec,
                  action_spec,
                  train_step_counter,
                  sequence_config=REQUIRED,
                  lstm_size: Optional[int] = REQUIRED,
                  torso_fc_layer_params=REQUIRED,
                  dueling_fc_layer_params=REQUIRED,
                  conv_layer_params=None,
                  image_scale: Optional[float] = None,
                  learning_rate: float = REQUIRED,
                  adam_epsilon: float = REQUIRED,
                  learning_rate_decay_steps: Optional[int] = None,
                  n_step: int = REQUIRED,
                  gamma: float = REQUIRED,
                  target_update_period: int = REQUIRED,
                  importance_sampling_exponent: float = REQUIRED,
                  priority_max_weight: float = REQUIRED,
                  gradient_clipping: Optional[float] = REQUIRED,
                  use_stored_state: bool = True,
                  exploration=None,
                  q_network_fn=None,
                  jit_compile: bool = False,
                  static_unroll: bool = True,
                  debug_summaries: bool = True,
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
  it constant, as the paper. `exploration`: None, or called with
  `observation_spec=` and `action_spec=` to build the agent's
  `ExplorationBonus`, e.g. `@intrinsic.intrinsic_q_bonus` or
  `@intrinsic.ngu_bonus`; the network then has the second head, Q_I, that
  learns the bonus's reward. `q_network_fn`: None builds that
  `RecurrentDuelingQNetwork`; else it is called with the input and action
  specs and the network sizes below and builds its own heads, e.g.
  `@bootstrap.ensemble_q_network` for `@bootstrap.bootstrapped_heads`.
  `static_unroll`: see
  `RecurrentDuelingQNetwork` (False: the `tf.while_loop` everywhere;
  `jit_compile` keeps the loop in the compiled learner step).

  Raises:
    ValueError: if the action spec is not one discrete scalar.
    errors.ConfigError: a bad setting of the exploration bonus.
  """
  time_step_spec = tensor_spec.from_spec(time_step_spec)
  # Checked before the network is built, whose own error is less direct.
  action_spec = r2d2_inputs.check_action_spec(
      tensor_spec.from_spec(action_spec))
  network_kwargs = dict(
      torso_fc_layer_params=tuple(torso_fc_layer_params),
      lstm_size=lstm_size,
      dueling_fc_layer_params=tuple(dueling_fc_layer_params),
      conv_layer_params=conv_layer_params,
      image_scale=image_scale,
      static_unroll=static_unroll)
  input_spec = rdqn.make_input_spec(time_step_spec.observation, action_spec,
                                    reward_dtype=time_step_spec.reward.dtype)
  if q_network_fn is None:
    network = rdqn.RecurrentDuelingQNetwork(
        input_spec, action_spec, intrinsic_head=exploration is not None,
        **network_kwargs)
  else:
    with errors.values_of('r2d2.r2d2_agent_fn.q_network_fn'):
      network = q_network_fn(input_spec, action_spec, **network_kwargs)
  # The Q network's variables first, so a seed gives it the same initial
  # weights with and without a bonus.
  network.create_variables()
  bonus = None
  if exploration:
    # The bonus's constructors check their settings once, naming each
    # one's gin binding; here a bad value becomes the user's ConfigError.
    name = getattr(exploration, '__name__', repr(exploration))
    with errors.values_of(f'r2d2.r2d2_agent_fn.exploration ({name})'):
      bonus = exploration(observation_spec=time_step_spec.observation,
                          action_spec=action_spec)
  with errors.values_of('r2d2.r2d2_agent_fn'):
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
        exploration=bonus,
        gradient_clipping=gradient_clipping,
        jit_compile=jit_compile,
        debug_summaries=debug_summaries,
        train_step_counter=train_step_counter,
        **(agent_kwargs or {}))
  agent.initialize()
  return agent


def check_sequence_fits(sequence_config, episode_limit: Optional[int]) -> None:
  """Raises ConfigError if burn-in + trace exceed the env's episode limit.

  The cutter pads every episode to whole sequences, so such a run would
  still store items, but none would hold burn-in and trace of real steps
  of one episode: the settings cannot mean what they say. An env that
  declares no limit (`max_episode_steps` None or absent) is not checked.
  """
  if episode_limit is None:
    return
  steps = sequence_config.burn_in_steps + sequence_config.trace_length
  if steps > episode_limit:
    raise errors.ConfigError(
        f'SequenceConfig.burn_in_steps + trace_length = '
        f'{sequence_config.burn_in_steps} + {sequence_config.trace_length} '
        f'= {steps} must be <= the env\'s episode limit of {episode_limit} '
        'steps (max_episode_steps): no sequence could hold burn-in and trace '
        'of one episode.')


class SharedState(tf.Module):
  """What the learner publishes to the actors: weights and counters."""

  def __init__(self, agent):
    super().__init__(name='r2d2_shared_state')
    self.agent = agent
    self.env_steps = tf.Variable(0, dtype=tf.int64, name='env_steps')
    self.finished = tf.Variable(False, name='finished')

  def nest(self) -> Dict[str, Any]:
    nest = {
        'q_network': list(self.agent.q_network.variables),
        'train_step': self.agent.train_step_counter,
        'env_steps': self.env_steps,
        'finished': self.finished,
    }
    # What the exploring policy reads besides the Q-network (NGU's
    # embedding); absent otherwise, so the table holds no empty entry.
    acting = list(self.agent.exploration.acting_variables)
    if acting:
      nest['exploration'] = acting
    return nest

  def signature(self) -> Dict[str, Any]:
    return variables_lib.signature(self)


def progress_signature() -> Dict[str, tf.TensorSpec]:
  return {
      'task': tf.TensorSpec((), tf.int64),
      'slot': tf.TensorSpec((), tf.int64),  # epsilon slot of the episode
      'env_steps': tf.TensorSpec((), tf.int64),  # since the last report
      'episode_return': tf.TensorSpec((), tf.float32),
      'episode_length': tf.TensorSpec((), tf.int64),  # 0: no episode ended
      'stopped': tf.TensorSpec((), tf.bool),
  }


class Builder:
  """Builds a run's pieces from its `Settings`."""

  def __init__(self, settings):
    self.settings = settings
    self.replay = settings.replay

  def check_setup(self) -> None:
    """The replay strategy's checks of the env and its inputs (one env).

    Raises:
      errors.ConfigError: e.g. a continuous action space, a demonstration
        file that does not fit (R2D3 reads all of it).
    """
    specs = run_kit.env_specs(self.settings)
    self.replay.check(specs.time_step_spec, specs.action_spec, specs.env_id)

  def make_agent(self, train_step: Optional[tf.Variable] = None,
                 env=None) -> Tuple[Optional[str], Any]:
    """(env id or None, agent) built from the specs of `env`.

    Without `env`, one env is built (seed `seed`) for its specs and closed.
    """
    settings = self.settings
    specs = run_kit.env_specs(settings, env)
    time_step_spec, action_spec = specs.tensor_specs()
    if train_step is None:
      train_step = tf.Variable(0, dtype=tf.int64, name='train_step')
    # Gin builds the agent's bound objects (`@r2d2/SequenceConfig()`)
    # before the factory's own checks: their ValueErrors name their
    # binding and are the user's error too.
    with errors.values_of('r2d2.Settings.agent_fn'):
      agent = settings.agent_fn(time_step_spec=time_step_spec,
                                action_spec=action_spec,
                                train_step_counter=train_step)
    if not isinstance(agent, r2d2_agent.R2D2Agent):
      raise TypeError(
          f'agent_fn must build an R2D2Agent, got {type(agent).__name__}.')
    replay_lib.check_agent(self.replay, agent)
    check_sequence_fits(agent.sequence_config, specs.max_episode_steps)
    return specs.env_id, agent

  def make_tables(self, agent) -> List[reverb.Table]:
    """The server's tables: the strategy's, variables and progress."""
    return self.replay.make_tables(agent, self.settings) + [
        variables_lib.variables_table(SharedState(agent)),
        reverb.Table.queue(PROGRESS_TABLE, max_size=PROGRESS_QUEUE_SIZE,
                           signature=progress_signature()),
    ]

  def make_replay_server(self, port: Optional[int] = None,
                         checkpoint_dir: Optional[str] = None
                         ) -> reverb.Server:
    """A Reverb server with the run's tables (port None: any free one).

    Args:
      port: the port to serve on; None picks a free one.
      checkpoint_dir: where the tables are checkpointed (the learner asks
        for a checkpoint at each of its own, `Learner.checkpoint`). A
        server started on a directory that holds a checkpoint restores
        every table from the newest complete one: items, priorities and
        the rate limiters' counts. Reverb writes each checkpoint into a new
        directory and marks it complete last (a `DONE` file), so a write
        cut off by a kill never replaces the last good one. None: Reverb's
        temporary directory, nothing restored.
    """
    # The agent is built only for its specs, but its weight initializers
    # are random ops: under op determinism they need a global seed.
    tf.random.set_seed(self.settings.seed)
    _, agent = self.make_agent()
    server, restored_from = tables.start_server(
        lambda: self.make_tables(agent), port, checkpoint_dir)
    client = reverb.Client(f'localhost:{server.port}')
    info = client.server_info()
    if restored_from is not None:
      # Reports in the restored queue may have been read by the learner
      # after the checkpoint; reading them again would count those env
      # steps twice. Steps reported since then are lost instead (at most
      # `actor_update_period` per actor and episode end).
      client.reset(PROGRESS_TABLE)
      if info[VARIABLES_TABLE].current_size and _says_finished(client):
        # A finished run continued with a larger budget: its actors would
        # stop at once. They wait for the learner's first push instead.
        client.reset(VARIABLES_TABLE)
      logging.info(
          'Reverb tables restored from %s: %s.', restored_from,
          ', '.join(f'{name} {table.current_size:,} items'
                    for name, table in sorted(info.items())
                    if name not in (PROGRESS_TABLE, VARIABLES_TABLE)))
    logging.info('Reverb server on port %d with tables %s.', server.port,
                 list(info))
    return server

  def check_server(self, client: reverb.Client,
                   shared_state: SharedState) -> None:
    """Raises ValueError unless every table this run uses fits the agent."""
    info = client.server_info(timeout=60)
    replay_lib.check_server(self.replay, info, shared_state.agent,
                            self.settings)
    missing = [name for name in (VARIABLES_TABLE, PROGRESS_TABLE)
               if name not in info]
    if missing:
      raise ValueError(
          f'Reverb server has no table(s) {missing}; it must be started by '
          'train/replay_server.py with the same gin file.')
    variables_lib.check_variables_table(info, shared_state)
    queue_signature = info[PROGRESS_TABLE].signature
    if queue_signature is None or set(queue_signature) != set(
        progress_signature()):
      raise ValueError(
          f'Reverb table {PROGRESS_TABLE!r} has the signature '
          f'{queue_signature}, not that of this version\'s actor reports; '
          'start the replay server with this version of tfa_explore.')

  def sequence_writer(self, client: reverb.Client, agent, num_envs: int):
    """The actor's writer of overlapping sequences (per env, stored as
    `r2d2.Settings.sequence_storage` says)."""
    return sequence_writer.BatchedSequenceWriter(
        client, replay_lib.AGENT_TABLE, agent.sequence_config, num_envs,
        agent.collect_data_spec,
        priorities_fn=(agent.initial_priorities_fn()
                       if self.settings.actor_priorities else None),
        storage=self.settings.sequence_storage,
        listeners=self.replay.item_listeners(client, agent, num_envs))

  def actor_policy(self, agent, task: int):
    """Actor `task`'s epsilon-greedy policy over its batch of envs."""
    return agent.actor_collect_policy(task, self.settings.num_actors,
                                      self.settings.envs_per_actor)


def _says_finished(client: reverb.Client) -> bool:
  """Whether the weights in `VARIABLES_TABLE` are those of a finished run."""
  sample = next(iter(client.sample(VARIABLES_TABLE, num_samples=1,
                                   emit_timesteps=False,
                                   unpack_as_table_signature=True)))
  return bool(sample.data['finished'])


def progress_report(task, env_steps, slot=-1, episode_return=0.0,
                    episode_length=0, stopped=False) -> Dict[str, np.ndarray]:
  """One `PROGRESS_TABLE` item."""
  return {
      'task': np.int64(task),
      'slot': np.int64(slot),
      'env_steps': np.int64(env_steps),
      'episode_return': np.float32(episode_return),
      'episode_length': np.int64(episode_length),
      'stopped': np.bool_(stopped),
  }
