"""The exploration seam of the R2D2 family, and its default: no bonus.

`R2D2Agent(exploration=...)` holds an `ExplorationBonus` the way the R2D2
experiments hold a `ReplayStrategy`: the agent's loss, priorities, policies
and train step read the same with or without one, and a bonus changes them
only through these hooks:

* `check(agent)`: its constraints on the agent (network heads, settings),
  checked once when the agent is built;
* `exploring_policy(agent, slots)`: the greedy policy the actors'
  epsilon-greedy wraps, for the agent's collect policy (`slots` None) or
  for the `ActorSlots` of one batched actor (per-slot settings, e.g. NGU's
  arms); this default is the agent's greedy `policy`;
* `loss(agent, trajectory, errors, loss_weights)`: an `ExplorationLoss`,
  extra loss terms from the agent's unroll (`learning.TdErrors`) and what
  they add to the priorities; it changes no state, so `agent.loss` and
  `agent.train` optimise the same loss;
* `observe(agent, trajectory)` before the loss and
  `train_step(agent, trajectory, observed, loss_info)` after it: the
  bonus's own statistics and optimisation steps on the replayed batch, and
  its summaries (`observed`: what `observe` returned);
* `acting_variables`: what its exploring policy reads besides the Q
  network, which the learner publishes to the actors;
* `actor_epsilons(slots)`: the epsilon of each env of an actor under its
  epsilon-greedy; default Ape-X's schedule (`policy.slot_epsilons`).

Its state is tracked by the agent, so the agent's checkpoint holds it.
The bonuses (RND's reward or NGU's learnt by a second Q head) are in
`tfa_explore.agents.r2d2_intrinsic`.
"""

import collections

import tensorflow as tf

from tfa_explore.agents.r2d2 import policy as r2d2_policy


class ExplorationLoss(
    collections.namedtuple('ExplorationLoss', ['loss', 'priority_errors'])):
  """What a bonus adds to the agent's loss and priorities.

  Fields:
    loss: scalar, added to the agent's loss.
    priority_errors: None, or `[B, T']` non-negative values added to the
      trace steps' |delta| before the priorities mix max and mean.
  """
  __slots__ = ()


class ActorSlots(
    collections.namedtuple('ActorSlots',
                           ['actor_index', 'num_actors', 'envs_per_actor'])):
  """Env k of actor i is slot i * envs_per_actor + k of all actors' envs."""
  __slots__ = ()


class ExplorationBonus(tf.Module):
  """No exploration bonus; the interface an agent asks of one."""

  def __init__(self, name='no_exploration_bonus'):
    super().__init__(name=name)

  def check(self, agent) -> None:
    """Raises ValueError if the agent cannot carry this bonus."""
    del agent

  def exploring_policy(self, agent, slots=None):
    """The greedy policy under the collect (`slots` None) or actor policies."""
    del slots
    return agent.policy

  def loss(self, agent, trajectory, errors, loss_weights) -> ExplorationLoss:
    del agent, trajectory, errors, loss_weights
    return ExplorationLoss(loss=tf.constant(0.0), priority_errors=None)

  def observe(self, agent, trajectory):
    """Updates its statistics with a replayed batch, before the loss.

    Returns a nest of tensors for `train_step`.
    """
    del agent, trajectory
    return ()

  def train_step(self, agent, trajectory, observed, loss_info) -> None:
    """Its own steps on the batch after the agent's loss, and summaries."""
    del agent, trajectory, observed, loss_info

  @property
  def acting_variables(self):
    """Variables its exploring policy reads besides the Q network."""
    return ()

  def actor_epsilons(self, slots):
    """Epsilon of each env of an actor's batch (`slots`: `ActorSlots`)."""
    return r2d2_policy.slot_epsilons(*slots)
