"""The replay strategy: which tables a run has and how the learner samples.

Acme's builder answers "which tables, which dataset, which adder"; here
the part of that answer that differs between R2D2 and R2D3 is one object,
a `ReplayStrategy`, so the learner, the actors and the server have no
demonstration branches:

* `AgentReplay` (R2D2): the agent's own prioritized sequences only;
* `experiments.r2d3.DemonstrationReplay` (R2D3): the same agent table plus
  demonstration tables, mixed at ratio rho (R2D2 is the mix with rho = 0).

Each member serves one role: the launcher calls `check` before anything
starts and the builder checks the agent against `agent_class`; the server
builds `make_tables` (and every role checks a live server against the same
tables); actors take `item_listeners`; the learner calls `prepare`, then
samples from `sampling`. What is the same for every strategy (checking a
live server, the `Replay/*` values of each table) is done here, once.
"""

import abc
import time
from typing import Any, Dict, List, Optional, Tuple

import reverb
import tensorflow as tf
from tf_agents.specs import tensor_spec

from tfa_explore import errors
from tfa_explore.agents.r2d2 import agent as r2d2_agent
from tfa_explore.agents.r2d2 import inputs as r2d2_inputs
from tfa_explore.replay import dataset as replay_dataset
from tfa_explore.replay import priority_updater
from tfa_explore.replay import sequence_writer
from tfa_explore.replay import tables

# The agent's own sequences (every strategy has this table, first).
AGENT_TABLE = 'r2d2_sequences'


class ReplayStrategy(abc.ABC):
  """The replay side of an R2D2-family run; see the module docstring."""

  # The agent class this replay's batches train (the builder checks it).
  agent_class = r2d2_agent.R2D2Agent

  @abc.abstractmethod
  def check(self, time_step_spec, action_spec,
            env_id: Optional[str]) -> None:
    """Cheap checks of the strategy's inputs before any process starts.

    Raises:
      errors.ConfigError: naming the gin parameter at fault.
    """

  @abc.abstractmethod
  def make_tables(self, agent, settings) -> List[reverb.Table]:
    """The replay tables (the agent table first), from the agent's specs."""

  @abc.abstractmethod
  def item_listeners(
      self, client: reverb.Client, agent, num_envs: int
  ) -> Optional[List[sequence_writer.ItemListener]]:
    """What else an actor's envs do with what they write: one
    `ItemListener` per env of its `BatchedSequenceWriter`, or None."""

  @abc.abstractmethod
  def prepare(self, client: reverb.Client, server_address: str, agent,
              env_id: Optional[str], batch_size: int):
    """Makes the tables ready and trains what comes before acting.

    Called by the learner once per start, after its checkpoint is restored
    and before `sampling` (R2D3 writes the demonstrations and pre-trains).

    Returns:
      The last `LossInfo` of steps taken before acting, or None.
    """

  @abc.abstractmethod
  def sampling(self, server_address: str, agent, batch_size: int, seed: int,
               rate_limiter_timeout_ms: int
               ) -> Tuple[tf.data.Dataset, Any]:
    """The learner's `(experience, sample_info)` batches and the updater
    `updater((experience, sample_info), loss_info)` that writes their new
    priorities."""


class AgentReplay(ReplayStrategy):
  """R2D2: prioritized sequences of the agent's own experience.

  The table's `SampleToInsertRatio` (`samples_per_insert`) paces the
  learner against the actors; new priorities go back by key.
  """

  def __repr__(self):
    return 'AgentReplay()'

  def check(self, time_step_spec, action_spec, env_id):
    """The env's actions must be one discrete scalar, as R2D2's Q-network's.

    Checked here, before any process starts, so that a continuous env is
    one clear error rather than the agent's ValueError in every process.
    Subclasses call this first.
    """
    del time_step_spec  # Any observation the network's torso takes.
    try:
      r2d2_inputs.check_action_spec(tensor_spec.from_spec(action_spec))
    except ValueError as e:
      env = repr(env_id) if env_id else 'the env'
      spec = ' '.join(repr(action_spec).split())
      raise errors.ConfigError(
          'r2d2.Settings.env_loader: R2D2 needs a discrete action space (one '
          f'scalar integer action), but {env} has action spec {spec}.'
      ) from e

  def make_tables(self, agent, settings):
    return [tables.make_prioritized_table(
        AGENT_TABLE,
        max_size=settings.replay_capacity,
        collect_data_spec=agent.collect_data_spec,
        sequence_length=agent.sequence_config.sequence_length,
        samples_per_insert=settings.samples_per_insert,
        min_size_to_sample=settings.min_size_to_sample,
        priority_exponent=settings.priority_exponent)]

  def item_listeners(self, client, agent, num_envs):
    del client, agent, num_envs  # The agent table only.
    return None

  def prepare(self, client, server_address, agent, env_id, batch_size):
    del client, server_address, agent, env_id, batch_size  # Actors fill it.
    return None

  def sampling(self, server_address, agent, batch_size, seed,
               rate_limiter_timeout_ms):
    del seed  # Reverb's prioritized sampling is not seeded.
    dataset = replay_dataset.sampled_batches(
        server_address, AGENT_TABLE, agent, batch_size,
        rate_limiter_timeout_ms=rate_limiter_timeout_ms)
    return dataset, priority_updater.PriorityUpdater(server_address,
                                                     AGENT_TABLE)


def check_agent(strategy: ReplayStrategy, agent) -> None:
  """Raises errors.ConfigError unless `agent` trains on `strategy`'s batches."""
  if not isinstance(agent, strategy.agent_class):
    raise errors.ConfigError(
        f'r2d2.Settings.replay = {type(strategy).__name__}(...) needs an '
        f'{strategy.agent_class.__name__}: bind r2d2.Settings.agent_fn to a '
        f'factory that builds one; it built an {type(agent).__name__}.')


def check_server(strategy: ReplayStrategy, server_info, agent,
                 settings) -> None:
  """Raises ValueError unless the server has the strategy's tables, each
  holding the agent's sequences."""
  tables.check_sequence_tables(
      server_info, table_names(strategy, agent, settings),
      agent.collect_data_spec, agent.sequence_config.sequence_length,
      missing_hint=(f'the gin config sets r2d2.Settings.replay = '
                    f'{strategy!r}; start train/replay_server.py with the '
                    'same gin file.'))


def table_names(strategy: ReplayStrategy, agent, settings) -> List[str]:
  """The names of `strategy.make_tables`, the agent table first."""
  return [table.name for table in strategy.make_tables(agent, settings)]


class ReplayRates:
  """`Replay/*` values of every table plus insert/sample rates per second.

  The agent table's are `size`, `inserted` and `sampled` (cumulative), the
  rates from them; another table's are `<table name>/size`, ... .
  """

  def __init__(self, client: reverb.Client, names: List[str]):
    self._client = client
    self._names = list(names)
    self._previous = None

  def __call__(self) -> Dict[str, float]:
    info = self._client.server_info()
    values = {}
    for name in self._names:
      stats = info[name].rate_limiter_info
      prefix = '' if name == AGENT_TABLE else name + '/'
      values.update({f'{prefix}size': info[name].current_size,
                     f'{prefix}inserted': stats.insert_stats.completed,
                     f'{prefix}sampled': stats.sample_stats.completed})
    now = time.time()
    current = (now, values['inserted'], values['sampled'])
    if self._previous is not None:
      elapsed = max(now - self._previous[0], 1e-9)
      values['inserts_per_second'] = (current[1] - self._previous[1]) / elapsed
      values['samples_per_second'] = (current[2] - self._previous[2]) / elapsed
    self._previous = current
    return values
