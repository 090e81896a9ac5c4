#!/usr/bin/env python3
r"""Records demonstration episodes for R2D3 into a demonstration file.

  python train/collect_demonstrations.py --output=demos/doorkey8x8.demo \
      --num_episodes=100 --gin_file=my_demos.gin

The gin file binds the env and the source of the actions, e.g. a scripted
expert:

  import tfa_explore.environments.experts
  import tfa_explore.environments.minigrid
  import tfa_explore.replay.demonstrations
  demonstrations.collect.env_loader = @minigrid.load
  minigrid.load.env_id = 'MiniGrid-DoorKey-8x8-v0'
  demonstrations.collect.source = @demonstrations.scripted_expert()
  demonstrations.scripted_expert.expert = @experts.doorkey_expert
  demonstrations.collect.seed = 0

or a policy exported by train_eval (`<root_dir>/policies/greedy_policy`):

  demonstrations.collect.source = @demonstrations.saved_policy()
  demonstrations.saved_policy.policy_dir = 'runs/r2d2/policies/greedy_policy'

The file is written atomically (see `tfa_explore.replay.demonstrations`).
A bad gin file, binding or value exits with code 2 and one `ERROR:` line.
"""


from absl import app
from absl import flags
from absl import logging

from tfa_explore.process import console

console.configure(__name__)  # before TensorFlow loads: see console

# pylint: disable=g-import-not-at-top,wrong-import-position
from tfa_explore import config
from tfa_explore.replay import demonstrations

_OUTPUT = flags.DEFINE_string('output', None, 'Demonstration file to write.',
                              required=True)
_NUM_EPISODES = flags.DEFINE_integer('num_episodes', None,
                                     'Episodes to record.', required=True)
_GIN_FILES, _GIN_BINDINGS = config.define_gin_flags()
flags.adopt_module_key_flags(config.gin_files)  # --help lists the gin flags
flags.adopt_module_key_flags(console)  # and --verbose


def main(argv):
  if len(argv) > 1:
    raise SystemExit(f'Unexpected arguments: {argv[1:]}')
  with config.exit_codes():
    config.parse_gin(_GIN_FILES.value, _GIN_BINDINGS.value)
    with config.gin_files.missing_binding_as_config_error(
        _GIN_FILES.value, _GIN_BINDINGS.value):
      returns = demonstrations.collect(_OUTPUT.value, _NUM_EPISODES.value)
  logging.info('Wrote %d episodes to %s; mean return %.4f (min %.4f).',
               len(returns), _OUTPUT.value, sum(returns) / len(returns),
               min(returns))


if __name__ == '__main__':
  app.run(main, flags_parser=config.parse_flags)
