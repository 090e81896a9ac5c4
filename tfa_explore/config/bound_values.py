"""Every value a parsed gin config binds, checked against its parameter.

The one module that reads gin's private `_CONFIG` and `_REGISTRY`: gin has
no public way to list every binding with the configurable it belongs to.
"""

import inspect
import typing

import gin

from tfa_explore import errors


def check_bound_values() -> None:
  """Checks every value the parsed gin config binds against the type of
  its parameter (`errors.check_annotated`): int, float, bool, str,
  Optional; floats finite.

  One pass over every binding, for every binary, right after parsing:
  a string for a number or an infinite learning rate is refused by name
  before anything is built, whatever configurable takes it. Ranges and
  combinations are the configurables' own checks, made before the run
  starts (`Experiment.check_before_start`).

  Raises:
    ConfigError: naming the binding (with its scope), the value and what
      it must be.
  """
  # pylint: disable=protected-access
  for (scope, selector), parameters in gin.config._CONFIG.items():
    if selector == 'gin.macro':
      continue  # Checked where a binding uses it.
    configurable = gin.config._REGISTRY.get_match(selector)
    # pylint: enable=protected-access
    annotations = _parameter_annotations(configurable)
    name = _binding_name(scope, configurable, selector)
    for parameter, value in parameters.items():
      value = _macro_value(value)
      try:
        errors.check_annotated(f'{name}.{parameter}', value,
                               annotations.get(parameter))
      except ValueError as e:
        raise errors.ConfigError(str(e)) from e


def _parameter_annotations(configurable):
  """{parameter: the type its value must have} of a registered configurable.

  Its annotation; for an unannotated parameter with a numeric default,
  a number (so a string such as 'nan' is refused there too).
  """
  if configurable is None:
    return {}
  target = configurable.wrapped
  if inspect.isclass(target):
    target = target.__init__
  try:
    hints = typing.get_type_hints(target)
  except Exception:  # pylint: disable=broad-except
    hints = {}  # Names only a type checker imports: defaults alone.
  try:
    parameters = inspect.signature(target).parameters
  except (TypeError, ValueError):
    return hints
  for name, parameter in parameters.items():
    default = parameter.default
    if (name not in hints and not isinstance(default, bool) and
        isinstance(default, (int, float))):
      hints[name] = float
  return hints


def _binding_name(scope: str, configurable, selector: str) -> str:
  """The configurable as a gin file names it: 'r2d2/SequenceConfig'.

  Gin keys bindings by the full selector; one registered without a
  `module=` has its Python module there, which gin files leave out.
  """
  if configurable is not None:
    module = configurable.module or ''
    selector = (configurable.name if '.' in module or not module
                else f'{module}.{configurable.name}')
  return f'{scope}/{selector}' if scope else selector


def _macro_value(value):
  """The value of a gin macro (`%NAME`), else `value` itself."""
  reference = getattr(value, 'configurable', None)
  if (isinstance(value, gin.config.ConfigurableReference) and
      reference.selector == 'gin.macro'):
    # 'X/gin.macro' for `%X` (a scoped `%s/X` keeps its scope in front).
    macro = value.scoped_selector.rpartition('/')[0]
    try:
      return gin.query_parameter(f'%{macro}')
    except ValueError:
      return value
  return value
