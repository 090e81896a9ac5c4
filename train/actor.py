#!/usr/bin/env python3
r"""One actor of a multi-machine R2D2 or on-policy run.

  python train/actor.py --task=0 --replay_server=HOST:PORT \
      --root_dir=runs/r2d2_cartpole --gin_file=gin/r2d2/stateless_cartpole.gin

Actor `task` of `r2d2.Settings.num_actors` steps
`r2d2.Settings.envs_per_actor` (E) envs; env k explores with epsilon
0.4^(1 + 7 j / (N - 1)), j = task * E + k, N = num_actors * E. It writes
sequences to the replay server, reads
the learner's weights from it, and stops when the learner has finished.
Its summaries go to root_dir/actors/<task>. An on-policy actor
(`@on_policy.distributed_train_eval`) steps its share of
`on_policy.Settings.num_envs` and writes one whole rollout per weights
the learner publishes.
"""

import signal

from absl import app
from absl import flags

from tfa_explore.process import console

console.configure(__name__)  # before TensorFlow loads: see console

# pylint: disable=g-import-not-at-top,wrong-import-position
from tfa_explore import config
from tfa_explore.experiments.distributed import launch

_TASK = flags.DEFINE_integer('task', None, 'Actor index in [0, num_actors).',
                             required=True)
_REPLAY_SERVER = flags.DEFINE_string(
    'replay_server', None, 'host:port of train/replay_server.py.',
    required=True)
_ROOT_DIR = flags.DEFINE_string('root_dir', None,
                                'Run directory (actor summaries).')
_INCARNATION = flags.DEFINE_integer(
    'incarnation', 0,
    'How many times this task was restarted; seeds its envs anew, so a '
    'restarted actor does not replay its predecessor\'s episodes.')
_GIN_FILES, _GIN_BINDINGS = config.define_gin_flags()
flags.adopt_module_key_flags(config.gin_files)  # --help lists the gin flags
flags.adopt_module_key_flags(console)  # and --verbose


def main(argv):
  if len(argv) > 1:
    raise SystemExit(f'Unexpected arguments: {argv[1:]}')
  # An actor holds nothing the run needs (its sequences under way are lost
  # with any stop), so Ctrl-C ends it at once and quietly, as SIGTERM does,
  # even while a Reverb call blocks (waiting for the learner's weights).
  signal.signal(signal.SIGINT, signal.SIG_DFL)
  launch.run_job(
      _GIN_FILES.value, _GIN_BINDINGS.value, f'actor {_TASK.value}',
      lambda roles, settings: roles.run_actor(
          settings, _TASK.value, _REPLAY_SERVER.value, _ROOT_DIR.value,
          incarnation=_INCARNATION.value),
      replay_server=_REPLAY_SERVER.value)


if __name__ == '__main__':
  app.run(main, flags_parser=config.parse_flags)
