#!/usr/bin/env python3
r"""Serves the Reverb tables of a multi-machine R2D2 or on-policy run.

  python train/replay_server.py --port=8000 \
      --gin_file=gin/r2d2/stateless_cartpole.gin

The tables (prioritized sequences, the learner's weights, actor progress)
are built from the agent the gin file describes, so actors and learner
started with the same gin file find matching signatures. Runs until killed.

With --checkpoint_dir the tables are checkpointed there whenever the
learner checkpoints, and a server restarted with the same directory
restores them (items, priorities, rate-limiter counts); actors and learner
reconnect by themselves. Without it a restart starts from empty tables.
An on-policy run's server (`@on_policy.distributed_train_eval`) holds only
the weights and the rollouts in flight, and keeps no checkpoint.
"""

import sys

from absl import app
from absl import flags

from tfa_explore.process import console

console.configure(__name__)  # before TensorFlow loads: see console

# pylint: disable=g-import-not-at-top,wrong-import-position
from tfa_explore import config
from tfa_explore.experiments.distributed import launch

_PORT = flags.DEFINE_integer('port', None, 'Port to serve on.', required=True)
_CHECKPOINT_DIR = flags.DEFINE_string(
    'checkpoint_dir', None,
    'Directory of the tables\' checkpoints: restored from at start, written '
    'at every learner checkpoint. Unset: a temporary directory, nothing '
    'restored.')
_GIN_FILES, _GIN_BINDINGS = config.define_gin_flags()
flags.adopt_module_key_flags(config.gin_files)  # --help lists the gin flags
flags.adopt_module_key_flags(console)  # and --verbose


def main(argv):
  if len(argv) > 1:
    raise SystemExit(f'Unexpected arguments: {argv[1:]}')
  server = launch.run_job(
      _GIN_FILES.value, _GIN_BINDINGS.value, 'replay server',
      lambda roles, settings: roles.make_replay_server(
          settings, _PORT.value, _CHECKPOINT_DIR.value))
  sys.exit(launch.serve_until_stopped(server, _CHECKPOINT_DIR.value))


if __name__ == '__main__':
  app.run(main, flags_parser=config.parse_flags)
