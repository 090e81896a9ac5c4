r"""How far an R2D2 run's exploring actors get: goals and views per episode.

  python benchmarks/r2d2_exploration_readout.py \
      --run_dir=runs/r2d2_ngu_1m/r2d2_rnd_seed0 [--checkpoint=ckpt-300035] \
      [--actors=0,1] [--episodes_per_slot=2]

Restores the run's agent (`r2d2_rollouts.restore_run`) and, for each actor
index in --actors, steps a batch of the run's envs (`envs_per_actor`,
seeded away from the run's actor and eval seeds) with that actor's collect
policy: its epsilons and, with NGU's arms (`intrinsic.ngu_bonus.arms`), its betas. Then the same
envs with uniform random actions. Per slot it prints, over --episodes_per_slot
episodes each: the goal rate (return > 0), the mean return, the mean
number of distinct observations per episode (exact bytes: the views the
episodic memory counts), the most taken action's share and the mean
episodic novelty per step, 1/sqrt(visits of the step's view in its episode
so far), what NGU's memory records (the same for every policy). On
MiniGrid views (object, colour, state, ...) it also prints the share of
episodes in which the agent carried a key and saw an open door, the two
steps DoorKey asks for before its goal, and how often per episode it put
a key down.

benchmarks/results/hard_exploration/history_2026-11-25_r2d2_ngu_reward.md uses
it on the R2D2 + RND runs.
"""

import collections

from absl import app
from absl import flags
import gin
from minigrid.core import constants as minigrid_constants
import numpy as np
import tensorflow as tf
from tf_agents.policies import py_tf_eager_policy
from tf_agents.trajectories import policy_step

from tfa_explore.agents.r2d2 import policy as r2d2_policy
from tfa_explore.environments import batched
from tfa_explore.environments import minigrid

import r2d2_rollouts  # benchmarks/r2d2_rollouts.py, next to this script.

_ACTORS = flags.DEFINE_list('actors', ['0', '1'], 'Actor indices to run.')
_EPISODES = flags.DEFINE_integer('episodes_per_slot', 2,
                                 'Episodes per env (slot) and policy.')
# Far from the actors' (seed + slot) and the evals' (seed + 1000003 + j).
READOUT_SEED_OFFSET = 2000003
_KEY = minigrid_constants.OBJECT_TO_IDX['key']
_DOOR = minigrid_constants.OBJECT_TO_IDX['door']
_OPEN = minigrid_constants.STATE_TO_IDX['open']


def _milestones(view):
  """(carries a key, sees an open door) of one MiniGrid 7x7 view, or None."""
  if view.ndim != 3 or view.shape[:2] != (7, 7):
    return None
  try:
    indices = minigrid.cell_indices(view)
  except ValueError:  # Not one of the MiniGrid presets' encodings.
    return None
  # The agent's own cell (middle of the view's last row, MiniGrid's
  # egocentric layout) shows what it carries.
  carries = indices[view.shape[0] // 2, view.shape[1] - 1, 0] == _KEY
  open_door = np.any((indices[..., 0] == _DOOR) & (indices[..., 2] == _OPEN))
  return bool(carries), bool(open_door)


class _Uniform:
  """Uniform random actions in the collect policy's interface."""

  def __init__(self, action_spec, num_envs, seed):
    self._spec = action_spec
    self._num_envs = num_envs
    self._rng = np.random.default_rng(seed)

  def get_initial_state(self, batch_size):
    del batch_size
    return ()

  def action(self, time_step, state):
    del time_step
    action = self._rng.integers(self._spec.minimum, self._spec.maximum + 1,
                                size=self._num_envs)
    return policy_step.PolicyStep(action.astype(self._spec.dtype), state, {})


def _run(policy, env, num_envs, episodes):
  """Per env: [(return, distinct views, actions, mean novelty, milestones)].

  milestones: (carried a key, saw an open door, times it put a key down)
  in the episode, or None for views that are not MiniGrid's.
  """
  results = [[] for _ in range(num_envs)]
  reached = [(False, False, 0)] * num_envs
  carried = [False] * num_envs
  views = [collections.Counter() for _ in range(num_envs)]
  actions = [collections.Counter() for _ in range(num_envs)]
  novelty = [[] for _ in range(num_envs)]
  returns = np.zeros(num_envs)
  time_step = env.reset()
  state = policy.get_initial_state(num_envs)
  while min(len(r) for r in results) < episodes:
    step = policy.action(time_step, state)
    observation = np.asarray(time_step.observation)
    for k in range(num_envs):
      if time_step.is_last()[k]:
        continue
      view = observation[k].tobytes()
      views[k][view] += 1
      actions[k][int(step.action[k])] += 1
      # 1/sqrt(visits so far, this one included): what an episodic memory
      # records, for any policy.
      novelty[k].append(views[k][view]**-0.5)
      marks = _milestones(observation[k])
      if marks is None:
        reached[k] = None
      else:
        # A key leaves the agent's cell only when the agent drops it.
        drops = reached[k][2] + int(carried[k] and not marks[0])
        reached[k] = (reached[k][0] or marks[0], reached[k][1] or marks[1],
                      drops)
        carried[k] = marks[0]
    next_time_step = env.step(step.action)
    for k in range(num_envs):
      if time_step.is_last()[k]:
        continue
      returns[k] += float(next_time_step.reward[k])
      if next_time_step.is_last()[k]:
        # The LAST observation counts as seen too.
        views[k][np.asarray(next_time_step.observation)[k].tobytes()] += 1
        results[k].append((returns[k], len(views[k]), actions[k],
                           np.mean(novelty[k]), reached[k]))
        returns[k] = 0.0
        reached[k], carried[k] = (False, False, 0), False
        views[k], actions[k], novelty[k] = (collections.Counter(),
                                            collections.Counter(), [])
    time_step, state = next_time_step, step.state
  return [r[:episodes] for r in results]


def _print(label, first_slot, results, extra=None):
  for k, episodes in enumerate(results):
    goals = np.mean([e[0] > 0 for e in episodes])
    mean_return = np.mean([e[0] for e in episodes])
    distinct = np.mean([e[1] for e in episodes])
    counts = sum((e[2] for e in episodes), collections.Counter())
    top, top_count = counts.most_common(1)[0]
    line = (f'{label} slot {first_slot + k:2d}{extra[k] if extra else ""}: '
            f'goal rate {goals:.2f}, return {mean_return:.2f}, distinct '
            f'views {distinct:.0f}, most taken action {top} '
            f'{top_count / sum(counts.values()):.2f}')
    line += (', mean episodic novelty '
             f'{np.mean([e[3] for e in episodes]):.3f}')
    if episodes[0][4] is not None:
      line += (f', key carried {np.mean([e[4][0] for e in episodes]):.2f}'
               f', door open {np.mean([e[4][1] for e in episodes]):.2f}'
               f', key drops {np.mean([e[4][2] for e in episodes]):.1f}')
    print(line)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  agent, _ = r2d2_rollouts.restore_run(
      r2d2_rollouts.RUN_DIR.value, r2d2_rollouts.CHECKPOINT.value)
  num_actors = gin.query_parameter('r2d2.Settings.num_actors')
  num_envs = gin.query_parameter('r2d2.Settings.envs_per_actor')
  env_loader = gin.query_parameter('r2d2.Settings.env_loader')
  seed = gin.query_parameter('r2d2.Settings.seed')
  if isinstance(seed, gin.config.ConfigurableReference):  # %SEED
    seed = seed.scoped_configurable_fn()
  for actor in (int(a) for a in _ACTORS.value):
    first_slot = actor * num_envs
    env_seed = seed + READOUT_SEED_OFFSET + first_slot
    # The epsilon draws follow TF's global seed: one readout, one result.
    tf.random.set_seed(env_seed)
    collect_policy = agent.actor_collect_policy(actor, num_actors, num_envs)
    policy = py_tf_eager_policy.PyTFEagerPolicy(
        collect_policy, use_tf_function=True, batch_time_steps=False)
    epsilons = r2d2_policy.slot_epsilons(actor, num_actors, num_envs)
    extra = [f' (epsilon {e:.4f})' for e in epsilons]
    env = batched.make_batched_env(env_loader.scoped_configurable_fn,
                                   num_envs, env_seed)
    _print('actor', first_slot, _run(policy, env, num_envs,
                                     _EPISODES.value), extra)
    env = batched.make_batched_env(env_loader.scoped_configurable_fn,
                                   num_envs, env_seed)
    uniform = _Uniform(env.action_spec(), num_envs, env_seed)
    _print('uniform', first_slot, _run(uniform, env, num_envs,
                                       _EPISODES.value))


if __name__ == '__main__':
  app.run(main)
