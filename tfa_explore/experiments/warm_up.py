"""Initialises the RND observation normaliser with a random agent.

Burda et al. 2018, section 2.4: the normalisation parameters are set by
stepping a random agent in the environment before optimisation starts.
Stepping an environment is a loop's work, so this stands with the loops
(the on-policy loop calls it as its `pre_training_fn`), not in the agent's
package.
"""

import gin
import numpy as np
import tensorflow as tf
from tf_agents.environments import py_environment
from tf_agents.policies import random_tf_policy
from tf_agents.specs import array_spec

from tfa_explore.environments import batched


@gin.configurable(denylist=['agent', 'environment'])
def warm_up_observation_normalizer(agent, environment,
                                   num_steps: int = gin.REQUIRED):
  """Steps a uniform random policy and feeds every observation to the
  intrinsic reward's observation normaliser (only that one: the policy's
  normaliser and all networks are left untouched; only steps for an agent
  without one, the PPO twin).

  Suitable as the train_eval loop's `pre_training_fn(agent=, environment=)`.

  Args:
    agent: An agent with an `intrinsic_reward` (`RndPPOAgent`).
    environment: A (batched) `TFEnvironment` or `PyEnvironment`; it is
      stepped from its current time step and left where the warm-up ends.
    num_steps: Steps of the (batched) environment; each step advances every
      parallel environment once, so `num_steps * batch_size` observations
      are seen.

  Returns:
    The number of observations added to the normaliser.
  """
  if num_steps < 0:
    raise ValueError(f'num_steps must be >= 0, got {num_steps}.')
  reward = agent.intrinsic_reward
  # Without a reward the environment still steps, so a twin and its RND run
  # start from the same point.
  update = (tf.function(reward.observe) if reward is not None
            else lambda observations: None)
  if isinstance(environment, py_environment.PyEnvironment):
    return _warm_up_numpy(environment, update, num_steps)
  random_policy = random_tf_policy.RandomTFPolicy(
      environment.time_step_spec(), environment.action_spec())
  time_step = environment.current_time_step()
  seen = 0
  for _ in range(num_steps):
    action_step = random_policy.action(time_step)
    time_step = environment.step(action_step.action)
    update(time_step.observation)
    seen += int(environment.batch_size or 1)
  return seen


def _warm_up_numpy(environment, update, num_steps):
  """The warm-up on a PyEnvironment: actions drawn in numpy, no TF env.

  The actions come from numpy's global RNG (which the loops seed), so a
  seed still fixes the warm-up.
  """
  batch_size = environment.batch_size if environment.batched else None
  outer_dims = (batch_size,) if batch_size else ()
  rng = np.random.RandomState(np.random.randint(2**31 - 1))
  batched.current_time_step(environment)  # resets a never-stepped env
  for _ in range(num_steps):
    action = array_spec.sample_spec_nest(environment.action_spec(), rng,
                                         outer_dims=outer_dims)
    update(environment.step(action).observation)
  return num_steps * (batch_size or 1)
