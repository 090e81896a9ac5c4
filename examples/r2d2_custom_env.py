r"""R2D2 on a gymnasium environment of your own, in a stock TF-Agents pipeline.

Copy this file to train tfa_explore's `R2D2Agent` on your own environment.
It has the shape of TF-Agents' `examples/dqn/dqn_train_eval_rnn.py` (stock
`Actor` + `Learner` on a Reverb table, `PolicySaver` at the end); the
lines a stock pipeline must do differently for R2D2 are marked `R2D2:` in
comments, which say why. In short:

1. The table is prioritized and typed by the agent's sequences
   (`make_prioritized_table`); one item is one sequence of
   `SequenceConfig.sequence_length = burn_in + trace + 1` steps.
2. The actor's observer is `R2D2SequenceObserver`, not
   `ReverbAddTrajectoryObserver`: sequences never cross an episode end, are
   front-padded for the burn-in, and keep the recurrent state the policy
   started each step from (in policy info), with an initial priority from
   the actor's network. So the initial collect uses the agent's collect
   policy, not a `RandomPyPolicy` (which has no such info).
3. The learner's dataset is `replay_dataset`: Reverb's sample info (the
   sampling probabilities) travels with the sequences, for the importance
   weights.
4. The new priorities go back to the table by key: `PriorityUpdater` is
   the stock `Learner`'s `after_train_strategy_step_fn`.
5. In one thread the loop, not the rate limiter, sets the replay ratio
   (see `train`).

The environment, `CueMemoryEnv` (`CueMemory-v0`), is a tiny task where
memory matters: a cue (left or right) is shown at the first step only,
then blanks, then a query `delay` steps later, where naming the cue
pays 1. A policy without memory sees the same query either way: it
succeeds half the time at best. `--lstm_size=0` trains that feed-forward
twin.

Run (default budget, 100 iterations of 20 env steps, ~2,100 env steps
with the initial collect, ~1,100 learner steps):

  .venv/bin/python examples/r2d2_custom_env.py \
      --root_dir=/tmp/r2d2_cue_memory

Measured (seeds 0, 1, 2 via `--seed`; greedy success over the same 100
eval episodes per seed, of which 50, 51, 50 have the right-hand cue, so a
memoryless policy scores at most 0.50, 0.51, 0.50): R2D2 1.00, 1.00, 1.00
at the end, 1.00 at every evaluation from 1,260, 1,480 and 740 env steps on;
the feed-forward twin (`--lstm_size=0`) 0.50, 0.51, 0.50 at the end and
never above 0.51. Wall time 100-190 s per R2D2 run (70-80 s for the
twin), on 2 CPU cores shared with other jobs (load average 5-9).

Acting with the exported policy on the raw gymnasium env: see
`run_saved_policy` and docs/exported_policies.md.
"""

import os
import time
from typing import Any, Dict, NamedTuple, Optional

from absl import app
from absl import flags
from absl import logging
import gymnasium as gym
import numpy as np
import reverb
import tensorflow as tf
from tf_agents.metrics import py_metrics
from tf_agents.policies import policy_saver
from tf_agents.policies import py_tf_eager_policy
from tf_agents.replay_buffers import reverb_replay_buffer
from tf_agents.train import actor
from tf_agents.train import learner
from tf_agents.train.utils import spec_utils
from tf_agents.train.utils import train_utils
from tf_agents.trajectories import time_step as ts

from tfa_explore import replay
from tfa_explore.agents import R2D2Agent
from tfa_explore.agents import SequenceConfig
from tfa_explore.environments import suite_gymnasium
from tfa_explore.networks import RecurrentDuelingQNetwork
from tfa_explore.networks.recurrent_dueling_q_network import make_input_spec

ENV_ID = 'CueMemory-v0'
TABLE_NAME = 'r2d2_sequences'
GREEDY_POLICY_DIR = os.path.join('policies', 'greedy_policy')


class CueMemoryEnv(gym.Env):
  """Name the cue shown at the first step when asked `delay` steps later.

  Observation, float32 (3,): [cue is left, cue is right, query]; the cue
  is visible at step 0 only, the query at step `delay`. Actions: 0 left,
  1 right, 2 wait. At the cue the agent must wait: answering there ends
  the episode with reward 0. Actions between cue and query are ignored.
  At the query, naming the cue pays 1 and anything else 0; either way the
  episode ends. An episode's return is its success.

  Why the cue step must be a wait: R2D2's network also sees its previous
  action, so a free action at the cue would let a feed-forward policy
  carry the cue in its actions (answer the cue at once, repeat its
  previous action until the query) and need no memory.
  """

  LEFT, RIGHT, WAIT = 0, 1, 2

  def __init__(self, delay: int = 4):
    if delay < 1:
      raise ValueError(f'delay must be >= 1, got {delay}.')
    self._delay = delay
    self.observation_space = gym.spaces.Box(0.0, 1.0, (3,), np.float32)
    self.action_space = gym.spaces.Discrete(3)
    self._cue = 0
    self._step = 0

  def _observation(self):
    observation = np.zeros(3, np.float32)
    if self._step == 0:
      observation[self._cue] = 1.0
    if self._step == self._delay:
      observation[2] = 1.0
    return observation

  def reset(self, *, seed=None, options=None):
    super().reset(seed=seed)
    self._cue = int(self.np_random.integers(2))  # LEFT or RIGHT
    self._step = 0
    return self._observation(), {'cue': self._cue}

  def step(self, action):
    action = int(action)
    if self._step == self._delay:
      reward = 1.0 if action == self._cue else 0.0
      return self._observation(), reward, True, False, {'cue': self._cue}
    if self._step == 0 and action != self.WAIT:
      return self._observation(), 0.0, True, False, {'cue': self._cue}
    self._step += 1
    return self._observation(), 0.0, False, False, {'cue': self._cue}


if ENV_ID not in gym.registry:
  gym.register(ENV_ID, entry_point=CueMemoryEnv)


def make_env(seed: int, delay: int):
  """The env as a TF-Agents `PyEnvironment` (a `GymnasiumWrapper`).

  `seed` seeds the first reset; later resets continue the env's generator,
  so the seed fixes the whole stream of cues.
  """
  return suite_gymnasium.load(ENV_ID, seed=seed, gym_kwargs={'delay': delay})


def make_agent(time_step_spec, action_spec, train_step, sequence_config,
               lstm_size: Optional[int] = 16, learning_rate: float = 3e-3,
               collect_epsilon: float = 0.4) -> R2D2Agent:
  """A small R2D2 agent; the paper's values are in `R2D2Agent`'s docs.

  Sized for the tiny task: the paper uses an LSTM of 512, n = 5,
  gamma 0.997 and a target copy every 2,500 steps. `lstm_size=None` is
  the feed-forward twin (no recurrent state).
  """
  # R2D2: the network also takes the previous action and reward; its input
  # spec is a dict built from the env's specs. The policy feeds them from
  # its state and the time step, so the env needs no wrapper.
  q_network = RecurrentDuelingQNetwork(
      make_input_spec(time_step_spec.observation, action_spec),
      action_spec,
      torso_fc_layer_params=(16,),
      lstm_size=lstm_size,
      dueling_fc_layer_params=(16,))
  agent = R2D2Agent(
      time_step_spec,
      action_spec,
      q_network=q_network,
      optimizer=tf.keras.optimizers.Adam(learning_rate, epsilon=1e-3),
      sequence_config=sequence_config,
      n_step=2,
      gamma=0.9,
      target_update_period=100,  # learner steps
      gradient_clipping=40.0,
      collect_epsilon=collect_epsilon,
      train_step_counter=train_step)
  agent.initialize()
  return agent


class Replay(NamedTuple):
  """The Reverb side: server, buffer, the actor's observer, the updater."""
  server: reverb.Server
  buffer: reverb_replay_buffer.ReverbReplayBuffer
  observer: replay.R2D2SequenceObserver
  priority_updater: replay.PriorityUpdater


def make_replay(agent: R2D2Agent, capacity: int, samples_per_insert: float,
                min_size_to_sample: int, error_buffer: float) -> Replay:
  """A Reverb server with one prioritized sequence table, and its users."""
  sequence_length = agent.sequence_config.sequence_length
  # R2D2: prioritized (alpha 0.9), FIFO eviction, and a signature of
  # [sequence_length] steps of the agent's collect_data_spec, which the
  # observer and the dataset check, so a mismatch is named at start-up.
  table = replay.make_prioritized_table(
      TABLE_NAME, capacity, agent.collect_data_spec, sequence_length,
      samples_per_insert=samples_per_insert,
      min_size_to_sample=min_size_to_sample, error_buffer=error_buffer)
  server = reverb.Server([table], port=None)
  # max_cycle_length=1: each batch from one sample stream, not
  # `batch_size` interleaved ones (less CPU for the same batches).
  buffer = reverb_replay_buffer.ReverbReplayBuffer(
      agent.collect_data_spec, TABLE_NAME, sequence_length,
      local_server=server, max_cycle_length=1)
  # R2D2: instead of ReverbAddTrajectoryObserver. Each step is written once;
  # items are overlapping windows of `sequence_length` steps every
  # `replay_period` steps, front-padded with `burn_in_steps` steps, never
  # crossing an episode end. The stored steps carry the policy info, whose
  # 'network_state' is the LSTM state the learner starts each replayed
  # sequence from (R2D2's stored state). The initial priority of an item
  # is its TD error under the actor's network, as in the paper.
  observer = replay.R2D2SequenceObserver(
      buffer.py_client, TABLE_NAME, agent.sequence_config,
      agent.collect_data_spec, priority_fn=agent.initial_priority_fn())
  # R2D2: the learner writes each sampled sequence's new priority back by
  # its Reverb key (mixed max/mean |TD error|, `loss_info.extra`).
  priority_updater = replay.PriorityUpdater(
      buffer.tf_client.server_address, TABLE_NAME)
  return Replay(server, buffer, observer, priority_updater)


def evaluate(eval_policy, train_step, seed: int, delay: int,
             num_episodes: int) -> float:
  """Greedy success rate over `num_episodes` episodes of a fresh env.

  Rewards are 0 or 1 at the query only, so the average return is the
  success rate. A fresh env with the same seed shows the same cues every
  time, so evaluations are comparable.
  """
  metrics = actor.eval_metrics(num_episodes)
  eval_actor = actor.Actor(
      make_env(seed, delay), eval_policy, train_step,
      episodes_per_run=num_episodes, metrics=metrics)
  eval_actor.run()
  return float(metrics[0].result())  # AverageReturn


def train(root_dir: str,
          num_iterations: int = 100,
          collect_steps_per_iteration: int = 20,
          samples_per_insert: float = 16.0,
          batch_size: int = 8,
          delay: int = 4,
          lstm_size: int = 16,
          replay_capacity: int = 2000,
          min_size_to_sample: int = 32,
          eval_interval: int = 10,
          num_eval_episodes: int = 100,
          seed: int = 0) -> Dict[str, Any]:
  """Trains R2D2 on `CueMemory-v0`; saves the greedy policy; returns results.

  Each iteration the actor steps the env `collect_steps_per_iteration`
  times, then the learner trains on `samples_per_insert` sampled
  sequences per sequence the actor wrote (`batch_size` per learner step).

  Args:
    root_dir: the Learner's summaries and checkpoints (train/), and the
      saved greedy policy (policies/greedy_policy).
    num_iterations: collect/train iterations.
    collect_steps_per_iteration: env steps per iteration.
    samples_per_insert: the replay ratio: sequences sampled per sequence
      inserted.
    batch_size: sequences per learner step.
    delay: steps from the cue to the query.
    lstm_size: LSTM units; 0 for the feed-forward twin.
    replay_capacity: sequences in the table.
    min_size_to_sample: sequences collected before the first learner step.
    eval_interval: iterations between greedy evaluations (0: final only).
    num_eval_episodes: episodes per evaluation.
    seed: seeds TF, the collect env (`seed`) and the eval env (`seed + 1`).

  Returns:
    A dict: `train_steps`, `env_steps`, `sequences_written` (of which
    `sequences_before_training` by the initial collect),
    `sequences_sampled` (by the learner's dataset), `greedy_success_rate`
    (final evaluation), `evaluations` (list of (env steps, success rate)),
    `policy_dir`, `eval_seed`, `seconds`.
  """
  start = time.time()
  tf.random.set_seed(seed)
  eval_seed = seed + 1
  collect_env = make_env(seed, delay)
  _, action_spec, time_step_spec = spec_utils.get_tensor_specs(collect_env)
  train_step = train_utils.create_train_step()
  # R2D2: the coupled sequence numbers in one place; the table, the
  # observer, the dataset and the learner's burn-in all read this object.
  # burn-in 2 + trace 6 + 1 bootstrap step = 9 steps, a new one every 3.
  sequence_config = SequenceConfig(burn_in_steps=2, trace_length=6,
                                   replay_period=3)
  agent = make_agent(time_step_spec, action_spec, train_step,
                     sequence_config, lstm_size=lstm_size or None)

  # R2D2: in one thread the actor and the learner take turns, so Reverb's
  # SampleToInsertRatio limiter must never make either wait: it would wait
  # for the other, which only runs after it (a deadlock). The loop below
  # keeps the ratio itself (learner steps from the sequences written), and
  # the limiter gets slack for the whole run; it only holds the first
  # sample back until `min_size_to_sample` sequences are in. In a
  # distributed run (actors in other threads or processes) a tight slack
  # makes the limiter pace actors and learner instead.
  max_samples = (num_iterations * collect_steps_per_iteration *
                 samples_per_insert + 10 * batch_size)
  r2d2_replay = make_replay(
      agent, replay_capacity, samples_per_insert, min_size_to_sample,
      error_buffer=max_samples + samples_per_insert * min_size_to_sample)
  observer = r2d2_replay.observer

  def experience_dataset_fn():
    # R2D2: (PrioritizedSequences(trajectory, sample_info), sample_info)
    # pairs. The stock Learner gives the first to agent.train (which needs
    # the probabilities for its importance weights) and both to the
    # priority updater (which needs the keys).
    return replay.replay_dataset(r2d2_replay.buffer, agent, batch_size)

  r2d2_learner = learner.Learner(
      root_dir,
      train_step,
      agent,
      experience_dataset_fn,
      after_train_strategy_step_fn=r2d2_replay.priority_updater,
      triggers=[],
      summary_interval=100)

  env_steps = py_metrics.EnvironmentSteps()
  # R2D2: the agent's collect policy is epsilon-greedy over the recurrent
  # greedy policy; it records the action it took (not the greedy one) as
  # the next step's previous action, and the LSTM state in policy info.
  collect_actor = actor.Actor(
      collect_env,
      py_tf_eager_policy.PyTFEagerPolicy(agent.collect_policy,
                                         use_tf_function=True),
      train_step,
      steps_per_run=collect_steps_per_iteration,
      observers=[observer, env_steps],
      metrics=actor.collect_metrics(10),
      summary_dir=os.path.join(root_dir, learner.TRAIN_DIR))
  eval_policy = py_tf_eager_policy.PyTFEagerPolicy(agent.policy,
                                                   use_tf_function=True)

  # R2D2: the initial collect runs the agent's own collect policy (its
  # untrained network), because every stored step needs the policy info.
  while observer.num_items_written < min_size_to_sample:
    collect_actor.run()
  sequences_before_training = observer.num_items_written

  evaluations = []
  owed_learner_steps = 0.0
  for iteration in range(1, num_iterations + 1):
    written_before = observer.num_items_written
    collect_actor.run()
    owed_learner_steps += (samples_per_insert * (
        observer.num_items_written - written_before) / batch_size)
    learner_steps = int(owed_learner_steps)
    owed_learner_steps -= learner_steps
    if learner_steps:
      r2d2_learner.run(iterations=learner_steps)
    if eval_interval and iteration % eval_interval == 0:
      collect_actor.log_metrics()
      success = evaluate(eval_policy, train_step, eval_seed, delay,
                         num_eval_episodes)
      evaluations.append((int(env_steps.result()), success))
      logging.info('env steps %d, learner steps %d, greedy success %.2f',
                   int(env_steps.result()), int(train_step), success)

  success = evaluate(eval_policy, train_step, eval_seed, delay,
                     num_eval_episodes)
  if not evaluations or evaluations[-1][0] != int(env_steps.result()):
    evaluations.append((int(env_steps.result()), success))

  # A SavedModel that needs neither tfa_explore nor this file to act.
  policy_dir = os.path.join(root_dir, GREEDY_POLICY_DIR)
  policy_saver.PolicySaver(agent.policy, batch_size=None,
                           train_step=train_step).save(policy_dir)

  observer.close()
  table_info = r2d2_replay.buffer.py_client.server_info()[TABLE_NAME]
  r2d2_replay.server.stop()
  return {
      'train_steps': int(train_step),
      'env_steps': int(env_steps.result()),
      'sequences_written': observer.num_items_written,
      'sequences_before_training': sequences_before_training,
      # Includes what the dataset prefetched but the learner never used.
      'sequences_sampled': table_info.rate_limiter_info.sample_stats.completed,
      'greedy_success_rate': success,
      'evaluations': evaluations,
      'policy_dir': policy_dir,
      'eval_seed': eval_seed,
      'seconds': time.time() - start,
  }


def run_saved_policy(policy_dir: str, seed: int, delay: int,
                     num_episodes: int) -> float:
  """Success rate of the saved greedy policy on the raw gymnasium env.

  What a user does with the export: `tf.saved_model.load` and TF-Agents
  time steps built by hand (batch of 1). The R2D2 policy reads the
  previous reward from `time_step.reward` (TF-Agents' convention: the
  reward of the action that led to this step), so pass the real one; its
  state carries the LSTM state and the previous action, and resets itself
  on FIRST steps.
  """
  policy = tf.saved_model.load(policy_dir)
  env = gym.make(ENV_ID, delay=delay)
  state = policy.get_initial_state(batch_size=1)
  returns = []
  observation, _ = env.reset(seed=seed)
  time_step = ts.restart(observation[np.newaxis], batch_size=1)
  while len(returns) < num_episodes:
    policy_step = policy.action(time_step, state)
    state = policy_step.state
    observation, reward, terminated, truncated, _ = env.step(
        int(policy_step.action.numpy()[0]))
    if terminated or truncated:
      returns.append(reward)
      observation, _ = env.reset()  # The seed's stream continues.
      time_step = ts.restart(observation[np.newaxis], batch_size=1)
    else:
      time_step = ts.transition(observation[np.newaxis],
                                np.array([reward], np.float32),
                                np.ones(1, np.float32))
  env.close()
  return float(np.mean(returns))


def define_flags():
  """The command line; defined by `__main__` only, so the module imports."""
  flags.DEFINE_string('root_dir', None, 'Run directory.')
  flags.DEFINE_integer('num_iterations', 100,
                       'Collect/train iterations (20 env steps each).')
  flags.DEFINE_integer('lstm_size', 16, 'LSTM units; 0: feed-forward twin.')
  flags.DEFINE_integer('delay', 4, 'Steps from the cue to the query.')
  flags.DEFINE_integer('seed', 0, 'Seed of TF and the envs.')
  flags.mark_flag_as_required('root_dir')


def main(argv):
  del argv
  opts = flags.FLAGS
  logging.set_verbosity(logging.INFO)
  results = train(opts.root_dir, num_iterations=opts.num_iterations,
                  delay=opts.delay, lstm_size=opts.lstm_size,
                  seed=opts.seed)
  saved_success = run_saved_policy(results['policy_dir'],
                                   results['eval_seed'], opts.delay, 100)
  print(f'{results["env_steps"]} env steps, {results["train_steps"]} learner '
        f'steps, {results["seconds"]:.0f} s; greedy success '
        f'{results["greedy_success_rate"]:.2f} (chance 0.5), the saved '
        f'policy on the raw gymnasium env {saved_success:.2f}; evaluations '
        f'(env steps, success): {results["evaluations"]}')


if __name__ == '__main__':
  define_flags()
  app.run(main)
