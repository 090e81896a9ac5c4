"""The on-policy loop with its collection on actors (Reverb, Ray).

Tiny settings on the fake Counting env (episodes of 6 steps) and RND-PPO
with 8-unit networks: 4 envs shared by 2 actors, rollouts of 8 steps.

* Unit: what the learner trains on (only rollouts of its latest
  publication, one per actor, in task order; the others dropped and
  counted), what it publishes (the RND normaliser reaches an actor's
  agent), the metrics of a batch (those the one-process collector keeps),
  and the bad inputs refused before anything starts (envs the actors
  cannot share, a bad server address or actor task, a one-process
  experiment on the role binaries, a Ray cluster too small), naming their
  binding.
* Integration: 2 actor threads train and resume; an actor process
  SIGKILLed is restarted by the pool; the replay server or the learner
  binary SIGKILLed and started again (the run ends, the learner resumed);
  the binaries' exit code 2; an actor killed on a local Ray cluster is restarted by Ray
  and the run ends.
"""

import multiprocessing
import os
import signal
import time

from absl.testing import absltest
import gin
import portpicker
import pytest
import reverb
import tensorflow as tf
from tf_agents.specs import tensor_spec

from tfa_explore import config
from tfa_explore import errors
from tfa_explore.environments import batched
from tfa_explore.experiments import on_policy
from tfa_explore.experiments import on_policy_distributed
from tfa_explore.experiments.distributed import actor_pool
from tfa_explore.experiments.distributed import launch
from tfa_explore.experiments.distributed import ray_resources
from tfa_explore.experiments.distributed import variables as variables_lib
from tfa_explore.experiments.on_policy_distributed import actor as actor_lib
from tfa_explore.experiments.on_policy_distributed import builder
from tfa_explore.experiments.on_policy_distributed import learner as learner_lib
from tfa_explore.experiments.on_policy_distributed import settings as distributed_settings
from tfa_explore.testing import faults

import run_helpers  # pylint: disable=g-bad-import-order

TINY_GIN = """
import gin.tf.external_configurables
import tfa_explore.environments.suite_gymnasium
import tfa_explore.experiments.intrinsic
import tfa_explore.experiments.on_policy
import tfa_explore.experiments.on_policy_distributed
import tfa_explore.experiments.ppo
import tfa_explore.experiments.warm_up
import tfa_explore.config.experiment
import tfa_explore.networks.rnd_networks
import tfa_explore.testing.fake_envs

NUM_ENV_STEPS = 96
SEED = 0
run_experiment.experiment = @on_policy.distributed_train_eval
on_policy.Distributed.num_actors = 2
on_policy.Distributed.shutdown_timeout_seconds = 20.0
on_policy.Settings.env_loader = @suite_gymnasium.load
suite_gymnasium.load.env_id = 'tfa_explore_testing/Counting-v0'
suite_gymnasium.load.gym_kwargs = {'episode_length': 6}
on_policy.Settings.agent_fn = @ppo.ppo_clip_agent
on_policy.Settings.num_env_steps = %NUM_ENV_STEPS
on_policy.Settings.seed = %SEED
on_policy.Settings.num_envs = 4
on_policy.Settings.rollout_length = 8
on_policy.Settings.eval_interval = 64
on_policy.Settings.num_eval_episodes = 2
on_policy.Settings.checkpoint_interval = 64
on_policy.Settings.log_interval = 32
on_policy.Settings.tf_threads = 1
on_policy.Settings.pre_training_fn = @warm_up_observation_normalizer
warm_up_observation_normalizer.num_steps = 4
ppo.ppo_clip_agent.intrinsic_reward = @intrinsic.rnd_intrinsic_reward
ppo.ppo_clip_agent.learning_rate = 1e-3
ppo.ppo_clip_agent.num_epochs = 2
ppo.ppo_clip_agent.num_minibatches = 2
ppo.ppo_clip_agent.importance_ratio_clipping = 0.2
ppo.ppo_clip_agent.lambda_value = 0.95
ppo.ppo_clip_agent.discount_factor = 0.9
ppo.ppo_clip_agent.entropy_regularization = 0.01
ppo.ppo_clip_agent.value_pred_loss_coef = 0.5
ppo.ppo_clip_agent.extrinsic_advantage_coef = 2.0
ppo.ppo_clip_agent.normalize_observations = True
ppo.ppo_clip_agent.actor_fc_layers = (8,)
ppo.ppo_clip_agent.value_fc_layers = (8,)
ppo.ppo_clip_agent.activation_fn = @tf.nn.tanh
intrinsic.rnd_intrinsic_reward.coef = 1.0
intrinsic.rnd_intrinsic_reward.discount = 0.99
intrinsic.rnd_intrinsic_reward.non_episodic = True
intrinsic.rnd_intrinsic_reward.normalize_returns = True
intrinsic.rnd_intrinsic_reward.normalize_observations = True
intrinsic.rnd_intrinsic_reward.observation_clip = 5.0
intrinsic.rnd_intrinsic_reward.learning_rate = 1e-3
intrinsic.rnd_intrinsic_reward.adam_epsilon = 1e-5
intrinsic.rnd_intrinsic_reward.predictor_update_proportion = 0.5
intrinsic.rnd_intrinsic_reward.first_visits_only = False
intrinsic.rnd_intrinsic_reward.networks_fn = @rnd_mlp_networks
rnd_mlp_networks.torso_fc_layer_params = (8,)
rnd_mlp_networks.predictor_fc_layer_params = (8,)
rnd_mlp_networks.output_dim = 4
"""

# The PPO twin of TINY_GIN: no intrinsic reward.
TWIN_BINDINGS = ('ppo.ppo_clip_agent.intrinsic_reward = None',
                 'on_policy.Settings.pre_training_fn = None')


class _TestCase(tf.test.TestCase):
  # tf.test.TestCase's deprecated `test_session` is not a test.
  test_session = None

  def setUp(self):
    super().setUp()
    gin.clear_config()
    self.addCleanup(gin.clear_config)
    self.gin_file = os.path.join(self.get_temp_dir(), 'tiny_rnd_ppo.gin')
    with open(self.gin_file, 'w') as f:
      f.write(TINY_GIN)

  def setup(self, *bindings) -> distributed_settings.Setup:
    config.parse_gin([self.gin_file], list(bindings))
    return distributed_settings.setup_from_gin()

  def server(self, setup, agent):
    server = reverb.Server(builder.make_tables(setup, agent), port=None)
    self.addCleanup(server.stop)
    return f'localhost:{server.port}'


class SettingsTest(_TestCase):

  def test_envs_the_actors_cannot_share_are_refused_naming_both(self):
    with self.assertRaisesRegex(
        errors.ConfigError,
        r'on_policy.Settings.num_envs = 4 rollouts of '
        r'on_policy.Settings.rollout_length = 8 steps .* '
        r'on_policy.Distributed.num_actors = 3 actors cannot share evenly'):
      self.setup('on_policy.Distributed.num_actors = 3')

  def test_bad_values_name_their_binding(self):
    for binding, message in [
        ("on_policy.Distributed.actor_mode = 'fork'",
         "on_policy.Distributed.actor_mode must be 'thread' or 'process'"),
        ('on_policy.Distributed.num_actors = 0',
         'on_policy.Distributed.num_actors must be >= 1'),
        ('on_policy.Distributed.rollout_timeout_seconds = -1.0',
         'on_policy.Distributed.rollout_timeout_seconds must be >= 0')]:
      gin.clear_config()
      with self.assertRaisesRegex(errors.ConfigError, message):
        self.setup(binding)

  def test_refused_before_root_dir_is_touched(self):
    root_dir = os.path.join(self.get_temp_dir(), 'never_written')
    with self.assertRaisesRegex(errors.ConfigError, 'cannot share evenly'):
      config.run(root_dir, [self.gin_file],
                 ['on_policy.Distributed.num_actors = 3'])
    self.assertFalse(os.path.exists(root_dir))

  def test_each_actor_steps_its_share_of_the_batch(self):
    setup = self.setup()
    self.assertEqual(setup.envs_per_actor, 2)
    self.assertEqual(setup.setting('num_actors'),
                     'on_policy.Distributed.num_actors')

  def test_a_ray_cluster_too_small_is_refused_naming_the_bindings(self):
    setup = self.setup('on_policy.Distributed.num_actors = 4')
    with self.assertRaisesRegex(
        errors.ConfigError,
        r'The Ray cluster has 2 CPUs; this run needs 6 \(replay server 1 \+ '
        r'learner 1 \+ 4 actors x 1\).*on_policy.Distributed.num_actors or '
        r'the on_policy.RayResources requests'):
      ray_resources.check_resources(setup, distributed_settings.RayResources(),
                                    {'CPU': 2.0}, {'CPU': 2.0})


class ActorEnvsTest(absltest.TestCase):
  """The one layout of both families' actors (`actor_pool.actor_envs`)."""

  def test_each_actor_steps_its_slots_seeded_as_in_one_process(self):
    # 3 actors of 2 envs: actor 1 steps envs 2 and 3, seeded 10 + 2, + 3.
    self.assertEqual(actor_pool.actor_envs(1, 3, 2, seed=10),
                     actor_pool.ActorEnvs(first=2, seed=12))

  def test_a_restart_seeds_envs_no_actor_used(self):
    # Incarnation 2 of actor 1: 10 + 2 + 2 * (3 * 2) = 24.
    self.assertEqual(actor_pool.actor_envs(1, 3, 2, seed=10, incarnation=2),
                     actor_pool.ActorEnvs(first=2, seed=24))
    seeds = [actor_pool.actor_envs(task, 3, 2, 10, incarnation).seed + k
             for task in range(3) for incarnation in range(3)
             for k in range(2)]
    self.assertLen(set(seeds), len(seeds))


class RoleBinariesInputTest(_TestCase):

  def test_a_missing_or_malformed_server_address_is_refused(self):
    for address in ('', 'localhost', 'localhost:', ':8000', 'host:port'):
      with self.assertRaisesRegex(errors.ConfigError,
                                  '--replay_server must be HOST:PORT'):
        launch.check_server_address(address)
    launch.check_server_address('10.0.0.1:8000')

  def test_a_task_out_of_range_names_num_actors(self):
    with self.assertRaisesRegex(
        errors.ConfigError,
        r'^--task must be in \[0, on_policy.Distributed.num_actors = 2\), '
        r'got -1\.$'):
      actor_lib.run_actor(self.setup(), task=-1, replay_server='localhost:1')

  def test_the_bound_experiment_gives_the_roles(self):
    config.parse_gin([self.gin_file], [])
    self.assertEqual(launch.bound_roles().name, 'on_policy')

  def test_a_one_process_experiment_is_refused(self):
    config.parse_gin([self.gin_file],
                     ['run_experiment.experiment = @on_policy.train_eval'])
    with self.assertRaisesRegex(
        errors.ConfigError,
        r'@on_policy.train_eval runs in one process \(train/train_eval.py\)'):
      launch.bound_roles()


def fake_rollout(spec, value):
  """A rollout of `spec` whose observations all hold `value`."""
  zeros = tensor_spec.zero_spec_nest(spec)
  return zeros._replace(observation=tf.fill(zeros.observation.shape,
                                            float(value)))


class RolloutReaderTest(_TestCase):

  def setUp(self):
    super().setUp()
    self.setup_ = self.setup()
    self.agent = builder.make_agent(self.setup_)
    self.address = self.server(self.setup_, self.agent)
    self.client = reverb.Client(self.address)
    self.item_spec = builder.rollout_spec(self.agent, 2, 8)
    self.reader = builder.RolloutReader(self.client, self.item_spec, 2)

  def write(self, task, publication, value):
    writer = builder.RolloutWriter(self.client, task)
    writer.write(fake_rollout(self.item_spec['trajectory'], value),
                 publication, train_step=7)
    writer.close(timeout_ms=1000)

  def test_only_rollouts_of_the_publication_are_trained_on(self):
    self.write(task=1, publication=5, value=1.0)
    self.write(task=0, publication=4, value=-1.0)  # of earlier weights
    with self.assertLogs(level='WARNING') as logs:
      self.assertFalse(self.reader.take(5))
    self.assertEqual(self.reader.missing(), (0,))
    self.assertIn('Dropped rollouts of earlier weights (of train steps 7)',
                  logs.output[0])
    self.write(task=1, publication=5, value=2.0)  # a restarted actor's
    self.write(task=0, publication=5, value=0.0)
    self.assertTrue(self.reader.take(5))
    self.assertEqual((self.reader.stale, self.reader.duplicates), (1, 1))
    batch = self.reader.batch()
    # Envs in task order: actor 0's two rows, then actor 1's first write.
    self.assertAllEqual(batch.observation[:, 0, 0], [0.0, 0.0, 1.0, 1.0])
    self.assertEqual(batch.observation.shape, (4, 8, 1))

  def test_a_new_publication_forgets_the_rollouts_of_the_last(self):
    self.write(task=0, publication=5, value=0.0)
    self.assertFalse(self.reader.take(5))
    self.assertFalse(self.reader.take(6))
    self.assertEqual(self.reader.missing(), (0, 1))


class SharedStateTest(_TestCase):

  def test_an_actor_gets_the_learners_weights_and_rnd_normaliser(self):
    setup = self.setup()
    learner_agent = builder.make_agent(setup)
    actor_agent = builder.make_agent(setup)
    learner_state = builder.SharedState(learner_agent)
    actor_state = builder.SharedState(actor_agent)
    self.assertLen(learner_state.nest()['intrinsic_reward'], len(
        learner_agent.intrinsic_reward.acting_variables))
    self.assertNotEmpty(learner_state.nest()['intrinsic_reward'])
    learner_agent.intrinsic_reward.observe(tf.fill([16, 1], 3.0))
    publication = learner_state.new_publication()
    address = self.server(setup, learner_agent)
    variables_lib.SharedVariables(address, learner_state).push()
    variables_lib.SharedVariables(address, actor_state).pull()
    self.assertEqual(int(actor_state.publication), publication)
    for learner_variable, actor_variable in zip(
        tf.nest.flatten(learner_state.nest()),
        tf.nest.flatten(actor_state.nest())):
      self.assertAllEqual(learner_variable, actor_variable)
    self.assertEqual(variables_lib.num_pushes(reverb.Client(address)), 1)

  def test_the_ppo_twin_publishes_no_intrinsic_entry(self):
    setup = self.setup(*TWIN_BINDINGS)
    nest = builder.SharedState(builder.make_agent(setup)).nest()
    self.assertNotIn('intrinsic_reward', nest)


class MetricsTest(_TestCase):

  def test_a_batch_counts_as_the_one_process_collector_counts(self):
    setup = self.setup()
    agent = builder.make_agent(setup)
    env = batched.make_batched_env(setup.settings.env_loader, 4, 0)
    self.addCleanup(env.close)
    collected = on_policy.TrainMetrics(4, 10)
    collector = on_policy.RolloutCollector(env, agent.collect_policy, 8,
                                           collected.as_list())
    rollouts = [collector.collect() for _ in range(3)]
    observed = on_policy.TrainMetrics(4, 10)
    for rollout in rollouts:
      learner_lib.observe_rollout(observed.as_list(), rollout)
    for name in ('AverageReturn', 'AverageEpisodeLength', 'NumberOfEpisodes',
                 'TerminatedEpisodes'):
      self.assertEqual(float(observed.results()[name]),
                       float(collected.results()[name]), name)
    # 96 steps; each env's 6-step episodes leave a reset step after each.
    self.assertEqual(int(observed.env_steps.result()),
                     int(collected.env_steps.result()))
    self.assertEqual(int(observed.episodes.result()), 12)


@pytest.mark.integration
class OneMachineTest(_TestCase):

  def test_two_actor_threads_train_and_the_run_resumes(self):
    root_dir = os.path.join(self.get_temp_dir(), 'run')
    first = config.run(root_dir, [self.gin_file], [])
    # 4 envs x 8 steps per batch, the reset steps after episode ends not
    # counted: the run stops at the first batch past 96 env steps.
    self.assertGreaterEqual(first['EnvironmentSteps'], 96)
    self.assertEqual(first['AverageReturn'], 21.0)  # 1 + 2 + ... + 6
    train = run_helpers.read_events(os.path.join(root_dir, 'train'))
    for tag in ('Losses/total_loss', 'Losses/intrinsic_value_loss',
                'Intrinsic/reward_raw_mean', 'Metrics/AverageReturn',
                'Replay/stale_rollouts', 'Replay/duplicate_rollouts',
                'Actors/restarts'):
      self.assertIn(tag, train)
    self.assertEqual(train['Replay/stale_rollouts'][-1][1], 0.0)
    self.assertTrue(os.path.isdir(os.path.join(root_dir, 'policies',
                                               'greedy_policy')))

    gin.clear_config()
    second = config.run(root_dir, [self.gin_file], ['NUM_ENV_STEPS = 160'])
    self.assertGreaterEqual(second['EnvironmentSteps'], 160)
    steps = [step for step, _ in
             run_helpers.read_events(os.path.join(root_dir, 'train'))[
                 'Metrics/EnvironmentSteps']]
    self.assertEqual(steps, sorted(steps))  # resumed, not restarted
    self.assertLen(steps, len(set(steps)))

  def test_a_killed_actor_process_is_restarted_and_the_run_ends(self):
    root_dir = os.path.join(self.get_temp_dir(), 'run')
    config.parse_gin([self.gin_file], [
        "on_policy.Distributed.actor_mode = 'process'",
        'NUM_ENV_STEPS = 400', 'on_policy.Settings.checkpoint_interval = 96'])
    run = faults.RunThread(lambda: on_policy_distributed.distributed_train_eval(
        root_dir=root_dir))
    run.wait_for_checkpoint(root_dir, 96, deadline=time.time() + 600)
    actors = {child.name: child for child in
              multiprocessing.active_children()}
    os.kill(actors['on_policy_actor_1'].pid, signal.SIGKILL)
    results = run.finish(timeout_seconds=600)
    self.assertGreaterEqual(results['EnvironmentSteps'], 400)
    metrics = faults.final_metrics(os.path.join(root_dir, 'train'))
    self.assertEqual(metrics['Actors/restarts'], 1.0)


@pytest.mark.integration
class RoleKilledTest(_TestCase):
  """The three binaries on loopback, one role SIGKILLed after the
  learner's first checkpoint and started again (`faults.RoleProcesses`)."""

  def run_with_a_kill(self, role):
    workdir = self.get_temp_dir()
    gin_file = os.path.join(workdir, 'role_killed.gin')
    with open(gin_file, 'w') as f:
      f.write(TINY_GIN + 'NUM_ENV_STEPS = 300\n'
              'on_policy.Settings.checkpoint_interval = 64\n')
    root_dir = os.path.join(workdir, 'run')
    log_dir = os.path.join(workdir, 'logs')
    os.makedirs(log_dir)
    roles = faults.RoleProcesses(
        gin_file, root_dir, os.path.join(workdir, 'replay_checkpoints'),
        portpicker.pick_unused_port(), log_dir, num_actors=2)
    self.addCleanup(roles.stop_all)
    for name in ('replay_server', 'learner', 'actor_0', 'actor_1'):
      roles.start(name)
    run_helpers.wait_until(
        self, lambda: faults.checkpoint_step(root_dir) >= 64,
        roles.processes['learner'], 600, roles.tails)
    roles.kill(role)
    roles.start(role)
    self.assertEqual(roles.processes['learner'].wait(timeout=600), 0,
                     roles.tails())
    for task in range(2):
      self.assertEqual(roles.processes[f'actor_{task}'].wait(timeout=120),
                       0, roles.tails())
    metrics = faults.final_metrics(os.path.join(root_dir, 'train'))
    self.assertGreaterEqual(metrics['Metrics/EnvironmentSteps'], 300)
    return roles.log('learner'), metrics

  def test_a_killed_learner_resumes_and_drops_rollouts_of_its_weights(self):
    learner_log, metrics = self.run_with_a_kill('learner')
    self.assertIn('Resumed from checkpoint at env step', learner_log)
    # Rollouts of the killed learner's last weights, if the actors wrote
    # them, were dropped and counted by the new one.
    self.assertIn('Replay/stale_rollouts', metrics)

  def test_a_killed_replay_server_costs_the_rollouts_in_flight_only(self):
    learner_log, _ = self.run_with_a_kill('replay_server')
    # The learner waited for the server, or its client reconnected by
    # itself; either way it published its weights again.
    self.assertRegex(learner_log, 'answers again; the learner carries on|'
                     'publishes (them|its weights) again')


@pytest.mark.integration
class BinariesTest(_TestCase):

  def test_envs_the_actors_cannot_share_exit_2_before_anything_starts(self):
    root_dir = os.path.join(self.get_temp_dir(), 'run')
    result = run_helpers.run_binary(
        'train_eval.py', f'--root_dir={root_dir}',
        f'--gin_file={self.gin_file}',
        '--gin_bindings=on_policy.Distributed.num_actors = 3')
    run_helpers.assert_one_error_line(self, result, 'cannot share evenly')
    self.assertNotIn('Replay server listening', result.stderr)
    self.assertFalse(os.path.exists(root_dir))

  def test_an_empty_server_address_exits_2(self):
    result = run_helpers.run_binary('learner.py', '--replay_server=',
                                    f'--root_dir={self.get_temp_dir()}',
                                    f'--gin_file={self.gin_file}')
    run_helpers.assert_one_error_line(self, result,
                                      '--replay_server must be HOST:PORT')

  def test_a_missing_server_address_exits_2(self):
    result = run_helpers.run_binary('actor.py', '--task=0',
                                    f'--gin_file={self.gin_file}')
    run_helpers.assert_one_error_line(self, result, 'replay_server')


def _ray_available():
  try:
    import ray  # pylint: disable=g-import-not-at-top,unused-import
    return True
  except ImportError:
    return False


# A hang guard, not a speed check: on a loaded machine a local cluster
# starts its workers (each importing TensorFlow) a few at a time.
_RAY_HANG_SECONDS = 1800


@pytest.mark.integration
@pytest.mark.timeout(2 * _RAY_HANG_SECONDS)
@absltest.skipUnless(_ray_available(), 'needs the ray extra')
class RayTest(_TestCase):

  def test_an_actor_killed_on_ray_is_restarted_and_the_run_ends(self):
    from tfa_explore.experiments.distributed import ray_launch  # pylint: disable=g-import-not-at-top
    root_dir = os.path.join(self.get_temp_dir(), 'ray_run')
    config.parse_gin([self.gin_file], [
        'NUM_ENV_STEPS = 400', 'on_policy.Settings.checkpoint_interval = 96',
        'on_policy.RayResources.replay_server_num_cpus = 0.5',
        'on_policy.RayResources.learner_num_cpus = 0.5',
        'on_policy.RayResources.actor_num_cpus = 0.5'])
    run = faults.RunThread(lambda: ray_launch.train_eval(root_dir))
    self.addCleanup(faults.end_ray_run, run, [
        'on_policy_learner', 'on_policy_actor_0', 'on_policy_actor_1',
        'on_policy_replay_server'], _RAY_HANG_SECONDS)
    deadline = time.time() + _RAY_HANG_SECONDS
    run.wait_for_checkpoint(root_dir, 96, deadline)
    faults.kill_ray_actor('on_policy_actor_1', deadline)
    results = run.finish(timeout_seconds=_RAY_HANG_SECONDS)
    self.assertGreaterEqual(results['EnvironmentSteps'], 400)
    self.assertEqual(results['AverageReturn'], 21.0)
    metrics = faults.final_metrics(os.path.join(root_dir, 'train'))
    self.assertGreaterEqual(metrics['Actors/restarts'], 1.0)


if __name__ == '__main__':
  absltest.main()
