r"""RND-PPO in a stock TF-Agents pipeline: Actor, Reverb, PPOLearner, saver.

The shape of TF-Agents' `examples/ppo/schulman17/train_eval_lib.py`, step
for step, with `RndPPOAgent` in place of `PPOClipAgent`:

  python examples/rnd_ppo_reverb_learner.py --root_dir=runs/example_rnd_ppo

`--agent=ppo_clip` runs TF-Agents' own `PPOClipAgent` through the same
pipeline, for comparison. What RND-PPO needs that stock PPO does not (each
marked `RND-PPO:` below):

1. A value network with two heads (`DualValueNetwork`); the agent computes
   both heads' values on each batch in `train`.
2. An intrinsic reward component (`RndIntrinsicReward`) handed to the
   agent; the agent owns its networks, optimizer and normalisers, so the
   learner's checkpoint carries them.
3. The RND observation normaliser's warm-up: a random agent's observations
   before the first update (Burda et al. 2018, section 2.4). Without it the
   first intrinsic rewards are prediction errors on unnormalised inputs.

One departure from schulman17, for both agents: `PPOLearner` passes whole
batches (`minibatch_size=None`) and the agent runs its own epochs. The
learner's minibatches need values recorded at collection time
(`compute_value_and_advantage_in_train=False`), and the stock `PPOPolicy`
records one scalar value, not RND-PPO's two; so both agents compute values
and advantages in `train` (RND-PPO splits a batch of several sequences
into `num_minibatches` along the batch axis). `PPOLearner` calls
`agent.update_observation_normalizer` once per collected batch, and that is
where RND-PPO advances its statistics (the intrinsic-return filter and both
observation normalisers).

`tests/test_example_rnd_ppo.py` runs this pipeline on a tiny budget with
both agents and checks they train alike (docs/rnd_ppo.md, section "Using
RndPPOAgent in a stock TF-Agents pipeline"). The default budget (100
iterations of 1,024 MountainCar steps, one env) is a starting point, not a
measured result: our measured MountainCar results use our own loop and
gin/rnd_ppo/mountaincar.gin (16 envs).
"""

import os
from typing import Any, Dict, List, Optional

from absl import app
from absl import flags
import reverb
import tensorflow as tf
from tf_agents.agents.ppo import ppo_clip_agent
from tf_agents.metrics import py_metrics
from tf_agents.networks import actor_distribution_network
from tf_agents.networks import value_network
from tf_agents.policies import py_tf_eager_policy
from tf_agents.replay_buffers import reverb_replay_buffer
from tf_agents.train import actor
from tf_agents.train import learner
from tf_agents.train import ppo_learner
from tf_agents.train import triggers
from tf_agents.train.utils import spec_utils
from tf_agents.train.utils import train_utils

from tfa_explore.agents import RndIntrinsicReward
from tfa_explore.agents import RndPPOAgent
from tfa_explore.environments import suite_gymnasium
from tfa_explore.experiments.warm_up import warm_up_observation_normalizer
from tfa_explore.networks import DualValueNetwork
from tfa_explore.networks import rnd_mlp_networks

TABLES = ('training_table', 'normalization_table')

class FixedLengthSequenceObserver:
  """Writes every `sequence_length` collected steps as one item.

  PPO's rollouts run across episode ends (the agent's GAE reads the step
  types), which `reverb_utils.ReverbAddTrajectoryObserver` does not write;
  schulman17 subclasses it for the same reason. The same item goes to
  every table: here the training and the normalisation table.
  """

  def __init__(self, client: reverb.Client, table_names, sequence_length):
    self._client = client
    self._table_names = tuple(table_names)
    self._sequence_length = sequence_length
    self._writer = None
    self._num_steps = 0

  def __call__(self, trajectory):
    if self._writer is None:
      self._writer = self._client.trajectory_writer(
          num_keep_alive_refs=self._sequence_length)
    self._writer.append(trajectory)
    self._num_steps += 1
    if self._num_steps == self._sequence_length:
      sequence = tf.nest.map_structure(
          lambda column: column[-self._sequence_length:], self._writer.history)
      for table in self._table_names:
        self._writer.create_item(table, priority=1.0, trajectory=sequence)
      self._writer.flush()
      self._num_steps = 0

  def reset(self):
    """Drops the steps of an unfinished sequence (called after each run)."""
    if self._writer is not None:
      self._writer.end_episode(clear_buffers=True)
    self._num_steps = 0

  def close(self):
    if self._writer is not None:
      self._writer.close()
      self._writer = None


def make_agent(kind: str, time_step_spec, action_spec, train_step,
               learning_rate: float = 1e-3, fc_layers=(64, 64),
               intrinsic_coef: float = 100.0, num_epochs: int = 4):
  """RndPPOAgent ('rnd_ppo') or TF-Agents' PPOClipAgent ('ppo_clip').

  Both with the hyperparameters of `gin/rnd_ppo/mountaincar.gin` where
  they exist in both; each `train` call takes `num_epochs` full-batch
  gradient steps (the module docstring says why the learner does not cut
  minibatches).
  """
  observation_spec = time_step_spec.observation
  actor_net = actor_distribution_network.ActorDistributionNetwork(
      observation_spec, action_spec, fc_layer_params=fc_layers,
      activation_fn=tf.nn.tanh)
  optimizer = tf.keras.optimizers.Adam(learning_rate, epsilon=1e-5)
  common = dict(
      optimizer=optimizer,
      actor_net=actor_net,
      importance_ratio_clipping=0.1,
      lambda_value=0.95,
      discount_factor=0.99,
      entropy_regularization=0.001,
      value_pred_loss_coef=0.5,
      num_epochs=num_epochs,
      normalize_observations=True,
      # PPOLearner updates the normalisers itself (it refuses agents that
      # do).
      update_normalizers_in_train=False,
      train_step_counter=train_step)
  if kind == 'ppo_clip':
    agent = ppo_clip_agent.PPOClipAgent(
        time_step_spec, action_spec,
        value_net=value_network.ValueNetwork(
            observation_spec, fc_layer_params=fc_layers,
            activation_fn=tf.nn.tanh),
        use_gae=True, use_td_lambda_return=True,
        compute_value_and_advantage_in_train=True, **common)
  elif kind == 'rnd_ppo':
    agent = RndPPOAgent(
        time_step_spec, action_spec,
        # RND-PPO: two value heads, extrinsic and intrinsic.
        value_net=DualValueNetwork(observation_spec, fc_layer_params=fc_layers,
                                   activation_fn=tf.nn.tanh),
        # RND-PPO: the intrinsic reward, with its own networks, optimizer
        # and normalisers (values of gin/rnd_ppo/mountaincar.gin).
        intrinsic_reward=RndIntrinsicReward(
            observation_spec,
            networks_fn=lambda spec: rnd_mlp_networks(
                spec, predictor_fc_layer_params=(128, 128), output_dim=128),
            optimizer=tf.keras.optimizers.Adam(1e-4, epsilon=1e-5),
            coef=intrinsic_coef),
        extrinsic_advantage_coef=2.0, **common)
  else:
    raise ValueError(f"kind must be 'rnd_ppo' or 'ppo_clip', got {kind!r}.")
  agent.initialize()
  return agent


def train(root_dir: str, agent, train_step, collect_env, eval_env,
          num_iterations: int, collect_sequence_length: int,
          warm_up_steps: int = 1024, eval_interval: int = 10,
          eval_episodes: int = 5,
          policy_save_interval: Optional[int] = 1000) -> List[Dict[str, Any]]:
  """Collects with an Actor, learns with a PPOLearner, through Reverb.

  Returns:
    One record per iteration: train step and env steps after it, and the
    greedy eval return when it evaluated.
  """
  # The training table keeps an item until `clear()` after the learner's
  # run: the learner reads one item per run through `take(1)`, whose
  # sampler stays open until the next run and would take (and, with
  # max_times_sampled=1, remove) the next batch before the next run's own
  # sampler sees it.
  tables = [
      reverb.Table(name, sampler=reverb.selectors.Fifo(),
                   remover=reverb.selectors.Fifo(),
                   rate_limiter=reverb.rate_limiters.MinSize(1),
                   max_size=10,
                   max_times_sampled=0 if name == 'training_table' else 1)
      for name in TABLES
  ]
  server = reverb.Server(tables, port=None)
  address = f'localhost:{server.port}'
  train_buffer, normalization_buffer = [
      reverb_replay_buffer.ReverbReplayBuffer(
          agent.collect_data_spec, sequence_length=collect_sequence_length,
          table_name=name, server_address=address, max_cycle_length=1,
          rate_limiter_timeout_ms=1000)
      for name in TABLES
  ]
  observer = FixedLengthSequenceObserver(
      reverb.Client(address), TABLES, collect_sequence_length)

  # RND-PPO: the warm-up of the RND observation normaliser (a no-op for
  # agents without an intrinsic reward; stock PPO has none).
  if hasattr(agent, 'intrinsic_reward') and warm_up_steps:
    warm_up_observation_normalizer(agent, collect_env, num_steps=warm_up_steps)

  env_steps = py_metrics.EnvironmentSteps()
  learning_triggers = []
  if policy_save_interval:
    learning_triggers.append(triggers.PolicySavedModelTrigger(
        os.path.join(root_dir, learner.POLICY_SAVED_MODEL_DIR), agent,
        train_step, interval=policy_save_interval,
        metadata_metrics={triggers.ENV_STEP_METADATA_KEY: env_steps}))

  agent_learner = ppo_learner.PPOLearner(
      root_dir, train_step, agent,
      experience_dataset_fn=lambda: train_buffer.as_dataset(
          sample_batch_size=1,
          sequence_preprocess_fn=agent.preprocess_sequence),
      normalization_dataset_fn=lambda: normalization_buffer.as_dataset(
          sample_batch_size=1,
          sequence_preprocess_fn=agent.preprocess_sequence),
      # Whole batches, one `train` call each: the agent runs its epochs.
      num_samples=1, num_epochs=1, minibatch_size=None,
      triggers=learning_triggers)

  collect_actor = actor.Actor(
      collect_env,
      py_tf_eager_policy.PyTFEagerPolicy(agent.collect_policy,
                                         use_tf_function=True),
      train_step, steps_per_run=collect_sequence_length,
      observers=[observer], metrics=actor.collect_metrics(10) + [env_steps],
      reference_metrics=[env_steps],
      summary_dir=os.path.join(root_dir, learner.TRAIN_DIR))
  eval_actor = actor.Actor(
      eval_env,
      py_tf_eager_policy.PyTFEagerPolicy(agent.policy, use_tf_function=True),
      train_step, episodes_per_run=eval_episodes,
      metrics=actor.eval_metrics(eval_episodes),
      reference_metrics=[env_steps],
      summary_dir=os.path.join(root_dir, 'eval'))

  records = []
  try:
    for iteration in range(num_iterations):
      collect_actor.run()
      observer.reset()
      agent_learner.run()
      train_buffer.clear()
      normalization_buffer.clear()
      record = {'iteration': iteration + 1,
                'train_step': int(train_step.numpy()),
                'env_steps': int(env_steps.result())}
      if ((iteration + 1) % eval_interval == 0 or
          iteration + 1 == num_iterations):
        eval_actor.run_and_log()
        record['eval_return'] = float(eval_actor.metrics[0].result())
      records.append(record)
  finally:
    observer.close()
    server.stop()
  return records


def define_flags():
  """The command line; defined by `__main__` only, so the module imports."""
  flags.DEFINE_string('root_dir', None, 'Run directory.')
  flags.DEFINE_enum('agent', 'rnd_ppo', ['rnd_ppo', 'ppo_clip'],
                    'RndPPOAgent, or stock PPOClipAgent to compare.')
  flags.DEFINE_string('env', 'MountainCar-v0', 'Gymnasium env id.')
  flags.DEFINE_integer('seed', 0, 'Seed of TF and the envs.')
  flags.DEFINE_integer('num_iterations', 100, 'Collect + learn iterations.')
  flags.DEFINE_integer('collect_sequence_length', 1024,
                       'Env steps collected per iteration.')
  flags.mark_flag_as_required('root_dir')


def main(argv):
  del argv
  opts = flags.FLAGS
  tf.random.set_seed(opts.seed)
  collect_env = suite_gymnasium.load(opts.env, seed=opts.seed)
  eval_env = suite_gymnasium.load(opts.env, seed=opts.seed + 10_000)
  _, action_spec, time_step_spec = spec_utils.get_tensor_specs(collect_env)
  train_step = train_utils.create_train_step()
  agent = make_agent(opts.agent, time_step_spec, action_spec, train_step)
  for record in train(opts.root_dir, agent, train_step, collect_env,
                      eval_env, opts.num_iterations,
                      opts.collect_sequence_length):
    if 'eval_return' in record:
      print(f"iteration {record['iteration']}: env steps "
            f"{record['env_steps']:,}, train steps {record['train_step']:,}, "
            f"greedy return {record['eval_return']:.1f}", flush=True)


if __name__ == '__main__':
  define_flags()
  app.run(main)
