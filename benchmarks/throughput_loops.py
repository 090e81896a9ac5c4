"""The timed loops of throughput.py, run in its fresh child processes.

`throughput.py --child=steady` runs child_steady (our collect + train loop
or stock TF-Agents' on a gin file's PPO settings) and `--child=components`
runs child_components (CPU costs per step of the collection pieces); each
prints one JSON line, which the parent reads. TensorFlow, TF-Agents and
tfa_explore are imported inside them: the parent process stays light.
"""

import json
import os
import resource
import time

import common  # benchmarks/common.py, next to this module.

REPO_ROOT = common.REPO_ROOT


def _cpu_seconds():
  usage = resource.getrusage(resource.RUSAGE_SELF)
  return usage.ru_utime + usage.ru_stime


def _setting(name):
  """What the parsed gin files bind to on_policy.Settings' `name`."""
  return common.gin_value(f'on_policy.Settings.{name}')


def _stock_ppo_clip_agent(time_step_spec, action_spec, train_step):
  """TF-Agents' own PPOClipAgent with the gin file's `ppo.ppo_clip_agent`
  settings, on TF-Agents' own networks: the peer of our loop and agent.

  Only for files that train on the full batch with one value head's worth
  of settings (CartPole); the peer has no minibatches or intrinsic reward.
  """
  from tf_agents.agents.ppo import ppo_clip_agent  # pylint: disable=g-import-not-at-top
  from tf_agents.networks import actor_distribution_network  # pylint: disable=g-import-not-at-top
  from tf_agents.networks import value_network  # pylint: disable=g-import-not-at-top
  from tfa_explore.utils import optimizers  # pylint: disable=g-import-not-at-top

  def value(name, default=None):
    try:
      return common.gin_value(f'ppo.ppo_clip_agent.{name}')
    except ValueError:  # Not bound: the factory's default.
      return default

  if value('num_minibatches') != 1 or value('intrinsic_reward') is not None:
    raise ValueError('The stock peer takes full-batch plain PPO files only.')
  activation = value('activation_fn').scoped_configurable_fn
  observation_spec = time_step_spec.observation
  actor_net = actor_distribution_network.ActorDistributionNetwork(
      observation_spec, action_spec,
      fc_layer_params=tuple(value('actor_fc_layers')),
      activation_fn=activation)
  value_net = value_network.ValueNetwork(
      observation_spec, fc_layer_params=tuple(value('value_fc_layers')),
      activation_fn=activation)
  agent = ppo_clip_agent.PPOClipAgent(
      time_step_spec, action_spec,
      optimizer=optimizers.adam_optimizer(
          value('learning_rate'), value('learning_rate_decay_steps'),
          value('adam_epsilon', 1e-5)),
      actor_net=actor_net, value_net=value_net, greedy_eval=True,
      importance_ratio_clipping=value('importance_ratio_clipping'),
      lambda_value=value('lambda_value'),
      discount_factor=value('discount_factor'),
      entropy_regularization=value('entropy_regularization'),
      value_pred_loss_coef=value('value_pred_loss_coef'),
      num_epochs=value('num_epochs'), use_gae=True,
      normalize_rewards=False,
      normalize_observations=value('normalize_observations'),
      gradient_clipping=value('gradient_clipping'),
      train_step_counter=train_step)
  agent.initialize()
  return agent


def child_steady(loop, gin_file, warmup, iterations, gin_bindings=(),
                 tree=False):
  """Runs in a fresh process; prints one JSON line of timings.

  `tree`: also the CPU seconds of the process and its live children (env
  subprocesses) over the timed iterations.
  """
  start_wall = time.monotonic()
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tf_agents.specs import tensor_spec  # pylint: disable=g-import-not-at-top
  from tfa_explore.environments import batched  # pylint: disable=g-import-not-at-top
  from tfa_explore.agents import RndPPOAgent  # pylint: disable=g-import-not-at-top
  from tfa_explore.experiments import on_policy  # pylint: disable=g-import-not-at-top
  from tfa_explore import config  # pylint: disable=g-import-not-at-top
  from tf_agents.utils import common as tfa_common  # pylint: disable=g-import-not-at-top

  config.parse_gin([os.path.join(REPO_ROOT, gin_file)], list(gin_bindings))

  env_loader = _setting('env_loader').scoped_configurable_fn
  agent_fn = _setting('agent_fn').scoped_configurable_fn
  num_envs = _setting('num_envs')
  rollout_length = _setting('rollout_length')
  seed = _setting('seed')
  split = {'collect': 0.0, 'train': 0.0, 'preprocess (in train)': 0.0}
  timing = False
  # `ours` sizes TF's pools as on_policy.train_eval does with the gin
  # file's tf_threads; the stock loop runs at its two settings, TF's own
  # pools and one thread each (the peer is measured at the better one), and
  # `ours_default_threads` with TF's own pools.
  tf_threads = (_setting('tf_threads') if loop == 'ours' else
                1 if loop == 'stock_1_thread' else None)
  if tf_threads is not None:
    from tfa_explore.experiments import run_kit  # pylint: disable=g-import-not-at-top
    run_kit.set_tf_threads(tf_threads)
  loop = {'ours_default_threads': 'ours',
          'stock_1_thread': 'stock'}.get(loop, loop)
  tf.random.set_seed(seed)
  train_step = tf.Variable(0, dtype=tf.int64)

  if loop == 'ours':
    # As on_policy.train_eval builds it: the gin file's parallel_envs says
    # whether each env steps in a subprocess (the Atari files) or in-process.
    parallel = _setting('parallel_envs')
    if parallel:
      batched.enable_multiprocessing()
    environment = batched.make_batched_env(env_loader, num_envs, seed,
                                           parallel=parallel)
    agent = agent_fn(
        time_step_spec=tensor_spec.from_spec(environment.time_step_spec()),
        action_spec=tensor_spec.from_spec(environment.action_spec()),
        train_step_counter=train_step)
    try:
      pre_training_fn = _setting('pre_training_fn')
    except ValueError:
      pre_training_fn = None
    if pre_training_fn is not None:
      pre_training_fn.scoped_configurable_fn(agent=agent,
                                             environment=environment)
    collector = on_policy.RolloutCollector(environment, agent.collect_policy,
                                           rollout_length)
    train = tfa_common.function(agent.train, autograph=False)
    # What `train` spends before its epochs (RND-PPO: intrinsic rewards,
    # the return filter and both GAE streams), a diagnostic of the agent's
    # own method.
    preprocess = tfa_common.function(
        agent._preprocess, autograph=False)  # pylint: disable=protected-access

    def iteration():
      cpu = _cpu_seconds()
      experience = collector.collect()
      split['collect'] += _cpu_seconds() - cpu
      cpu = _cpu_seconds()
      train(experience)
      split['train'] += _cpu_seconds() - cpu
      if timing and isinstance(agent, RndPPOAgent):
        cpu = _cpu_seconds()
        preprocess(experience)
        split['preprocess (in train)'] += _cpu_seconds() - cpu
  else:
    from tf_agents.drivers import dynamic_step_driver  # pylint: disable=g-import-not-at-top
    from tf_agents.environments import batched_py_environment  # pylint: disable=g-import-not-at-top
    from tf_agents.environments import tf_py_environment  # pylint: disable=g-import-not-at-top
    from tf_agents.replay_buffers import tf_uniform_replay_buffer  # pylint: disable=g-import-not-at-top
    environment = tf_py_environment.TFPyEnvironment(
        batched_py_environment.BatchedPyEnvironment(
            [env_loader(seed=s) for s in batched.env_seeds(seed, num_envs)],
            multithreading=False))
    agent = _stock_ppo_clip_agent(environment.time_step_spec(),
                                  environment.action_spec(), train_step)
    replay_buffer = tf_uniform_replay_buffer.TFUniformReplayBuffer(
        agent.collect_data_spec, batch_size=num_envs,
        max_length=rollout_length)
    driver = dynamic_step_driver.DynamicStepDriver(
        environment, agent.collect_policy, observers=[replay_buffer.add_batch],
        num_steps=num_envs * rollout_length)
    driver.run = tfa_common.function(driver.run, autograph=True)
    train = tfa_common.function(agent.train, autograph=False)

    def iteration():
      cpu = _cpu_seconds()
      driver.run()
      split['collect'] += _cpu_seconds() - cpu
      cpu = _cpu_seconds()
      train(replay_buffer.gather_all())
      replay_buffer.clear()
      split['train'] += _cpu_seconds() - cpu

  iteration()
  first_train_seconds = time.monotonic() - start_wall
  for _ in range(warmup - 1):
    iteration()
  cpu, wall = _cpu_seconds(), time.monotonic()
  tree_cpu = common.tree_cpu_seconds() if tree else None
  split = dict.fromkeys(split, 0.0)
  for _ in range(iterations):
    iteration()
  cpu, wall = _cpu_seconds() - cpu, time.monotonic() - wall
  if tree:
    tree_cpu = common.tree_cpu_seconds() - tree_cpu
  milliseconds = {name: 1000.0 * value / iterations
                  for name, value in split.items()}
  # The preprocessing share is timed after the timed loop (it repeats work
  # `train` does), only for our agents.
  if loop == 'ours':
    timing = True
    iteration()  # traces the preprocessing function
    split['preprocess (in train)'] = 0.0
    for _ in range(iterations):
      iteration()
    milliseconds['preprocess (in train)'] = (
        1000.0 * split['preprocess (in train)'] / iterations)
  print(json.dumps(dict(
      env_steps=iterations * num_envs * rollout_length, cpu_seconds=cpu,
      tree_cpu_seconds=tree_cpu, wall_seconds=wall,
      first_train_seconds=first_train_seconds,
      cpu_ms_per_iteration=milliseconds)), flush=True)



def child_components(gin_file, repeats):
  """Per-step CPU costs of the collection pieces (one JSON line).

  The envs, the agent and TF's thread count are `gin_file`'s.
  """
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tf_agents.environments import batched_py_environment  # pylint: disable=g-import-not-at-top
  from tf_agents.environments import tf_py_environment  # pylint: disable=g-import-not-at-top
  from tf_agents.specs import tensor_spec  # pylint: disable=g-import-not-at-top
  from tfa_explore.environments import batched  # pylint: disable=g-import-not-at-top
  from tfa_explore.experiments import on_policy  # pylint: disable=g-import-not-at-top
  from tfa_explore.experiments import evaluation  # pylint: disable=g-import-not-at-top
  from tfa_explore.experiments import run_kit  # pylint: disable=g-import-not-at-top
  from tfa_explore import config  # pylint: disable=g-import-not-at-top

  config.parse_gin([os.path.join(REPO_ROOT, gin_file)], [])
  run_kit.set_tf_threads(_setting('tf_threads'))
  env_loader = _setting('env_loader').scoped_configurable_fn
  agent_fn = _setting('agent_fn').scoped_configurable_fn
  num_envs, steps = 8, 2000
  rng = np.random.default_rng(0)
  actions = rng.integers(2, size=(steps, num_envs))

  def envs():
    return [env_loader(seed=s) for s in batched.env_seeds(0, num_envs)]

  def per_step(function):
    best = None
    for _ in range(repeats):
      cpu = _cpu_seconds()
      function()
      cost = (_cpu_seconds() - cpu) / steps * 1e6
      best = cost if best is None else min(best, cost)
    return best

  results = {}
  for name, environment in (
      ('BatchedPyEnvironment step',
       batched_py_environment.BatchedPyEnvironment(envs(),
                                                   multithreading=False)),
      ('GymnasiumBatch step', batched.GymnasiumBatch(envs()))):
    environment.reset()
    results[name] = per_step(
        lambda env=environment: [env.step(a) for a in actions])
  tf_actions = tf.constant(actions)
  for name, py_environment in (
      ('TFPyEnvironment(BatchedPyEnvironment) step in a tf.function loop',
       batched_py_environment.BatchedPyEnvironment(envs(),
                                                   multithreading=False)),
      ('TFPyEnvironment(GymnasiumBatch) step in a tf.function loop',
       batched.GymnasiumBatch(envs()))):
    tf_env = tf_py_environment.TFPyEnvironment(py_environment)

    @tf.function
    def tf_loop(tf_env=tf_env):
      for t in tf.range(steps):
        tf_env.step(tf_actions[t])

    tf_env.reset()
    tf_loop()
    results[name] = per_step(tf_loop)

  environment = batched.GymnasiumBatch(envs())
  agent = agent_fn(
      time_step_spec=tensor_spec.from_spec(environment.time_step_spec()),
      action_spec=tensor_spec.from_spec(environment.action_spec()),
      train_step_counter=tf.Variable(0, dtype=tf.int64))
  time_step = environment.reset()
  policy = agent.collect_policy
  flat = [tf.constant(x) for x in tf.nest.flatten(time_step)]
  trivial = tf.function(lambda *inputs: inputs[0] + 1).get_concrete_function(
      *flat)
  results['a trivial concrete function call (for scale)'] = per_step(
      lambda: [trivial(*flat) for _ in range(steps)])
  numpy_policy = evaluation.NumpyPolicy(policy, num_envs)
  numpy_policy.action(time_step, ())
  results['collect policy called from Python (NumpyPolicy)'] = per_step(
      lambda: [numpy_policy.action(time_step, ()) for _ in range(steps)])
  collector = on_policy.RolloutCollector(environment, policy, steps)
  collector.collect()
  results['collect policy + GymnasiumBatch step in one traced loop '
          '(RolloutCollector)'] = per_step(collector.collect)
  print(json.dumps(results), flush=True)
