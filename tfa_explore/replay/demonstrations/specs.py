"""A demonstration file's specs: as JSON, rebuilt, checked against the agent's.

A file records everything of an episode as fields named by path:
`observation` (or `observation/<path>` for nested observations), `reward`,
`discount`, `step_type` and `action`. Its header's `specs` holds each
field's shape, dtype and, for bounded specs, bounds (`specs_to_json`);
`check_specs` compares them with the agent's and names the first field
that differs; `specs_from_json` rebuilds specs from them for a reader
given none.
"""

import numpy as np
import tensorflow as tf
from tf_agents.specs import tensor_spec
from tf_agents.trajectories import time_step as ts
from tf_agents.utils import nest_utils


class DemonstrationSpecError(ValueError):
  """A demonstration file's specs do not match the agent's."""


def leaves_with_paths(nest, prefix):
  """[(path, leaf)] with paths like 'observation' or 'observation/image'."""
  leaves = []
  for path, leaf in nest_utils.flatten_with_joined_paths(nest):
    leaves.append((f'{prefix}/{path}' if path else prefix, leaf))
  return leaves


def spec_fields(time_step_spec, action_spec):
  """{field path: spec} of everything a demo file records."""
  time_step_spec = tensor_spec.from_spec(time_step_spec)
  fields = dict(leaves_with_paths(time_step_spec.observation, 'observation'))
  fields['reward'] = time_step_spec.reward
  fields['discount'] = time_step_spec.discount
  fields['step_type'] = time_step_spec.step_type
  fields.update(leaves_with_paths(tensor_spec.from_spec(action_spec),
                                  'action'))
  return fields


def _spec_to_json(spec):
  entry = {'shape': [int(d) for d in spec.shape],
           'dtype': tf.as_dtype(spec.dtype).name}
  if tensor_spec.is_bounded(spec):
    entry['minimum'] = np.asarray(spec.minimum).tolist()
    entry['maximum'] = np.asarray(spec.maximum).tolist()
  return entry


def specs_to_json(time_step_spec, action_spec):
  """The header's `specs`: {field path: {shape, dtype[, minimum, maximum]}}."""
  return {path: _spec_to_json(spec)
          for path, spec in spec_fields(time_step_spec, action_spec).items()}


def check_specs(file_specs, time_step_spec, action_spec, source='file'):
  """Raises DemonstrationSpecError naming the first field that differs.

  Args:
    file_specs: a header's `specs` (see `specs_to_json`).
    time_step_spec, action_spec: the agent's (or env's) specs.
    source: file name for the message.
  """
  expected = specs_to_json(time_step_spec, action_spec)
  missing = sorted(set(expected) - set(file_specs))
  extra = sorted(set(file_specs) - set(expected))
  if missing or extra:
    raise DemonstrationSpecError(
        f'Demonstrations in {source} do not match the agent\'s specs: fields '
        f'missing from the file {missing}, fields the agent does not have '
        f'{extra}.')
  for path, expected_entry in expected.items():
    actual_entry = file_specs[path]
    for key in ('shape', 'dtype', 'minimum', 'maximum'):
      if actual_entry.get(key) != expected_entry.get(key):
        raise DemonstrationSpecError(
            f'Demonstrations in {source}: field {path!r} has {key} '
            f'{actual_entry.get(key)} in the file but the agent needs '
            f'{expected_entry.get(key)}.')


def specs_from_json(file_specs):
  """(time_step_spec, action_spec) rebuilt from a header's specs.

  Nested observations come back as flat dicts keyed by their path below
  'observation' (the file does not record the nest types). The action
  must be the one field 'action' (a single array): the reader refuses
  other files before it calls this.
  """
  def spec_of(path, entry):
    dtype = tf.as_dtype(entry['dtype'])
    if 'minimum' in entry:
      return tensor_spec.BoundedTensorSpec(
          entry['shape'], dtype, entry['minimum'], entry['maximum'], name=path)
    return tf.TensorSpec(entry['shape'], dtype, name=path)

  observation_paths = [p for p in file_specs
                       if p.split('/')[0] == 'observation']
  if observation_paths == ['observation']:
    observation = spec_of('observation', file_specs['observation'])
  else:
    observation = {p[len('observation/'):]: spec_of(p, file_specs[p])
                   for p in observation_paths}
  time_step_spec = ts.TimeStep(
      step_type=spec_of('step_type', file_specs['step_type']),
      reward=spec_of('reward', file_specs['reward']),
      discount=spec_of('discount', file_specs['discount']),
      observation=observation)
  return time_step_spec, spec_of('action', file_specs['action'])
