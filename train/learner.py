#!/usr/bin/env python3
r"""The learner of a multi-machine R2D2 or on-policy run.

  python train/learner.py --replay_server=HOST:PORT \
      --root_dir=runs/r2d2_cartpole --gin_file=gin/r2d2/stateless_cartpole.gin

Trains from the replay server's prioritized sequences, publishes weights to
the actors through its variables table, and writes the usual root_dir
(operative_config.gin, train/, eval/, checkpoints/, policies/). Stops once
the actors have taken NUM_ENV_STEPS env steps; rerunning resumes. The
gin file's experiment says which family (`@r2d2.train_eval`,
`@on_policy.distributed_train_eval`: whole rollouts of its latest weights
instead of replayed sequences).
"""

from absl import app
from absl import flags

from tfa_explore.process import console

console.configure(__name__)  # before TensorFlow loads: see console

# pylint: disable=g-import-not-at-top,wrong-import-position
from tfa_explore import config
from tfa_explore.experiments.distributed import launch

_REPLAY_SERVER = flags.DEFINE_string(
    'replay_server', None, 'host:port of train/replay_server.py.',
    required=True)
_ROOT_DIR = flags.DEFINE_string(
    'root_dir', None, 'Run directory: summaries, checkpoints, policies.',
    required=True)
_GIN_FILES, _GIN_BINDINGS = config.define_gin_flags()
flags.adopt_module_key_flags(config.gin_files)  # --help lists the gin flags
flags.adopt_module_key_flags(console)  # and --verbose


def main(argv):
  if len(argv) > 1:
    raise SystemExit(f'Unexpected arguments: {argv[1:]}')
  launch.run_job(
      _GIN_FILES.value, _GIN_BINDINGS.value, 'learner',
      lambda roles, settings: roles.run_learner(
          settings, _REPLAY_SERVER.value, _ROOT_DIR.value),
      replay_server=_REPLAY_SERVER.value)


if __name__ == '__main__':
  app.run(main, flags_parser=config.parse_flags)
