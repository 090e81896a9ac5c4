#!/usr/bin/env python3
r"""Runs an R2D2, R2D3 or distributed on-policy gin file on a Ray cluster.

  pip install 'tfa_explore[ray]'
  python train/ray_launch.py --root_dir=runs/r2d2_cartpole_ray \
      --gin_file=gin/r2d2/stateless_cartpole.gin \
      [--ray_address=auto] [--gin_bindings='r2d2.Settings.num_actors=16'] \
      [--gin_bindings='r2d2.RayResources.actor_num_cpus=1']

The replay server and the learner run on this node, the actors wherever
the cluster has room; Ray restarts any of them that dies (see
`tfa_explore/experiments/distributed/ray_launch.py` and
docs/distributed.md).
Without --ray_address a local Ray cluster is started for the run.
Running the same command again resumes, as train/train_eval.py does.
"""

import sys

from absl import app
from absl import flags
from absl import logging

from tfa_explore.process import console

console.configure(__name__)  # before TensorFlow loads: see console

# pylint: disable=g-import-not-at-top,wrong-import-position
from tfa_explore import config
from tfa_explore.experiments.distributed import ray_launch

_ROOT_DIR = flags.DEFINE_string(
    'root_dir', None, 'Run directory on this (the head) node.', required=True)
_RAY_ADDRESS = flags.DEFINE_string(
    'ray_address', None,
    "Ray cluster to join ('auto', 'ray://host:10001'); unset: a local one.")
_GIN_FILES, _GIN_BINDINGS = config.define_gin_flags()
flags.adopt_module_key_flags(config.gin_files)  # --help lists the gin flags
flags.adopt_module_key_flags(console)  # and --verbose


def main(argv):
  if len(argv) > 1:
    raise SystemExit(f'Unexpected arguments: {argv[1:]}')
  with config.exit_codes():
    logging.info('Starting: the roles on Ray (gin: %s).',
                 ' '.join(_GIN_FILES.value))
    config.parse_gin(_GIN_FILES.value, _GIN_BINDINGS.value)
    ray_launch.train_eval(_ROOT_DIR.value, _RAY_ADDRESS.value,
                          verbose=console.verbose_requested(sys.argv))


if __name__ == '__main__':
  app.run(main, flags_parser=config.parse_flags)
