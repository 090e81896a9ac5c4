"""R2D3: the R2D2 run with a demonstration replay strategy.

R2D3 (Paine et al. 2019) runs on the R2D2 family of `experiments.r2d2`
(replay server, actors, learner, the three multi-machine binaries); a gin
file turns it on with two bindings:

    r2d2.Settings.agent_fn = @r2d3.r2d3_agent_fn
    r2d2.Settings.replay = @r2d3.DemonstrationReplay()

`DemonstrationReplay` is R2D2's `AgentReplay` (the agent table) plus:

* server (`make_tables`): one more table, `DEMO_TABLE`, prioritized,
  with the agent's sequence signature (`replay.mixed_dataset
  .make_demo_table`);
* learner, before acting (`prepare`): reads the demonstration file
  (`path`, checked against the agent's specs and env id) and, unless the
  table already holds exactly its sequences, writes them with
  `replay.demonstrations.write_to_table` (the actors' sequence cutting:
  zero initial state, burn-in front padding). So a restarted learner
  against a live server does not duplicate them, a restarted server gets
  them again, and neither actors nor the server need the file;
  then takes optional `pretrain_steps` learner steps on the
  demonstration table alone before the first weight push (DQfD's
  pre-training; Hester et al. 2018, Section 3). Pre-training is the
  learner's first training, so its checkpointed step counter says how many
  steps are done and a resume does not repeat them;
* learner, training (`sampling`): each batch element
  comes from the demonstration table with probability `demo_ratio` (rho)
  and from the agent table otherwise (`mixed_dataset`); new priorities go
  back to the table each element came from (`MixedPriorityUpdater`).

Actors never read demonstrations.

Agent successes (optional, `success_min_return`; a departure from the
paper, which samples demonstrations and the agent's own replay only): the
server gets a second demonstration-side table, `SUCCESS_TABLE` (FIFO, so
the newest successes replace the oldest), which the learner seeds with the
demonstrations; every actor environment copies each of its episodes whose
return reaches `success_min_return` into it (`replay.success_copies`);
a share `success_ratio` of the demonstration side of each batch comes from
it, with `is_demo` set, so the large-margin loss holds the agent's own
successful actions as it does the demonstrated ones (self-imitation, Oh et
al. 2018). Why: benchmarks/results/r2d3/history_2026-11-23_doorkey8x8.md,
"Why R2D3 falls back".

`r2d3_agent_fn` builds an `R2D3Agent` through `r2d2.r2d2_agent_fn`, so the
network and every R2D2 hyperparameter are bound on `r2d2.r2d2_agent_fn`
in both an R2D3 gin file and its R2D2 twin; only the DQfD loss weights are
bound here.
"""

import contextlib
import os
import time
from typing import Optional

from absl import logging
import gin


from tfa_explore import errors
from tfa_explore.agents.r2d3 import agent as r2d3_agent
from tfa_explore.experiments.r2d2 import builder
from tfa_explore.experiments.r2d2 import replay as replay_lib
from tfa_explore.replay import demonstrations as demonstrations_lib
from tfa_explore.replay import mixed_dataset
from tfa_explore.replay import success_copies

REQUIRED = gin.REQUIRED

DEMO_TABLE = 'r2d3_demonstrations'
SUCCESS_TABLE = 'r2d3_agent_successes'
# Where the demonstration file is configured, for error messages.
PATH_PARAMETER = 'r2d3.DemonstrationReplay.path'


@gin.configurable(module='r2d3', denylist=[
    'time_step_spec', 'action_spec', 'train_step_counter'])
def r2d3_agent_fn(time_step_spec,
                  action_spec,
                  train_step_counter,
                  margin: float = REQUIRED,
                  ntd_loss_weight: float = REQUIRED,
                  td1_loss_weight: float = REQUIRED,
                  margin_loss_weight: float = REQUIRED,
                  l2_loss_weight: float = REQUIRED):
  """An initialized `R2D3Agent` on `r2d2.r2d2_agent_fn`'s network.

  Everything R2D2 has (network, optimizer, sequences, n-step, target
  updates, priorities) comes from the `r2d2.r2d2_agent_fn` bindings; the
  arguments here are the DQfD terms, documented on `R2D3Agent`.
  """
  return builder.r2d2_agent_fn(
      time_step_spec=time_step_spec,
      action_spec=action_spec,
      train_step_counter=train_step_counter,
      agent_class=r2d3_agent.R2D3Agent,
      agent_kwargs=dict(margin=margin,
                        ntd_loss_weight=ntd_loss_weight,
                        td1_loss_weight=td1_loss_weight,
                        margin_loss_weight=margin_loss_weight,
                        l2_loss_weight=l2_loss_weight))


@gin.configurable(module='r2d3')
class DemonstrationReplay(replay_lib.AgentReplay):
  """R2D3's replay: agent and demonstration tables; see the module doc."""

  agent_class = r2d3_agent.R2D3Agent

  def __init__(self,
               path: str = REQUIRED,
               demo_ratio: float = REQUIRED,
               pretrain_steps: int = REQUIRED,
               table_capacity: int = REQUIRED,
               success_min_return: Optional[float] = None,
               success_ratio: float = 0.5,
               success_table_capacity: int = 10000):
    """Checks and stores the settings.

    Args:
      path: demonstration file (`train/collect_demonstrations.py`), read by
        the learner only.
      demo_ratio: rho, the probability that a batch element comes from the
        demonstration table (Paine et al. 2019, Section 3).
      pretrain_steps: learner steps on demonstrations alone before the
        actors get their first weights (0: none, as in R2D3).
      table_capacity: sequences the demonstration table holds; must be at
        least the file's sequence count (checked when filling).
      success_min_return: episode return from which the actors copy an
        episode into `SUCCESS_TABLE` (module doc); None (default, as the
        paper): no success table.
      success_ratio: share of the demonstration side of each batch (rho)
        drawn from `SUCCESS_TABLE`.
      success_table_capacity: sequences `SUCCESS_TABLE` holds (FIFO); at
        least the file's sequence count, which seeds it.

    Raises:
      ValueError: for a value out of range.
    """
    if not 0.0 <= demo_ratio <= 1.0:
      raise ValueError(f'demo_ratio must be in [0, 1], got {demo_ratio}.')
    if pretrain_steps < 0:
      raise ValueError(f'pretrain_steps must be >= 0, got {pretrain_steps}.')
    if table_capacity < 1:
      raise ValueError(f'table_capacity must be >= 1, got {table_capacity}.')
    if not 0.0 <= success_ratio <= 1.0:
      raise ValueError(
          f'success_ratio must be in [0, 1], got {success_ratio}.')
    if success_table_capacity < 1:
      raise ValueError('success_table_capacity must be >= 1, got '
                       f'{success_table_capacity}.')
    self.path = os.fspath(path)
    self.demo_ratio = float(demo_ratio)
    self.pretrain_steps = int(pretrain_steps)
    self.table_capacity = int(table_capacity)
    self.success_min_return = (None if success_min_return is None
                               else float(success_min_return))
    self.success_ratio = float(success_ratio)
    self.success_table_capacity = int(success_table_capacity)

  @property
  def uses_successes(self):
    return self.success_min_return is not None

  def __repr__(self):
    successes = ''
    if self.uses_successes:
      successes = (f', success_min_return={self.success_min_return}, '
                   f'success_ratio={self.success_ratio}, '
                   f'success_table_capacity={self.success_table_capacity}')
    return (f'DemonstrationReplay(path={self.path!r}, demo_ratio='
            f'{self.demo_ratio}, pretrain_steps={self.pretrain_steps}, '
            f'table_capacity={self.table_capacity}{successes})')

  def _demo_tables(self):
    return [DEMO_TABLE] + ([SUCCESS_TABLE] if self.uses_successes else [])

  # --- server ---------------------------------------------------------------

  def make_tables(self, agent, settings):
    """The agent table, the demonstration table (and the success table)."""
    capacities = {DEMO_TABLE: self.table_capacity,
                  SUCCESS_TABLE: self.success_table_capacity}
    return super().make_tables(agent, settings) + [
        mixed_dataset.make_demo_table(
            name, capacities[name], agent.collect_data_spec,
            agent.sequence_config.sequence_length,
            priority_exponent=settings.priority_exponent)
        for name in self._demo_tables()]

  # --- launcher and actors --------------------------------------------------

  def check(self, time_step_spec, action_spec, env_id):
    """R2D2's checks, then the whole demonstration file (`check_file`)."""
    super().check(time_step_spec, action_spec, env_id)
    self.check_file(time_step_spec, action_spec, env_id, episodes=True)

  def item_listeners(self, client, agent, num_envs):
    """Each env copies its successful episodes into `SUCCESS_TABLE`."""
    if not self.uses_successes:
      return None
    return [success_copies.SuccessCopies(
        client, SUCCESS_TABLE, agent.sequence_config, self.success_min_return,
        agent.collect_data_spec if index == 0 else None)
            for index in range(num_envs)]

  # --- the file -------------------------------------------------------------

  def _error(self, problem):
    return errors.ConfigError(
        f'{PATH_PARAMETER} = {self.path!r}: {problem}')

  def check_file(self, time_step_spec, action_spec, env_id=None,
                 episodes=False):
    """The file exists, its specs and env id match (and its episodes load).

    Args:
      time_step_spec, action_spec: the env's or agent's specs.
      env_id: if set, the env id the file must have been recorded in.
      episodes: also read and check every episode (checksum, arrays,
        shapes, step types; one at a time) rather than the header alone.
        `check` does, before any process starts: a damaged episode
        found by the learner would stop the run after the actors started.

    Returns:
      The file's header.

    Raises:
      errors.ConfigError: naming `r2d3.DemonstrationReplay.path`, the file and
        the problem (for a damaged episode: its index, bytes and fault).
    """
    with self._file_errors():
      header, _ = demonstrations_lib.read_header(self.path)
      demonstrations_lib.check_specs(header['specs'], time_step_spec,
                                     action_spec, source=self.path)
    if env_id is not None and header['env_id'] != env_id:
      raise self._error(
          f'the demonstrations were recorded in {header["env_id"]!r} but the '
          f'agent acts in {env_id!r}.')
    if episodes:
      if not header['episodes']:
        raise self._error('the file holds no episodes.')
      with self._file_errors():
        demonstrations_lib.check_demonstrations(self.path, time_step_spec,
                                                action_spec)
    return header

  @contextlib.contextmanager
  def _file_errors(self):
    """Reading errors of the file as ConfigErrors naming the parameter."""
    try:
      yield
    except FileNotFoundError as error:
      raise self._error(
          'no such file. Record demonstrations with '
          'train/collect_demonstrations.py (docs/r2d3.md).') from error
    except (demonstrations_lib.DemonstrationFileError,
            demonstrations_lib.DemonstrationSpecError, OSError) as error:
      raise self._error(str(error)) from error

  def read(self, agent, env_id=None):
    """All episodes, checked against the agent (see `check_file`)."""
    self.check_file(agent.time_step_spec, agent.action_spec, env_id)
    with self._file_errors():
      demos = demonstrations_lib.read_demonstrations(
          self.path, agent.time_step_spec, agent.action_spec)
    if not demos.episodes:
      raise self._error('the file holds no episodes.')
    return demos

  # --- learner --------------------------------------------------------------

  def prepare(self, client, server_address, agent, env_id, batch_size):
    """Fills the demonstration table, then pre-trains what is left."""
    self.fill_table(client, agent, env_id)
    return self.pretrain(agent, server_address, batch_size)

  def fill_table(self, client, agent, env_id=None):
    """Writes the file's sequences unless the table already holds them.

    Returns:
      Sequences written (0 if the table was already filled).

    Raises:
      errors.ConfigError: bad file (see `check_file`) or a table too small
        for the file.
    """
    demos = self.read(agent, env_id)
    expected = demonstrations_lib.count_sequences(demos.episodes, agent)
    if expected > self.table_capacity:
      raise errors.ConfigError(
          f'{self.path} has {expected} sequences but the demonstration '
          f'table holds r2d3.DemonstrationReplay.table_capacity = '
          f'{self.table_capacity}; raise it to at least {expected}.')
    if self.uses_successes and expected > self.success_table_capacity:
      raise errors.ConfigError(
          f'{self.path} has {expected} sequences but the success table '
          'holds r2d3.DemonstrationReplay.success_table_capacity = '
          f'{self.success_table_capacity}; raise it to at least '
          f'{expected}.')
    server_info = client.server_info()
    if self.uses_successes and not server_info[SUCCESS_TABLE].current_size:
      # Seeded once per server: it is never empty (the learner samples
      # it from the first step), then successes replace the seed FIFO.
      demonstrations_lib.write_to_table(demos.episodes, client,
                                        SUCCESS_TABLE, agent)
    size = server_info[DEMO_TABLE].current_size
    if size == expected:
      logging.info('Demonstration table already holds the %d sequences of '
                   '%s.', size, self.path)
      return 0
    if size:
      # A fill interrupted by a learner crash, or another file.
      logging.warning('Demonstration table holds %d sequences, %s has %d; '
                      'refilling.', size, self.path, expected)
      client.reset(DEMO_TABLE)
    start = time.time()
    written = demonstrations_lib.write_to_table(demos.episodes, client,
                                                DEMO_TABLE, agent)
    logging.info('Wrote %d demonstration sequences (%d episodes, %d '
                 'transitions, mean return %.3f) from %s in %.1f s.',
                 written, len(demos.episodes),
                 sum(e.num_transitions for e in demos.episodes),
                 sum(demos.returns) / len(demos.returns), self.path,
                 time.time() - start)
    return written

  def sampling(self, server_address, agent, batch_size, seed,
               rate_limiter_timeout_ms):
    """The learner's mixed `(MixedSequences, sample_info)` batches; new
    priorities go back to the table each element came from."""
    dataset = mixed_dataset.mixed_dataset(
        server_address, replay_lib.AGENT_TABLE, DEMO_TABLE, agent,
        batch_size,
        demo_ratio=self.demo_ratio, seed=seed,
        rate_limiter_timeout_ms=rate_limiter_timeout_ms,
        success_table=SUCCESS_TABLE if self.uses_successes else None,
        success_ratio=self.success_ratio)
    return dataset, mixed_dataset.MixedPriorityUpdater(
        server_address, replay_lib.AGENT_TABLE, self._demo_tables())

  def pretrain(self, agent, server_address, batch_size):
    """Runs the pre-training steps not done yet.

    The agent's step counter (checkpointed by the learner) counts them:
    pre-training is the first thing a run trains.

    Args:
      agent: the `R2D3Agent`.
      server_address: the Reverb server with the filled demo table.
      batch_size: sequences per step.

    Returns:
      The last `LossInfo`, or None if nothing was left to do.
    """
    remaining = self.pretrain_steps - int(agent.train_step_counter)
    if remaining <= 0:
      return None
    dataset = mixed_dataset.demo_dataset(server_address, DEMO_TABLE, agent,
                                         batch_size)
    updater = mixed_dataset.MixedPriorityUpdater(server_address, None,
                                                 DEMO_TABLE)

    def after_train_step(element, loss_info):
      updater(element, loss_info)

    logging.info('Pre-training on demonstrations: %d learner steps.',
                 remaining)
    start = time.time()
    loss_info = r2d3_agent.pretrain(agent, dataset, num_steps=remaining,
                                    after_train_step=after_train_step)
    logging.info('Pre-training done in %.0f s (%d steps), loss %.4f.',
                 time.time() - start, remaining,
                 float(loss_info.loss))
    return loss_info

