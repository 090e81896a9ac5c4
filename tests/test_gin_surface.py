"""One gin surface per thing: no binding can be silently overridden.

Gin lets a caller pass an argument explicitly, and then the binding of that
parameter is silently ignored (e.g. a class that is configurable and also
built by a configurable factory that passes every argument). The tests
parse every shipped gin file and build what a run builds before it starts
(env, agent, the experiment's settings); gin records in its operative
config only the values it supplied itself, so:

* every binding of the file reached its configurable, and
* every parameter of one of our configurables that its caller passes
  itself is denylisted, so that binding it is an error, not a no-op (the
  stock TF-Agents classes gin registers are left out: not ours to change).
"""

import glob
import inspect
import os

from absl.testing import absltest
from absl.testing import parameterized
import gin
import tensorflow as tf
from tf_agents.environments import tf_py_environment

from tfa_explore import config

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GIN_FILES = sorted(glob.glob(os.path.join(REPO_ROOT, 'gin', '**', '*.gin'),
                             recursive=True))


def _called_bindings():
  """(bindings overridden by a caller, configurables never called).

  Bindings are gin's parsed config; the operative config holds what gin
  supplied to the configurables that were called.
  """
  # pylint: disable=protected-access
  bound = {key: dict(parameters)
           for key, parameters in gin.config._CONFIG.items()}
  operative = gin.config._OPERATIVE_CONFIG
  # pylint: enable=protected-access
  overridden, not_called = [], []
  for (scope, selector), parameters in sorted(bound.items()):
    if (scope, selector) not in operative:
      not_called.append(selector)
      continue
    used = operative[(scope, selector)]
    for name, value in parameters.items():
      if name not in used or repr(used[name]) != repr(value):
        overridden.append(f'{scope + "/" if scope else ""}{selector}.{name}')
  return overridden, not_called


def _passed_by_callers(module_prefix='tfa_explore.'):
  """{selector: parameters its callers passed} of configurables we own."""
  # pylint: disable=protected-access
  passed = {}
  for (_, selector), used in gin.config._OPERATIVE_CONFIG.items():
    configurable = gin.config._REGISTRY.get_match(selector)
    wrapped = configurable.wrapped
    if not wrapped.__module__.startswith(module_prefix):
      continue
    function = wrapped.__init__ if inspect.isclass(wrapped) else wrapped
    names = [
        name for name, parameter in inspect.signature(function).parameters
        .items() if name != 'self' and parameter.kind not in (
            parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)]
    bindable = [name for name in names
                if name not in (configurable.denylist or ()) and
                (configurable.allowlist is None or
                 name in configurable.allowlist)]
    missing = sorted(name for name in bindable if name not in used)
    if missing:
      passed[selector] = missing
  # pylint: enable=protected-access
  return passed


def _build(path):
  """What a run builds from the gin file before training starts."""
  config.parse_gin([path], [])
  env_loader = config.experiment_setting('env_loader').scoped_configurable_fn
  agent_fn = config.experiment_setting('agent_fn').scoped_configurable_fn
  env = tf_py_environment.TFPyEnvironment(env_loader(seed=0))
  try:
    agent_fn(time_step_spec=env.time_step_spec(),
             action_spec=env.action_spec(),
             train_step_counter=tf.Variable(0, dtype=tf.int64))
  finally:
    env.close()
  selector = gin.query_parameter('run_experiment.experiment').selector
  settings_class = gin.get_configurable(
      f'{selector.rpartition(".")[0]}.Settings') if selector.startswith(
          'r2d2.') else None
  if settings_class is not None:
    settings_class()


class GinSurfaceTest(parameterized.TestCase):

  def setUp(self):
    super().setUp()
    gin.clear_config()
    self.addCleanup(gin.clear_config)

  @parameterized.named_parameters(
      (os.path.relpath(path, REPO_ROOT).replace('/', '_').replace('.', '_'),
       path) for path in GIN_FILES)
  def test_every_binding_reaches_its_configurable(self, path):
    _build(path)
    overridden, _ = _called_bindings()
    self.assertEmpty(overridden,
                     f'{os.path.relpath(path, REPO_ROOT)}: these bindings are '
                     'overridden by a caller that passes the argument itself')

  @parameterized.named_parameters(
      (os.path.relpath(path, REPO_ROOT).replace('/', '_').replace('.', '_'),
       path) for path in GIN_FILES)
  def test_parameters_callers_pass_are_not_bindable(self, path):
    _build(path)
    self.assertEqual(
        _passed_by_callers(), {},
        f'{os.path.relpath(path, REPO_ROOT)}: these parameters of our '
        'configurables are passed by their callers, so a binding would be '
        'ignored; denylist them (or stop registering the class with gin '
        'if a factory builds it)')

  def test_an_overridden_binding_is_reported(self):

    @gin.configurable(module='surface_test')
    def inner(x=1):
      return x

    @gin.configurable(module='surface_test')
    def outer(x=2):
      return inner(x=x)  # Passes x itself: inner.x is never used.

    gin.parse_config('surface_test.inner.x = 5\nsurface_test.outer.x = 3')
    self.assertEqual(outer(), 3)
    overridden, not_called = _called_bindings()
    self.assertEqual(overridden, ['surface_test.inner.x'])
    self.assertEmpty(not_called)
    self.assertEqual(_passed_by_callers(module_prefix=__name__),
                     {'surface_test.inner': ['x']})


if __name__ == '__main__':
  absltest.main()
