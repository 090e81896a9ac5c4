r"""Atari speed of our agents beside CleanRL's, interleaved in one run.

  .venv/bin/python benchmarks/atari_throughput.py \
      --cleanrl_dir=<cleanrl checkout> --cleanrl_python=<torch venv>/bin/python \
      [--peers=r2d2,ppo,rnd_ppo,dqn_atari,ppo_atari,ppo_rnd_envpool] \
      [--repeats=1]

Each peer is a fresh process, one at a time, in the order of `--peers`,
`--repeats` times; each is timed over a window of its steady state, its
whole process tree's CPU seconds (user + system) and wall seconds read at
both ends (`common.window`, `common.cleanrl_window`). Agent steps are of 4
frames, all envs summed.

Ours, `train/train_eval.py` as a user runs it, evals and checkpoints out
of the way, window between progress lines:
* `r2d2`: gin/r2d2/atari_pong.gin (learner training: the window opens
  after its first iterations; `min_size_to_sample` 250 so that it comes
  soon), env steps `--r2d2_window`.
* `ppo`: gin/ppo/atari_pong.gin (the PPO twin), `--ppo_window`.
* `rnd_ppo`: gin/rnd_ppo/montezuma.gin (RND warm-up cut to 64 steps),
  `--rnd_window`.

CleanRL's scripts, unchanged, through `cleanrl_shim.py` in a PyTorch
environment (docs/performance.md has the set-up), each with torch's
default threads and with one, `--no-cuda`, window between "SPS:" lines:
* `dqn_atari` on PongNoFrameskip-v4 (R2D2's peer: DQN, Nature CNN, one
  gradient step of 32 per 4 env steps; replay cut to 100k steps for
  memory), learning from step 20,000; an "SPS:" line every 100 steps.
* `ppo_atari` on PongNoFrameskip-v4 (the twin's peer: same 8 envs x 128,
  4 epochs x 4 minibatches), a line per update of 1,024 steps.
* `ppo_rnd_envpool` on MontezumaRevenge-v5 in envpool (RND-PPO's peer),
  8 envs x 128 steps as ours, a line per update.

Ratios: ours over the peer at its better thread setting, per CPU-s and
per second.

`envs` (not a default peer): 16 Pong envs of `atari.load` under random
actions, stepped as `batched.GymnasiumBatch` (gymnasium's wrappers, one
env after another) and as ALE's vector env (`atari.AtariVectorBatch`, as
`make_batched_env` builds them), interleaved in this process, `--repeats`
times: env steps per CPU-s of this process and per s.
"""

import os
import shutil
import statistics
import tempfile

from absl import app
from absl import flags

import common

_PEERS = flags.DEFINE_list(
    'peers', ['r2d2', 'ppo', 'rnd_ppo', 'dqn_atari', 'ppo_atari',
              'ppo_rnd_envpool'], 'Which loops to time, in this order.')
_REPEATS = flags.DEFINE_integer('repeats', 1, 'Interleaved repeats.')
_CLEANRL_DIR = flags.DEFINE_string('cleanrl_dir', None,
                                   'A checkout of vwxyzjn/cleanrl.')
_CLEANRL_PYTHON = flags.DEFINE_string(
    'cleanrl_python', None, 'Python of an environment with PyTorch, '
    'gymnasium, ale-py, envpool 0.8.4, gym 0.23, tyro and tensorboard.')
_R2D2_WINDOW = flags.DEFINE_list('r2d2_window', ['80000', '150000'],
                                 'R2D2: env steps where the window opens '
                                 'and closes.')
_PPO_WINDOW = flags.DEFINE_list('ppo_window', ['16000', '66000'],
                                'PPO twin: the window in env steps.')
_RND_WINDOW = flags.DEFINE_list('rnd_window', ['8000', '28000'],
                                'RND-PPO: the window in env steps.')
_TIMEOUT = flags.DEFINE_integer('timeout', 900,
                                'Seconds a peer may take to its window end.')

_OUT_OF_THE_WAY = 10**12  # evals and checkpoints past the window
_OURS = {
    'r2d2': ('R2D2, gin/r2d2/atari_pong.gin', 'gin/r2d2/atari_pong.gin', (
        'r2d2.Settings.min_size_to_sample = 250',
        'r2d2.Settings.log_interval = 4000',
        f'r2d2.Settings.eval_interval = {_OUT_OF_THE_WAY}',
        f'r2d2.Settings.checkpoint_interval = {_OUT_OF_THE_WAY}')),
    'ppo': ('PPO twin, gin/ppo/atari_pong.gin', 'gin/ppo/atari_pong.gin', (
        'on_policy.Settings.log_interval = 4096',
        f'on_policy.Settings.eval_interval = {_OUT_OF_THE_WAY}',
        f'on_policy.Settings.checkpoint_interval = {_OUT_OF_THE_WAY}')),
    'rnd_ppo': ('RND-PPO, gin/rnd_ppo/montezuma.gin',
                'gin/rnd_ppo/montezuma.gin', (
                    'warm_up_observation_normalizer.num_steps = 64',
                    'on_policy.Settings.log_interval = 4096',
                    f'on_policy.Settings.eval_interval = {_OUT_OF_THE_WAY}',
                    'on_policy.Settings.checkpoint_interval = '
                    f'{_OUT_OF_THE_WAY}')),
}
_DQN_LEARNING_STARTS = 20_000
_DQN_LINE_STEPS = 100  # dqn_atari prints SPS every 100 env steps
_PPO_UPDATE_STEPS = 8 * 128
# script, its arguments, (first, last) "SPS:" line, env steps between them
_CLEANRL = {
    'dqn_atari': ('dqn_atari.py', [
        '--env-id=PongNoFrameskip-v4', '--buffer-size=100000',
        f'--learning-starts={_DQN_LEARNING_STARTS}', '--no-cuda',
        f'--total-timesteps={_DQN_LEARNING_STARTS + 50_000}'], (100, 400),
                  300 * _DQN_LINE_STEPS),
    'ppo_atari': ('ppo_atari.py', [
        '--env-id=PongNoFrameskip-v4', '--num-envs=8', '--num-steps=128',
        '--no-cuda', f'--total-timesteps={50 * _PPO_UPDATE_STEPS}'],
                  (8, 40), 32 * _PPO_UPDATE_STEPS),
    'ppo_rnd_envpool': ('ppo_rnd_envpool.py', [
        '--env-id=MontezumaRevenge-v5', '--num-envs=8', '--num-steps=128',
        '--num-iterations-obs-norm-init=1', '--no-cuda',
        f'--total-timesteps={30 * _PPO_UPDATE_STEPS}'], (4, 20),
                        16 * _PPO_UPDATE_STEPS),
}
# Which CleanRL script each of ours is set beside.
_PAIRS = (('r2d2', 'dqn_atari'), ('ppo', 'ppo_atari'),
          ('rnd_ppo', 'ppo_rnd_envpool'))
_THREADS = (("torch's default threads", False), ('1 thread', True))


def _measure_ours(name, repeat):
  label, gin_file, bindings = _OURS[name]
  window = {'r2d2': _R2D2_WINDOW, 'ppo': _PPO_WINDOW,
            'rnd_ppo': _RND_WINDOW}[name].value
  # A fresh run directory each time: train_eval would resume an old one.
  root_dir = tempfile.mkdtemp(prefix=f'atari_throughput_{name}_')
  try:
    per_cpu, per_second, _, _ = common.window(
        common.train_eval_command(root_dir, gin_file, bindings),
        os.path.join(tempfile.gettempdir(),
                     f'atari_throughput_{name}_{repeat}.log'),
        int(window[0]), int(window[1]), _TIMEOUT.value)
  finally:
    shutil.rmtree(root_dir, ignore_errors=True)
  return {label: dict(steps_per_tree_cpu_second=per_cpu,
                      steps_per_second=per_second)}


def _measure_cleanrl(name):
  script, arguments, (first, last), steps = _CLEANRL[name]
  results = {}
  for threads, one_thread in _THREADS:
    results[f'CleanRL {name}, {threads}'] = common.cleanrl_window(
        _CLEANRL_PYTHON.value, _CLEANRL_DIR.value, script, arguments, first,
        last, steps, _TIMEOUT.value, one_thread=one_thread)
  return results


def _measure_envs(steps=300, num_envs=16):
  """Env steps per CPU-s and per s of both batch kinds of Pong envs."""
  import functools  # pylint: disable=g-import-not-at-top
  import time  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  from tfa_explore.environments import atari  # pylint: disable=g-import-not-at-top
  from tfa_explore.environments import batched  # pylint: disable=g-import-not-at-top
  loader = functools.partial(atari.load, 'ALE/Pong-v5')
  kinds = {
      'gymnasium wrappers (GymnasiumBatch)': lambda: batched.GymnasiumBatch(
          [loader(seed=i) for i in range(num_envs)]),
      'ALE vector env (AtariVectorBatch)': lambda: batched.make_batched_env(
          loader, num_envs, 0)}
  results = {}
  rng = np.random.default_rng(0)
  for label, make in kinds.items():
    environment = make()
    environment.reset()
    cpu, wall = time.process_time(), time.monotonic()
    for _ in range(steps):
      environment.step(rng.integers(6, size=num_envs))
    cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    environment.close()
    results[label] = dict(
        steps_per_tree_cpu_second=steps * num_envs / cpu,
        steps_per_second=steps * num_envs / wall)
  return results


def main(argv):
  del argv
  print(f'CPU: {common.cpu_description()}', flush=True)
  print(f'load average before: {os.getloadavg()}', flush=True)
  unknown = set(_PEERS.value) - set(_OURS) - set(_CLEANRL) - {'envs'}
  if unknown:
    raise app.UsageError(f'--peers: unknown {sorted(unknown)}; known: '
                         f'{sorted(_OURS) + sorted(_CLEANRL) + ["envs"]}')
  if set(_PEERS.value) & set(_CLEANRL) and not (_CLEANRL_DIR.value and
                                                 _CLEANRL_PYTHON.value):
    raise app.UsageError('CleanRL peers need --cleanrl_dir and '
                         '--cleanrl_python.')
  runs = {}
  for repeat in range(_REPEATS.value):
    for name in _PEERS.value:
      if name == 'envs':
        results = _measure_envs()
      elif name in _OURS:
        results = _measure_ours(name, repeat)
      else:
        results = _measure_cleanrl(name)
      for label, result in results.items():
        runs.setdefault((name, label), []).append(result)
        print(f'  [{repeat + 1}/{_REPEATS.value}] {label}: '
              f'{result["steps_per_tree_cpu_second"]:,.0f} agent steps per '
              f'CPU-s, {result["steps_per_second"]:,.0f} per s', flush=True)

  def median(name_label, key):
    return statistics.median(r[key] for r in runs[name_label])

  print(f'\nAtari, median of {_REPEATS.value}; agent steps of 4 frames')
  print('| loop | agent steps / CPU-s | agent steps / s |')
  print('|---|---|---|')
  for name_label in runs:
    print(f'| {name_label[1]} | '
          f'{median(name_label, "steps_per_tree_cpu_second"):,.0f} | '
          f'{median(name_label, "steps_per_second"):,.0f} |')
  for ours, peer in _PAIRS:
    ours_keys = [k for k in runs if k[0] == ours]
    peer_keys = [k for k in runs if k[0] == peer]
    if not ours_keys or not peer_keys:
      continue
    for key, unit in (('steps_per_tree_cpu_second', 'per CPU-s'),
                      ('steps_per_second', 'per s')):
      best = max(peer_keys, key=lambda k, key=key: median(k, key))
      print(f'{ours_keys[0][1]} / {best[1]} (its better setting {unit}): '
            f'{median(ours_keys[0], key) / median(best, key):.2f} {unit}')
  print(f'load average after: {os.getloadavg()}', flush=True)


if __name__ == '__main__':
  app.run(main)
