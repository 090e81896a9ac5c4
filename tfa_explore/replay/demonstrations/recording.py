"""Recording demonstration episodes: sources, episodes, `collect`.

A source picks the actions of an episode: `ScriptedExpertSource` (an
expert callable, e.g. `environments.experts.doorkey_expert`) or
`SavedPolicySource` (a `PolicySaver` export, e.g. a trained R2D2 run's
greedy policy). `record_episode` steps an environment with one;
`collect` (what `train/collect_demonstrations.py` runs) records episodes
into a demonstration file (`file_format`).

Gin names (kept from before the package split): `demonstrations.collect`,
`demonstrations.scripted_expert`, `demonstrations.saved_policy`.
"""

from typing import Any, Callable

import gin
import numpy as np
import tensorflow as tf
from tf_agents.trajectories import time_step as ts

from tfa_explore.replay.demonstrations import file_format

class ScriptedExpertSource:
  """A demonstration source from an expert callable `expert(env) -> action`.

  See `tfa_explore.environments.experts`.
  """

  def __init__(self, expert: Callable[[Any], Any]):
    self._expert = expert
    self.description = getattr(expert, '__name__', repr(expert))

  def reset(self):
    pass

  def action(self, env, time_step):
    del time_step  # The expert reads the environment itself.
    return self._expert(env)


class SavedPolicySource:
  """A demonstration source from a `PolicySaver` export (e.g. greedy_policy).

  R2D2 policies carry the recurrent state and the previous action in their
  policy state (the previous reward comes from `time_step.reward`), so the
  state returned by each `action` call is fed to the next one; it is reset
  to `get_initial_state(1)` at every episode.
  """

  def __init__(self, policy_dir):
    self._policy = tf.saved_model.load(policy_dir)
    self._state = None
    self.description = f'saved policy {policy_dir}'

  def reset(self):
    self._state = self._policy.get_initial_state(1)

  def action(self, env, time_step):
    del env
    batched = tf.nest.map_structure(lambda x: tf.convert_to_tensor(x)[None],
                                    time_step)
    step = self._policy.action(batched, self._state)
    self._state = step.state
    return step.action.numpy()[0]


@gin.configurable(module='demonstrations')
def scripted_expert(expert=gin.REQUIRED):
  """Gin factory of a `ScriptedExpertSource` (bind `expert`)."""
  return ScriptedExpertSource(expert)


@gin.configurable(module='demonstrations')
def saved_policy(policy_dir=gin.REQUIRED):
  """Gin factory of a `SavedPolicySource` (bind `policy_dir`)."""
  return SavedPolicySource(policy_dir)


def _stack(nests):
  return tf.nest.map_structure(lambda *xs: np.stack([np.asarray(x)
                                                     for x in xs]), *nests)


def record_episode(env, source, max_steps=None):
  """Steps `env` (an unbatched PyEnvironment) with `source` for one episode.

  The episode starts with `env.reset()` and ends at the first LAST step
  (termination or truncation) or after `max_steps` actions (then the
  final step is relabelled LAST with discount 1, a truncation).
  """
  source.reset()
  time_step = env.reset()
  time_steps, actions = [time_step], []
  while not time_step.is_last():
    if max_steps is not None and len(actions) >= max_steps:
      last = time_steps[-1]
      time_steps[-1] = last._replace(
          step_type=np.asarray(ts.StepType.LAST, last.step_type.dtype),
          discount=np.ones_like(last.discount))
      break
    action = np.asarray(source.action(env, time_step),
                        env.action_spec().dtype)
    time_step = env.step(action)
    time_steps.append(time_step)
    actions.append(action)
  stacked = _stack(time_steps)
  return file_format.DemoEpisode(
      observation=stacked.observation,
      step_type=stacked.step_type.astype(np.int32),
      reward=stacked.reward.astype(np.float32),
      discount=stacked.discount.astype(np.float32),
      action=np.stack(actions))


def record_episodes(env, source, num_episodes, max_steps=None):
  """`num_episodes` consecutive episodes of `source` in `env`."""
  return [record_episode(env, source, max_steps) for _ in range(num_episodes)]


@gin.configurable(module='demonstrations')
def collect(output_path, num_episodes, env_loader=gin.REQUIRED,
            source=gin.REQUIRED, seed=0, max_episode_steps=None,
            metadata=None):
  """Records `num_episodes` episodes of `source` into a demonstration file.

  What `train/collect_demonstrations.py` runs. The env is
  `env_loader(seed=seed)`; episodes follow each other in it, so `seed`
  fixes them all. The header records the env id, the specs, the returns,
  the source and seed, and gin's config.

  Args:
    output_path: the demonstration file (written atomically).
    num_episodes: episodes to record (>= 1).
    env_loader: e.g. `@minigrid.load` with its `env_id` bound.
    source: a `ScriptedExpertSource` or `SavedPolicySource`
      (`@demonstrations.scripted_expert()` / `@demonstrations.saved_policy()`).
    seed: env seed.
    max_episode_steps: optional cap on actions per episode (truncation).
    metadata: extra JSON-serialisable header metadata.

  Returns:
    The episodes' returns.
  """
  if num_episodes < 1:
    raise ValueError(f'num_episodes must be >= 1, got {num_episodes}.')
  env = env_loader(seed=seed)
  try:
    env_id = getattr(env, 'env_id', type(env).__name__)
    header_metadata = {
        'source': getattr(source, 'description', repr(source)),
        'seed': seed,
        'gin_config': gin.config_str(),
    }
    header_metadata.update(metadata or {})
    returns = []
    with file_format.DemonstrationWriter(
        output_path, env_id, env.time_step_spec(), env.action_spec(),
        header_metadata) as writer:
      for _ in range(num_episodes):
        episode = record_episode(env, source, max_episode_steps)
        writer.add_episode(episode)
        returns.append(episode.episode_return)
    return returns
  finally:
    env.close()
