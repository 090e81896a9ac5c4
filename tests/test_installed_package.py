"""The package as `pip install` gives it: a wheel, installed elsewhere.

The wheel must hold the binaries (bin/) and the shipped gin files
(share/tfa_explore/gin), and a run must work from outside the checkout
with `--gin_file=gin/ppo/cartpole.gin`, as the README shows.
"""

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

from absl.testing import absltest
import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.integration
class InstalledPackageTest(absltest.TestCase):

  def test_wheel_installs_and_runs_outside_the_checkout(self):
    work = tempfile.mkdtemp(prefix='tfa_explore_wheel_')
    self.addCleanup(subprocess.run, ['rm', '-rf', work], check=False)
    # The build's own copy of the tree, so the checkout gets no build/.
    source = os.path.join(work, 'source')
    shutil.copytree(REPO_ROOT, source, ignore=shutil.ignore_patterns(
        '.git', '.venv', 'runs', 'build', '*.egg-info', '__pycache__'))
    wheels = os.path.join(work, 'wheels')
    subprocess.run(
        [sys.executable, '-m', 'pip', 'wheel', '-q', '--no-deps',
         '--no-build-isolation', '-w', wheels, source],
        check=True, timeout=600, capture_output=True)
    (wheel,) = glob.glob(os.path.join(wheels, 'tfa_explore-*.whl'))
    names = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(os.path.relpath(path, REPO_ROOT) for path in
                     glob.glob(os.path.join(REPO_ROOT, 'gin', '*', '*.gin')))
    in_wheel = sorted(name.split('/share/tfa_explore/', 1)[1]
                      for name in names if '/share/tfa_explore/gin/' in name)
    self.assertEqual(in_wheel, shipped)
    scripts = sorted(os.path.basename(name) for name in names
                     if '.data/scripts/' in name)
    self.assertEqual(scripts, sorted(
        os.path.basename(path)
        for path in glob.glob(os.path.join(REPO_ROOT, 'train', '*.py'))))

    prefix = os.path.join(work, 'prefix')
    # --ignore-installed: without it pip would first uninstall the
    # checkout's own (editable) install from the venv running this test.
    subprocess.run(
        [sys.executable, '-m', 'pip', 'install', '-q', '--no-deps',
         '--ignore-installed', f'--prefix={prefix}', wheel],
        check=True, timeout=300, capture_output=True)
    (site_packages,) = glob.glob(os.path.join(prefix, 'lib', 'python*',
                                              'site-packages'))
    environment = dict(os.environ, PYTHONPATH=site_packages)
    elsewhere = os.path.join(work, 'elsewhere')
    os.makedirs(elsewhere)
    imported = subprocess.run(
        [sys.executable, '-c',
         'import tfa_explore; print(tfa_explore.__file__)'],
        cwd=elsewhere, env=environment, capture_output=True, text=True,
        check=True, timeout=120)
    self.assertTrue(imported.stdout.strip().startswith(site_packages),
                    imported.stdout)
    root_dir = os.path.join(elsewhere, 'run')
    result = subprocess.run(
        [sys.executable, os.path.join(prefix, 'bin', 'train_eval.py'),
         f'--root_dir={root_dir}', '--gin_file=gin/ppo/cartpole.gin',
         '--gin_bindings=NUM_ENV_STEPS=512',
         '--gin_bindings=on_policy.train_eval.num_eval_episodes=2'],
        cwd=elsewhere, env=environment, capture_output=True, text=True,
        check=False, timeout=600)
    self.assertEqual(result.returncode, 0, result.stderr[-3000:])
    self.assertIn('Checkpoint and policies saved', result.stderr)
    self.assertTrue(os.path.isdir(os.path.join(root_dir, 'checkpoints')))
    # The venv's own install is untouched.
    here = subprocess.run(
        [sys.executable, '-c',
         'import tfa_explore; print(tfa_explore.__file__)'],
        cwd=elsewhere, capture_output=True, text=True, check=True,
        timeout=120)
    self.assertFalse(here.stdout.strip().startswith(prefix), here.stdout)


if __name__ == '__main__':
  absltest.main()
