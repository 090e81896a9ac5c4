"""Every gin file under gin/ parses and builds its env and agent.

The files are globbed, so a new gin file is covered without editing this
test. Convention checked here (see WORKSPACE.md): each runnable file binds
`run_experiment.experiment`, defines the macros NUM_ENV_STEPS and SEED, and
its experiment has `env_loader` and `agent_fn` parameters; `agent_fn` takes
(time_step_spec, action_spec, train_step_counter).
"""

import glob
import os
import re
import shutil
import tempfile
from unittest import mock

from absl.testing import absltest
from absl.testing import parameterized
import gin
import numpy as np
import tensorflow as tf
from tf_agents.environments import tf_py_environment

from tfa_explore import config
from tfa_explore import errors

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GIN_FILES = sorted(glob.glob(os.path.join(REPO_ROOT, 'gin', '**', '*.gin'),
                             recursive=True))
# Variants of an on-policy file that run it distributed -> the file they
# include (distributed lines only on top of it).
DISTRIBUTED_VARIANTS = {'gin/rnd_ppo/mountaincar_distributed.gin':
                            'gin/rnd_ppo/mountaincar.gin',
                        'gin/rnd_ppo/bsuite_deep_sea_distributed.gin':
                            'gin/rnd_ppo/bsuite_deep_sea.gin'}
RND_PPO_FILES = sorted(
    path for path in
    glob.glob(os.path.join(REPO_ROOT, 'gin', 'rnd_ppo', '*.gin'))
    if os.path.relpath(path, REPO_ROOT) not in DISTRIBUTED_VARIANTS)
R2D3_FILES = sorted(glob.glob(os.path.join(REPO_ROOT, 'gin', 'r2d3', '*.gin')))
# Variants of a bonus file -> the bonus file they include (intrinsic lines
# only on top of it).
BONUS_VARIANTS = {'gin/r2d2_rnd/minigrid_doorkey8x8_embedding.gin':
                      'gin/r2d2_rnd/minigrid_doorkey8x8.gin'}
# R2D2 + RND and R2D3 + RND files: gin/r2d2/<env>.gin or gin/r2d3/<env>.gin
# plus the exploration bonus.
BONUS_FILES = sorted(
    path for path in
    glob.glob(os.path.join(REPO_ROOT, 'gin', 'r2d2_rnd', '*.gin')) +
    glob.glob(os.path.join(REPO_ROOT, 'gin', 'r2d3_rnd', '*.gin'))
    if os.path.relpath(path, REPO_ROOT) not in BONUS_VARIANTS)
# R2D3 file -> its R2D2 twin (same agent and settings, no demonstrations).
R2D3_TWINS = {'gin/r2d3/minigrid_doorkey8x8.gin':
                  'gin/r2d2/minigrid_doorkey8x8.gin',
              'gin/r2d3/atari_pong.gin': 'gin/r2d2/atari_pong.gin'}
# R2D3 files without a twin, and why.
R2D3_WITHOUT_TWIN = {}

# What an RND-PPO file may bind after including its PPO twin: the intrinsic
# reward (the agent's switch, its factory, the RND networks) and the warm-up
# of its observation normaliser, nothing else.
INTRINSIC_PARAMETERS = frozenset([('ppo.ppo_clip_agent', 'intrinsic_reward'),
                                  ('r2d2.r2d2_agent_fn', 'exploration'),
                                  ('on_policy.Settings', 'pre_training_fn')])
# An R2D2 + RND file may also have its own budget (NUM_ENV_STEPS) and eval
# spacing.
BUDGET_BINDINGS = frozenset([('', 'r2d2.Settings', 'num_env_steps'),
                             ('', 'r2d2.Settings', 'eval_interval'),
                             ('NUM_ENV_STEPS', 'gin.macro', 'value')])
INTRINSIC_CONFIGURABLES = frozenset(['intrinsic.rnd_intrinsic_reward',
                                     'intrinsic.intrinsic_q_bonus',
                                     'intrinsic.ngu_bonus',
                                     'intrinsic.controllable_embedding',
                                     'warm_up_observation_normalizer',
                                     'rnd_mlp_networks', 'rnd_conv_networks'])
# A binding line `selector.parameter = value` (scopes are not used here).
BINDING_LINE = re.compile(r'^([A-Za-z_][\w.]*)\.(\w+)\s*=')


def _bindings(path):
  """{(scope, selector, parameter): repr(value)} of one parsed gin file."""
  gin.clear_config()
  config.parse_gin([path], [])
  bindings = {}
  # pylint: disable=protected-access
  for (scope, selector), parameters in gin.config._CONFIG.items():
    for name, value in parameters.items():
      bindings[(scope, selector, name)] = repr(value)
  gin.clear_config()
  return bindings


def is_r2d3_binding(key):
  """Bindings an R2D3 file may have that its R2D2 twin lacks."""
  _, selector, name = key
  if selector == 'r2d2.Settings':
    return name in ('replay', 'agent_fn')
  return selector.startswith('r2d3.')


def is_intrinsic_binding(key):
  """Bindings an RND-PPO file may add to its PPO twin."""
  _, selector, name = key
  # Parsed selectors may be module-qualified (tfa_explore.networks....).
  return (any(selector == configurable or selector.endswith('.' + configurable)
              for configurable in INTRINSIC_CONFIGURABLES) or
          (selector, name) in INTRINSIC_PARAMETERS)


def is_distributed_binding(key):
  """Bindings a distributed variant may add to its one-process file."""
  _, selector, name = key
  return (selector == 'on_policy.Distributed' or
          (selector, name) == ('runner.run_experiment', 'experiment'))


def own_binding_lines(path):
  """(selector, parameter) of each binding written in the file itself."""
  with open(path) as f:
    matches = [BINDING_LINE.match(line) for line in f]
  return [match.groups() for match in matches if match]


def differing_bindings(rnd_path, ppo_path):
  """Keys bound differently (or only) in one of the two files."""
  rnd, ppo = _bindings(rnd_path), _bindings(ppo_path)
  return sorted(key for key in set(rnd) | set(ppo)
                if rnd.get(key) != ppo.get(key))


def _relative(path):
  return os.path.relpath(path, REPO_ROOT)


@gin.configurable('undeclared_train_eval', module='test_gin_files')
def _undeclared_train_eval(root_dir):
  """A function no family declared an experiment (`declare_experiment`)."""
  raise AssertionError(f'ran in {root_dir}')


class GinFilesTest(parameterized.TestCase):

  def setUp(self):
    super().setUp()
    gin.clear_config()

  def tearDown(self):
    gin.clear_config()
    super().tearDown()

  def test_gin_files_exist(self):
    names = {_relative(path) for path in GIN_FILES}
    for expected in ('gin/ppo/cartpole.gin', 'gin/ppo/mountaincar.gin',
                     'gin/ppo/minigrid_empty8x8.gin'):
      self.assertIn(expected, names)

  def test_rnd_ppo_files_exist(self):
    names = {_relative(path) for path in RND_PPO_FILES}
    for env in ('mountaincar', 'minigrid_empty8x8', 'minigrid_doorkey5x5',
                'montezuma'):
      self.assertIn(f'gin/rnd_ppo/{env}.gin', names)

  @parameterized.named_parameters(
      (os.path.basename(path).replace('.', '_'), path)
      for path in RND_PPO_FILES)
  def test_rnd_ppo_file_is_its_ppo_twin_plus_intrinsic_lines(self, rnd_path):
    ppo_path = os.path.join(REPO_ROOT, 'gin', 'ppo', os.path.basename(rnd_path))
    self.assertTrue(os.path.exists(ppo_path),
                    f'{_relative(rnd_path)} has no PPO twin {ppo_path}')
    with open(rnd_path) as f:
      self.assertIn(f"\ninclude '{_relative(ppo_path)}'\n", f.read())
    not_intrinsic = [line for line in own_binding_lines(rnd_path)
                     if not is_intrinsic_binding(('',) + line)]
    self.assertEmpty(not_intrinsic,
                     f'{_relative(rnd_path)} binds non-intrinsic values '
                     f'after including its twin: {not_intrinsic}')
    differing = differing_bindings(rnd_path, ppo_path)
    self.assertEmpty([key for key in differing
                      if not is_intrinsic_binding(key)])
    # The switch: the RND component in the RND file, None in the twin.
    switch = ('', 'ppo.ppo_clip_agent', 'intrinsic_reward')
    self.assertEqual(_bindings(rnd_path)[switch],
                     '@intrinsic.rnd_intrinsic_reward')
    self.assertEqual(_bindings(ppo_path)[switch], 'None')

  def test_bonus_files_exist(self):
    self.assertEqual({_relative(path) for path in BONUS_FILES},
                     {'gin/r2d2_rnd/bsuite_deep_sea.gin',
                      'gin/r2d2_rnd/minigrid_doorkey8x8.gin',
                      'gin/r2d3_rnd/minigrid_doorkey8x8.gin'})

  @parameterized.named_parameters(
      (_relative(path).replace('/', '_').replace('.', '_'), path)
      for path in BONUS_FILES)
  def test_bonus_file_is_its_twin_plus_intrinsic_lines(self, path):
    # gin/r2d2_rnd/x.gin -> gin/r2d2/x.gin, gin/r2d3_rnd/x.gin -> gin/r2d3/x.gin
    agent = os.path.basename(os.path.dirname(path))[:-len('_rnd')]
    r2d2_path = os.path.join(REPO_ROOT, 'gin', agent, os.path.basename(path))
    with open(path) as f:
      self.assertIn(f"\ninclude '{_relative(r2d2_path)}'\n", f.read())
    not_intrinsic = [line for line in own_binding_lines(path)
                     if not (is_intrinsic_binding(('',) + line) or
                             ('',) + line in BUDGET_BINDINGS)]
    self.assertEmpty(not_intrinsic)
    differing = differing_bindings(path, r2d2_path)
    self.assertEmpty([key for key in differing
                      if not (is_intrinsic_binding(key) or
                              key in BUDGET_BINDINGS)])
    switch = ('', 'r2d2.r2d2_agent_fn', 'exploration')
    self.assertIn(_bindings(path)[switch],
                  ('@intrinsic.intrinsic_q_bonus', '@intrinsic.ngu_bonus'))
    self.assertNotIn(switch, _bindings(r2d2_path))

  @parameterized.named_parameters(
      (variant.replace('/', '_').replace('.', '_'), variant, base)
      for variant, base in BONUS_VARIANTS.items())
  def test_bonus_variant_is_its_base_plus_intrinsic_lines(self, variant,
                                                          base):
    path = os.path.join(REPO_ROOT, variant)
    with open(path) as f:
      self.assertIn(f"\ninclude '{base}'\n", f.read())
    self.assertEmpty([line for line in own_binding_lines(path)
                      if not is_intrinsic_binding(('',) + line)])
    self.assertEmpty(
        [key for key in differing_bindings(path,
                                           os.path.join(REPO_ROOT, base))
         if not is_intrinsic_binding(key)])

  def test_twin_check_catches_a_non_intrinsic_line(self):
    # The allowed set is not vacuous: a learning rate set after the include
    # is reported, even when it repeats the twin's value.
    rnd_path = os.path.join(REPO_ROOT, 'gin', 'rnd_ppo', 'mountaincar.gin')
    temp_dir = tempfile.mkdtemp(prefix='tfa_explore_gin_')
    self.addCleanup(shutil.rmtree, temp_dir, ignore_errors=True)
    gin.add_config_file_search_path(REPO_ROOT)  # for the include
    key = ('', 'ppo.ppo_clip_agent', 'learning_rate')
    self.assertFalse(is_intrinsic_binding(key))
    self.assertTrue(is_intrinsic_binding(
        ('', 'intrinsic.rnd_intrinsic_reward', 'coef')))
    # The twin's value 1e-3 repeated: only the line check sees it.
    for value, differing in (('1e-3', []), ('3e-4', [key])):
      changed = os.path.join(temp_dir, f'changed_{value}.gin')
      with open(rnd_path) as source, open(changed, 'w') as target:
        target.write(source.read() +
                     f'ppo.ppo_clip_agent.learning_rate = {value}\n')
      self.assertIn(key[1:], own_binding_lines(changed))
      self.assertEqual(differing_bindings(rnd_path, changed), differing)

  @parameterized.parameters(sorted(DISTRIBUTED_VARIANTS.items()))
  def test_distributed_variant_is_its_base_plus_distributed_lines(
      self, variant, base):
    with open(os.path.join(REPO_ROOT, variant)) as f:
      self.assertIn(f"include '{base}'", f.read())
    others = [key for key in differing_bindings(
        os.path.join(REPO_ROOT, variant), os.path.join(REPO_ROOT, base))
              if not is_distributed_binding(key)]
    self.assertEqual(others, [], f'{variant} changes more than how the '
                     f'batch is collected: {others}')

  def test_every_r2d3_file_has_a_twin_or_a_reason(self):
    names = {_relative(path) for path in R2D3_FILES}
    self.assertIn('gin/r2d3/minigrid_doorkey8x8.gin', names)
    self.assertEqual(names, set(R2D3_TWINS) | set(R2D3_WITHOUT_TWIN))

  @parameterized.named_parameters(
      (os.path.basename(path).replace('.', '_'), path)
      for path in R2D3_TWINS)
  def test_r2d2_twin_differs_only_in_r2d3_bindings(self, r2d3_path):
    r2d3_path = os.path.join(REPO_ROOT, r2d3_path)
    r2d2_path = os.path.join(REPO_ROOT, R2D3_TWINS[_relative(r2d3_path)])
    with open(r2d3_path) as f:
      self.assertIn(f"\ninclude '{_relative(r2d2_path)}'\n", f.read())
    differing = differing_bindings(r2d3_path, r2d2_path)
    not_r2d3 = [key for key in differing if not is_r2d3_binding(key)]
    self.assertEmpty(not_r2d3,
                     f'{_relative(r2d3_path)} and its R2D2 twin differ in '
                     f'non-R2D3 bindings: {not_r2d3}')
    # The switches: agent factory and demonstrations.
    r2d3_bindings, r2d2_bindings = _bindings(r2d3_path), _bindings(r2d2_path)
    agent_fn = ('', 'r2d2.Settings', 'agent_fn')
    self.assertEqual(r2d3_bindings[agent_fn], '@r2d3.r2d3_agent_fn')
    self.assertEqual(r2d2_bindings[agent_fn], '@r2d2.r2d2_agent_fn')
    replay = ('', 'r2d2.Settings', 'replay')
    self.assertEqual(r2d3_bindings[replay], '@r2d3.DemonstrationReplay()')
    self.assertNotIn(replay, r2d2_bindings)
    self.assertFalse(any(key[1].startswith('r2d3.') for key in r2d2_bindings))

  def test_r2d3_twin_check_catches_a_shared_difference(self):
    r2d3_path = os.path.join(REPO_ROOT, 'gin', 'r2d3',
                             'minigrid_doorkey8x8.gin')
    temp_dir = tempfile.mkdtemp(prefix='tfa_explore_gin_')
    self.addCleanup(shutil.rmtree, temp_dir, ignore_errors=True)
    changed = os.path.join(temp_dir, 'changed.gin')
    # An R2D3 line that overrides a shared R2D2 value after the include.
    with open(r2d3_path) as source, open(changed, 'w') as target:
      target.write(source.read() + 'r2d2.r2d2_agent_fn.lstm_size = 32\n')
    gin.add_config_file_search_path(REPO_ROOT)  # for the include
    differing = differing_bindings(r2d3_path, changed)
    self.assertEqual(differing, [('', 'r2d2.r2d2_agent_fn', 'lstm_size')])
    self.assertFalse(is_r2d3_binding(differing[0]))
    self.assertTrue(is_r2d3_binding(('', 'r2d3.DemonstrationReplay', 'path')))

  def test_installed_files_are_includable_from_any_folder(self):
    # The wheel's layout: <prefix>/share/tfa_explore/gin/<agent>/<file>.gin
    # and no checkout; a user's file in their own folder includes one.
    temp_dir = tempfile.mkdtemp(prefix='tfa_explore_gin_')
    self.addCleanup(shutil.rmtree, temp_dir, ignore_errors=True)
    installed = os.path.join(temp_dir, 'share', 'tfa_explore')
    os.makedirs(os.path.join(installed, 'gin', 'shipped'))
    with open(os.path.join(installed, 'gin', 'shipped', 'base.gin'), 'w') as f:
      f.write('SHIPPED = 3\n')
    user = os.path.join(temp_dir, 'user')
    os.makedirs(user)
    with open(os.path.join(user, 'mine.gin'), 'w') as f:
      f.write("include 'gin/shipped/base.gin'\nMINE = 4\n")
    with mock.patch.object(config.gin_files, 'checkout_gin_root', lambda: None), \
        mock.patch.object(config.gin_files, 'installed_gin_root', lambda: installed):
      previous = os.getcwd()
      os.chdir(user)
      try:
        self.assertEqual(config.resolve_gin_file('gin/shipped/base.gin'),
                         os.path.join(installed, 'gin', 'shipped',
                                      'base.gin'))
        config.parse_gin(['mine.gin'], [])
      finally:
        os.chdir(previous)
    self.assertEqual(gin.query_parameter('%SHIPPED'), 3)
    self.assertEqual(gin.query_parameter('%MINE'), 4)

  def test_an_unimported_configurable_names_the_import_to_add(self):
    temp_dir = tempfile.mkdtemp(prefix='tfa_explore_gin_')
    self.addCleanup(shutil.rmtree, temp_dir, ignore_errors=True)
    path = os.path.join(temp_dir, 'mine.gin')
    with open(path, 'w') as f:
      f.write('import tfa_explore.config.experiment\n'
              'run_experiment.experiment = @not_imported.train_eval\n')
    with self.assertRaisesRegex(errors.ConfigError,
                                '(?s)not_imported.train_eval.*imports the module'):
      config.parse_gin([path], [])

  def test_an_undeclared_experiment_is_refused_before_it_runs(self):
    gin.parse_config([
        'import tfa_explore.config.experiment',
        'run_experiment.experiment = @test_gin_files.undeclared_train_eval'])
    with self.assertRaisesRegex(errors.ConfigError,
                                'undeclared_train_eval is no declared '
                                'experiment'):
      config.check_before_start()

  def test_checkout_is_a_shipped_root(self):
    self.assertEqual(config.gin_files.checkout_gin_root(), REPO_ROOT)
    self.assertEqual(config.shipped_gin_roots()[0], REPO_ROOT)

  @parameterized.named_parameters(
      (_relative(path).replace('/', '_').replace('.', '_'), path)
      for path in GIN_FILES)
  def test_parses_and_builds(self, path):
    # Overriding the macros must work for every file (the documented way to
    # shorten a run).
    config.parse_gin([path], ['NUM_ENV_STEPS = 1234', 'SEED = 7'])
    self.assertEqual(gin.query_parameter('%NUM_ENV_STEPS'), 1234)
    self.assertEqual(gin.query_parameter('%SEED'), 7)

    # A macro reference prints as %NAME.
    self.assertEqual(repr(config.experiment_setting('num_env_steps')),
                     '%NUM_ENV_STEPS')
    self.assertEqual(repr(config.experiment_setting('seed')), '%SEED')

    env_loader = config.experiment_setting('env_loader').scoped_configurable_fn
    agent_fn = config.experiment_setting('agent_fn').scoped_configurable_fn
    env = tf_py_environment.TFPyEnvironment(env_loader(seed=0))
    try:
      agent = agent_fn(
          time_step_spec=env.time_step_spec(),
          action_spec=env.action_spec(),
          train_step_counter=tf.Variable(0, dtype=tf.int64))
      time_step = env.reset()
      policy = agent.collect_policy
      action = policy.action(time_step,
                             policy.get_initial_state(env.batch_size)).action
      spec = env.action_spec()
      action = action.numpy()
      self.assertEqual(action.shape, (1,) + tuple(spec.shape))
      self.assertTrue(np.all(action >= spec.minimum))
      self.assertTrue(np.all(action <= spec.maximum))
    finally:
      env.close()


if __name__ == '__main__':
  absltest.main()
