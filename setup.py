"""tfa_explore: hard-exploration agents (RND-PPO, R2D2, R2D3) for TF-Agents."""
import collections
import glob
import os
import sys

import setuptools

if not ((3, 9) <= sys.version_info[:2] <= (3, 11)):
  sys.exit(
      'tfa_explore needs Python 3.9-3.11 (dm-reverb 0.14 has no wheels for '
      f'other versions); this is Python {sys.version.split()[0]}.')


def _gin_data_files():
  """gin/<agent>/<file>.gin -> <prefix>/share/tfa_explore/gin/<agent>/.

  An installed package finds them there (`config.resolve_gin_file`), so
  `--gin_file=gin/ppo/cartpole.gin` works outside a checkout too.
  """
  by_dir = collections.defaultdict(list)
  for path in sorted(glob.glob(os.path.join('gin', '*', '*.gin'))):
    by_dir[os.path.join('share', 'tfa_explore', os.path.dirname(path))].append(
        path)
  return sorted(by_dir.items())


setuptools.setup(
    name='tfa_explore',
    version='0.1.0',
    description='Hard-exploration agents (RND-PPO, R2D2, R2D3) for TF-Agents',
    packages=setuptools.find_packages(include=['tfa_explore', 'tfa_explore.*']),
    # The absl binaries (train_eval.py, the R2D2 roles, ...) on the PATH.
    scripts=sorted(glob.glob(os.path.join('train', '*.py'))),
    data_files=_gin_data_files(),
    python_requires='>=3.9,<3.12',
    install_requires=[
        'tensorflow>=2.15,<2.16',
        'tf-agents==0.19.0',
        'dm-reverb==0.14.0',
        'tensorflow-probability==0.23.0',
        'gin-config>=0.5',
        'absl-py',
        'gymnasium>=1.0,<2',
        'ale-py>=0.9',
        'minigrid>=3.0,<4',
        'opencv-python-headless',
        'pillow',
        'numpy<2',
        'dm-tree',  # also a dependency of TF-Agents and Reverb
    ],
    extras_require={
        # pytest-xdist: `make test` and `make test-fast` run 2 workers.
        'test': ['pytest', 'pytest-timeout', 'pytest-xdist'],
        # benchmarks/rnd_ppo_benchmark.py draws learning curves;
        # benchmarks/atari_limits.py reads the CPU time of env subprocesses.
        'bench': ['matplotlib', 'psutil'],
        # train/ray_launch.py. 2.40 resolves with TF 2.15's protobuf 4.25
        # and grpcio (docs/distributed.md).
        'ray': ['ray==2.40.0'],
        # tfa_explore.environments.bsuite and benchmarks/bsuite_sweep.py.
        # bsuite's analysis calls pandas-1 APIs (Series.append,
        # DataFrame.append, removed in pandas 2.0), and plotnine 0.13+
        # needs pandas 2. dm-sonnet and trfl: bsuite's TF reference agents
        # (bsuite.baselines.tf), which run with TF 2.15; tqdm: their
        # run.py files import it.
        'bsuite': ['bsuite==0.3.6', 'pandas>=1.5,<2', 'plotnine<0.13',
                   'dm-sonnet==2.0.2', 'trfl==1.2.0', 'tqdm'],
    },
)
