r"""deep_sea_stochastic with its slips or its reward noise switched off.

  python benchmarks/deep_sea_ablation.py --root_dir=runs/ablation/slips \
      --gin_file=gin/r2d2_bootstrap/bsuite_deep_sea.gin \
      --bsuite_id=deep_sea_stochastic/0 --keep=slips --num_episodes=1000 \
      [--gin_bindings=...]

deep_sea_stochastic differs from deep_sea in two ways: a "right" move
slips (stays in its column) with probability 1/N, and the last row's two
end cells add N(0, 1) to the reward. To see which of the two an agent
fails on, this runs a gin file (in process, as train_eval does) on the
stochastic id with only one of them kept (--keep=slips or --keep=noise;
--keep=both is bsuite's env, --keep=none deep_sea on this id's action
map). The env is bsuite's, journaled as usual (`bsuite.load`), with its
random stream wrapped: `randn` (the noise) returns 0 without noise,
`rand` (the slip draw) returns 1 without slips. Read the run with
bsuite_readouts.py --experiment=deep_sea_stochastic and deep_sea_heads.py.
Actors must be threads (`actor_mode = 'thread'`, as the bsuite files):
the patch lives in this process.
"""

import functools
import os
import sys
import types

from absl import app
from absl import flags
import gin

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
# pylint: disable=g-import-not-at-top,wrong-import-position
from tfa_explore import config
from tfa_explore.agents.r2d2 import agent as r2d2_agent
from tfa_explore.environments import bsuite as bsuite_env


class _Stream:
  """A RandomState whose noise or slip draws are switched off."""

  def __init__(self, rng, noise, slips):
    self._rng, self._noise, self._slips = rng, noise, slips

  def randn(self, *args):
    return self._rng.randn(*args) if self._noise else 0.0

  def rand(self, *args):
    return self._rng.rand(*args) if self._slips else 1.0


@gin.configurable
def ablated_deep_sea(bsuite_id, keep, seed=None, **kwargs):
  env = bsuite_env.load(bsuite_id, seed=seed, **kwargs)
  sea = env.gym.bsuite_env
  sea._rng = _Stream(sea._rng, keep in ('both', 'noise'),  # pylint: disable=protected-access
                     keep in ('both', 'slips'))
  return env


def define_flags():
  """The script's flags, defined only when it runs: deep_sea_heads.py and
  the tests import this module beside scripts with flags of these names."""
  return types.SimpleNamespace(
      root_dir=flags.DEFINE_string('root_dir', None, 'The run.',
                                   required=True),
      gin_file=flags.DEFINE_string('gin_file', None, 'An R2D2 bsuite file.',
                                   required=True),
      bsuite_id=flags.DEFINE_string('bsuite_id', 'deep_sea_stochastic/0',
                                    'A deep_sea_stochastic id.'),
      keep=flags.DEFINE_enum('keep', 'both',
                             ['both', 'slips', 'noise', 'none'],
                             'What of the stochastic env to keep.'),
      num_episodes=flags.DEFINE_integer('num_episodes', 1000, 'Episodes.'),
      gin_bindings=flags.DEFINE_multi_string('gin_bindings', [], 'More.'),
      rescale_values=flags.DEFINE_bool(
          'rescale_values', True, 'False: R2D2Agent without value '
          'rescaling h (not a gin value: the agent factory keeps it out of '
          'gin).'))


def main(flag, argv):
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  bindings = [
      f"BSUITE_ID = 'bsuite/{flag.bsuite_id.value}'",
      f'NUM_EPISODES = {flag.num_episodes.value}',
      'r2d2.Settings.env_loader = @ablated_deep_sea',
      f"ablated_deep_sea.bsuite_id = 'bsuite/{flag.bsuite_id.value}'",
      f"ablated_deep_sea.keep = '{flag.keep.value}'",
  ] + list(flag.gin_bindings.value)
  if not flag.rescale_values.value:
    init = r2d2_agent.R2D2Agent.__init__

    def init_without_rescaling(self, *args, **kwargs):
      kwargs['rescale_values'] = False
      init(self, *args, **kwargs)
    r2d2_agent.R2D2Agent.__init__ = init_without_rescaling
  config.run(flag.root_dir.value, [flag.gin_file.value], bindings)


if __name__ == '__main__':
  app.run(functools.partial(main, define_flags()),
          flags_parser=config.parse_flags)
