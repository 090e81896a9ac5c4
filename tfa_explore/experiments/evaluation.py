"""Greedy evaluation, shared by both training loops.

* `Evaluator`: ONE episode in each of `num_episodes` eval envs, from a
  policy state it owns (recurrent policies start every evaluation from
  their initial state); `eval/Metrics/*` and one log line per evaluation.
* `NumpyPolicy`: a TF policy's `action` on numpy batches as one concrete
  function (the evaluator's, and benchmarks' stepping from Python).
* `success_rate`: the fraction of episodes that reached a MiniGrid goal.
"""

from typing import Any, Callable, Dict, Optional

from absl import logging
import numpy as np
import tensorflow as tf

from tfa_explore.environments import batched
from tfa_explore.environments import run_context
from tfa_explore.utils import summaries

# Eval env i gets seed `seed + EVAL_SEED_OFFSET + i`, far from the collect
# envs' `seed + i`.
EVAL_SEED_OFFSET = 1_000_003

def success_rate(episode_returns, threshold: float) -> float:
  """Fraction of episodes whose return is above `threshold`.

  MiniGrid pays 1 - 0.9 * steps / max_steps > 0 only on reaching the goal,
  so with threshold 0 this is the fraction of episodes that reached it.
  """
  episode_returns = np.asarray(episode_returns, np.float64)
  if episode_returns.size == 0:
    raise ValueError('success_rate needs at least one episode.')
  return float(np.mean(episode_returns > threshold))


class NumpyPolicy:
  """A TF policy's `action` on numpy batches, as one concrete function.

  Traced once, at the first call, for flat tensors of a fixed batch size
  (no retracing whatever the caller's nest types); returns numpy. For
  loops that step a py env from Python, e.g. the evaluator. Collection
  does better with the whole rollout in one traced loop
  (`on_policy.RolloutCollector`, docs/performance.md).
  """

  def __init__(self, policy, batch_size: int):
    self._policy = policy
    self._batch_size = batch_size
    self._input_spec = (policy.time_step_spec, policy.policy_state_spec)
    self._function = None

  def _trace(self):
    input_spec = self._input_spec
    policy = self._policy

    def flat_action(*flat_inputs):
      time_step, policy_state = tf.nest.pack_sequence_as(
          input_spec, list(flat_inputs))
      return tf.nest.flatten(policy.action(time_step, policy_state))

    signature = [
        tf.TensorSpec([self._batch_size] + list(spec.shape), spec.dtype)
        for spec in tf.nest.flatten(input_spec)]
    return tf.function(flat_action, autograph=False).get_concrete_function(
        *signature)

  def get_initial_state(self):
    return tf.nest.map_structure(
        lambda t: t.numpy(),
        self._policy.get_initial_state(self._batch_size))

  def action(self, time_step, policy_state):
    """PolicyStep of numpy arrays for a numpy `time_step` and state."""
    if self._function is None:
      self._function = self._trace()
    outputs = self._function(*tf.nest.flatten((time_step, policy_state)))
    return tf.nest.pack_sequence_as(self._policy.policy_step_spec,
                                    [output.numpy() for output in outputs])


class Evaluator:
  """Greedy evaluation: ONE episode in each of `num_episodes` envs.

  One env per episode (rather than counting the finished episodes of a
  few envs) avoids a bias toward short episodes. The evaluator owns the
  policy state: every evaluation starts from the policy's initial state
  and carries it between steps, so recurrent policies evaluate correctly.
  """

  def __init__(self,
               policy,
               env_loader: Callable[..., Any],
               num_episodes: int,
               seed: int,
               writer: Optional[tf.summary.SummaryWriter] = None,
               success_threshold: Optional[float] = None):
    """Creates the eval envs (seeds `seed + EVAL_SEED_OFFSET + i`).

    Args:
      policy: a TF policy (e.g. `agent.policy`).
      env_loader: `env_loader(seed=...)` -> PyEnvironment.
      num_episodes: episodes per evaluation, one per env.
      seed: the run's seed.
      writer: if set, `Metrics/*` of every evaluation go there.
      success_threshold: if set, also 'SuccessRate' (`success_rate`).
    """
    self._policy = policy
    with run_context.evaluation():
      self._environment = batched.make_batched_env(
          env_loader, num_episodes, seed + EVAL_SEED_OFFSET)
    # Traced on the first evaluation, not here: a run that never evaluates
    # (or resumes past its last one) never builds it.
    self._numpy_policy = NumpyPolicy(policy, num_episodes)
    self._writer = writer
    self._success_threshold = success_threshold

  @property
  def num_episodes(self) -> int:
    return self._environment.batch_size

  def run_episodes(self) -> Dict[str, float]:
    """{'AverageReturn', 'AverageEpisodeLength'} (+ 'SuccessRate')."""
    environment = self._environment
    num_episodes = environment.batch_size
    returns = np.zeros(num_episodes, np.float64)
    lengths = np.zeros(num_episodes, np.int64)
    done = np.zeros(num_episodes, bool)
    time_step = environment.reset()
    policy_state = self._numpy_policy.get_initial_state()
    while not done.all():
      action_step = self._numpy_policy.action(time_step, policy_state)
      policy_state = action_step.state
      time_step = environment.step(action_step.action)
      active = ~done
      returns[active] += time_step.reward[active]
      lengths[active] += 1
      done |= time_step.is_last()
    results = {'AverageReturn': float(returns.mean()),
               'AverageEpisodeLength': float(lengths.mean())}
    if self._success_threshold is not None:
      results['SuccessRate'] = success_rate(returns, self._success_threshold)
    return results

  def __call__(self, env_steps: int) -> Dict[str, float]:
    """Evaluates, writes `eval/Metrics/*` at `env_steps`, logs a line.

    Returns:
      The results plus 'EnvironmentSteps'.
    """
    results = self.run_episodes()
    if self._writer is not None:
      with self._writer.as_default():
        summaries.scalars(summaries.METRICS, results, step=env_steps)
      self._writer.flush()
    logging.info(
        'Eval at env step %s: average return %.2f, episode length %.1f%s '
        'over %d episodes.', f'{env_steps:,}', results['AverageReturn'],
        results['AverageEpisodeLength'],
        (f', success rate {results["SuccessRate"]:.2f}'
         if 'SuccessRate' in results else ''), self.num_episodes)
    return dict(results, EnvironmentSteps=env_steps)

  def close(self) -> None:
    self._environment.close()
