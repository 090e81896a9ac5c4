"""Runs a CleanRL script (default `ppo_atari.py`) unchanged on gymnasium 1.x.

Started by `benchmarks/throughput.py --measure=cleanrl` and
`benchmarks/atari_throughput.py` with the Python of a separate environment
that has PyTorch (the pinned TF stack does not; docs/performance.md has
the set-up):

    <cleanrl python> benchmarks/cleanrl_shim.py --cleanrl_dir=<checkout> \\
        [--script=dqn_atari.py] -- --env-id=PongNoFrameskip-v4 ...

CleanRL's script targets gymnasium 0.29. Its two wrapper names that
gymnasium 1.0 renamed are aliased to their successors (the same
observations: grey 84x84, a stack of 4 as an array), and ale-py's
environments are registered; nothing of the script or of its
`cleanrl_utils` is changed. Under gymnasium 1.x vector envs reset an
ended episode on the next step, so the script logs no episode returns;
its "SPS:" line, printed after each update, is what the benchmark reads.
"""

import argparse
import os
import runpy
import sys


def main():
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--cleanrl_dir', required=True,
                      help='A checkout of github.com/vwxyzjn/cleanrl.')
  parser.add_argument('--script', default='ppo_atari.py',
                      help="A script of the checkout's cleanrl/ folder.")
  args, script_args = parser.parse_known_args()
  if script_args[:1] == ['--']:
    script_args = script_args[1:]
  script = os.path.join(args.cleanrl_dir, 'cleanrl', args.script)
  if not os.path.isfile(script):
    sys.exit(f'--cleanrl_dir={args.cleanrl_dir}: no cleanrl/{args.script} '
             'there (a checkout of github.com/vwxyzjn/cleanrl is needed).')

  import ale_py  # pylint: disable=g-import-not-at-top
  import gymnasium as gym  # pylint: disable=g-import-not-at-top
  gym.register_envs(ale_py)
  wrappers = gym.wrappers
  if not hasattr(wrappers, 'FrameStack'):
    wrappers.FrameStack = wrappers.FrameStackObservation
  if not hasattr(wrappers, 'GrayScaleObservation'):
    wrappers.GrayScaleObservation = wrappers.GrayscaleObservation

  sys.path.insert(0, args.cleanrl_dir)  # its cleanrl_utils package
  sys.argv = [script] + script_args
  runpy.run_path(script, run_name='__main__')


if __name__ == '__main__':
  main()
