#!/usr/bin/env python3
r"""Trains and evaluates the experiment a gin file binds.

  python train/train_eval.py --root_dir=runs/ppo_cartpole \
      --gin_file=gin/ppo/cartpole.gin [--gin_bindings='NUM_ENV_STEPS=2000']

Everything else (env, agent, loop, seeds, step budget) lives in gin. Running
the same command again on an existing root_dir resumes from its newest
checkpoint that loads; one run at a time holds a root_dir. What the user
must fix (a bad gin file, binding or value, an unknown env id, a root_dir
another run holds or that cannot be written) exits with code 2 and one
`ERROR:` line; --verbose adds the traceback.
"""

from absl import flags

from tfa_explore.process import console

console.configure(__name__)  # before TensorFlow loads: see console

# pylint: disable=g-import-not-at-top,wrong-import-position
from tf_agents.system import system_multiprocessing

from tfa_explore import config

_ROOT_DIR = flags.DEFINE_string(
    'root_dir', None, 'Run directory: summaries, checkpoints, policies.',
    required=True)
_GIN_FILES, _GIN_BINDINGS = config.define_gin_flags()
flags.adopt_module_key_flags(config.gin_files)  # --help lists the gin flags
flags.adopt_module_key_flags(console)  # and --verbose


def main(argv):
  if len(argv) > 1:
    raise SystemExit(f'Unexpected arguments: {argv[1:]}')
  with config.exit_codes():
    config.run(_ROOT_DIR.value, _GIN_FILES.value, _GIN_BINDINGS.value)


if __name__ == '__main__':
  # Parallel envs run in subprocesses that need the parsed gin config;
  # TF-Agents' handle_main (which also runs absl's app.run) carries it over.
  system_multiprocessing.handle_main(main, flags_parser=config.parse_flags)
