"""The replay strategy: which tables a run has and how the learner samples.

Acme's builder answers "which tables, which dataset, which adder"; here
the part of that answer that differs between R2D2 and R2D3 is one object,
a `ReplayStrategy`, so the learner, the actors and the server have no
demonstration branches:

* `AgentReplay` (R2D2): the agent's own prioritized sequences only;
* `experiments.r2d3.DemonstrationReplay` (R2D3): the same agent table plus
  demonstration tables, mixed at ratio rho (R2D2 is the mix with rho = 0).

Every method is called in one role: the server builds `make_tables`, the
launcher calls `check_setup` before anything starts, actors take
`writer_kwargs`, and the learner the rest, in the order listed.
"""

import abc
import time
from typing import Any, Dict, List, Mapping, Optional

import reverb
import tensorflow as tf
from tf_agents.replay_buffers import reverb_replay_buffer
from tf_agents.specs import tensor_spec

from tfa_explore import errors
from tfa_explore.agents.r2d2 import inputs as r2d2_inputs
from tfa_explore.replay import dataset as replay_dataset
from tfa_explore.replay import priority_updater
from tfa_explore.replay import tables

# The agent's own sequences (every strategy has this table).
AGENT_TABLE = 'r2d2_sequences'


class ReplayStrategy(abc.ABC):
  """The replay side of an R2D2-family run; see the module docstring."""

  # --- server ---------------------------------------------------------------

  @abc.abstractmethod
  def make_tables(self, agent, settings) -> List[reverb.Table]:
    """The replay tables (the agent table first), from the agent's specs."""

  @abc.abstractmethod
  def check_server(self, server_info: Mapping[str, Any], agent) -> None:
    """Raises ValueError unless the server has fitting replay tables."""

  # --- launcher -------------------------------------------------------------

  @abc.abstractmethod
  def check_setup(self, time_step_spec, action_spec,
                  env_id: Optional[str]) -> None:
    """Cheap checks of the strategy's inputs before any process starts.

    Raises:
      errors.ConfigError: naming the gin parameter at fault.
    """

  # --- actors ---------------------------------------------------------------

  @abc.abstractmethod
  def writer_kwargs(self) -> Dict[str, Any]:
    """Extra `BatchedSequenceWriter` arguments of the actors."""

  # --- learner --------------------------------------------------------------

  @abc.abstractmethod
  def check_agent(self, agent) -> None:
    """Raises errors.ConfigError unless `agent` can train on this replay."""

  @abc.abstractmethod
  def learner_state(self) -> Dict[str, tf.Variable]:
    """New variables the learner checkpoints for this strategy, by name."""

  @abc.abstractmethod
  def prepare(self, client: reverb.Client, agent,
              env_id: Optional[str]) -> None:
    """Makes the tables ready before the learner samples (e.g. fills them)."""

  @abc.abstractmethod
  def pretrain(self, agent, server_address: str, batch_size: int,
               learner_state: Dict[str, tf.Variable]):
    """Learner steps before the actors get their first weights.

    Returns:
      The last `LossInfo`, or None if there was nothing to do.
    """

  @abc.abstractmethod
  def dataset(self, server_address: str, agent, batch_size: int, seed: int,
              rate_limiter_timeout_ms: int) -> tf.data.Dataset:
    """The learner's `(experience, sample_info)` batches."""

  @abc.abstractmethod
  def priority_updater(self, server_address: str):
    """`updater((experience, sample_info), loss_info)` writes priorities."""

  @abc.abstractmethod
  def summaries(self, server_info: Mapping[str, Any]) -> Dict[str, float]:
    """`Replay/*` values: table sizes and cumulative insert/sample counts."""


class AgentReplay(ReplayStrategy):
  """R2D2: prioritized sequences of the agent's own experience.

  The table's `SampleToInsertRatio` (`samples_per_insert`) paces the
  learner against the actors; new priorities go back by key.
  """

  def __repr__(self):
    return 'AgentReplay()'

  def make_tables(self, agent, settings):
    return [tables.make_prioritized_table(
        AGENT_TABLE,
        max_size=settings.replay_capacity,
        collect_data_spec=agent.collect_data_spec,
        sequence_length=agent.sequence_config.sequence_length,
        samples_per_insert=settings.samples_per_insert,
        min_size_to_sample=settings.min_size_to_sample,
        priority_exponent=settings.priority_exponent)]

  def check_server(self, server_info, agent):
    tables.check_sequence_tables(
        server_info, [AGENT_TABLE], agent.collect_data_spec,
        agent.sequence_config.sequence_length,
        missing_hint=('start train/replay_server.py with the same gin '
                      'file.'))

  def check_setup(self, time_step_spec, action_spec, env_id):
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

  def writer_kwargs(self):
    return {}

  def check_agent(self, agent):
    del agent  # Any R2D2Agent trains on its own sequences.

  def learner_state(self):
    return {}

  def prepare(self, client, agent, env_id):
    del client, agent, env_id  # The actors fill the agent table.

  def pretrain(self, agent, server_address, batch_size, learner_state):
    del agent, server_address, batch_size, learner_state
    return None

  def dataset(self, server_address, agent, batch_size, seed,
              rate_limiter_timeout_ms):
    del seed  # Reverb's prioritized sampling is not seeded.
    return replay_dataset.replay_dataset(
        agent_table_buffer(server_address, agent, rate_limiter_timeout_ms),
        agent, batch_size)

  def priority_updater(self, server_address):
    return priority_updater.PriorityUpdater(server_address, AGENT_TABLE)

  def summaries(self, server_info):
    info = server_info[AGENT_TABLE]
    stats = info.rate_limiter_info
    return {'size': info.current_size,
            'inserted': stats.insert_stats.completed,
            'sampled': stats.sample_stats.completed}


def agent_table_buffer(server_address, agent, rate_limiter_timeout_ms):
  """TF-Agents' `ReverbReplayBuffer` over the agent table."""
  return reverb_replay_buffer.ReverbReplayBuffer(
      agent.collect_data_spec, AGENT_TABLE,
      agent.sequence_config.sequence_length, server_address=server_address,
      rate_limiter_timeout_ms=rate_limiter_timeout_ms)


class ReplayRates:
  """`Replay/*` values of a strategy plus insert/sample rates per second."""

  def __init__(self, client: reverb.Client, strategy: ReplayStrategy):
    self._client = client
    self._strategy = strategy
    self._previous = None

  def __call__(self) -> Dict[str, float]:
    values = self._strategy.summaries(self._client.server_info())
    now = time.time()
    current = (now, values['inserted'], values['sampled'])
    if self._previous is not None:
      elapsed = max(now - self._previous[0], 1e-9)
      values['inserts_per_second'] = (current[1] - self._previous[1]) / elapsed
      values['samples_per_second'] = (current[2] - self._previous[2]) / elapsed
    self._previous = current
    return values
