r"""Kills each R2D2 role once in a real run and prints what each kill cost.

  .venv/bin/python benchmarks/fault_injection.py \
      [--gin_file=gin/r2d2/stateless_cartpole.gin] [--num_env_steps=40000] \
      [--checkpoint_interval=5000] [--kill_steps=10000,20000,30000]

The three binaries on loopback (`tfa_explore.testing.faults`): actor 0,
then the replay server, then the learner are SIGKILLed at (or after) the
learner checkpoints at `--kill_steps` and restarted as a supervisor would.
The learner is killed half a checkpoint interval after its checkpoint.
Printed: per kill, the time until the role works again (a restarted
actor waits for weights; the learner's retries reach the restarted
server; a restarted learner ends its first iteration) and until the next
learner checkpoint, the env steps or replay items lost, and at the end
whether the run reached its budget with counters that add up.
docs/distributed.md holds the table.
"""

import os
import tempfile

from absl import app
from absl import flags
import portpicker

from tfa_explore.testing import faults

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_GIN_FILE = flags.DEFINE_string(
    'gin_file', 'gin/r2d2/stateless_cartpole.gin',
    'An R2D2 gin file with num_actors = 2.')
_NUM_ENV_STEPS = flags.DEFINE_integer('num_env_steps', 40_000, 'Budget.')
_CHECKPOINT_INTERVAL = flags.DEFINE_integer('checkpoint_interval', 5_000,
                                            'Env steps between checkpoints.')
_KILL_STEPS = flags.DEFINE_list(
    'kill_steps', ['10000', '20000', '30000'],
    'Learner checkpoint env steps at which actor 0, the replay server and '
    'the learner are killed.')
_WORKDIR = flags.DEFINE_string('workdir', None,
                               'Run directory (default: a temporary one).')


def main(argv):
  del argv
  workdir = _WORKDIR.value or tempfile.mkdtemp(prefix='fault_injection_')
  gin_file = os.path.join(workdir, 'faults.gin')
  os.makedirs(workdir, exist_ok=True)
  with open(gin_file, 'w') as f:
    f.write(f"include '{os.path.join(REPO_ROOT, _GIN_FILE.value)}'\n"
            f'NUM_ENV_STEPS = {_NUM_ENV_STEPS.value}\n'
            'r2d2.Settings.checkpoint_interval = '
            f'{_CHECKPOINT_INTERVAL.value}\n'
            # Fine progress lines: the learner kill waits for one.
            f'r2d2.Settings.log_interval = {_CHECKPOINT_INTERVAL.value // 10}\n'
            f'r2d2.Settings.eval_interval = {_NUM_ENV_STEPS.value}\n')
  report = faults.run_three_role_scenario(
      gin_file, workdir, portpicker.pick_unused_port(),
      kill_steps=[int(step) for step in _KILL_STEPS.value],
      learner_lead=_CHECKPOINT_INTERVAL.value // 2,
      timeout_seconds=3600)
  print(f'gin: {_GIN_FILE.value}, budget {_NUM_ENV_STEPS.value:,} env '
        f'steps, checkpoint every {_CHECKPOINT_INTERVAL.value:,}')
  print('| killed | at learner checkpoint (env step) | role back after (s) | '
        'next learner checkpoint after (s) | lost |')
  print('|---|---|---|---|---|')
  for kill in report.kills:
    if kill.role == 'learner':
      lost = (f'{kill.env_steps_lost:,} env steps counted since its '
              'checkpoint')
    elif kill.role == 'replay_server':
      lost = (f'{kill.items_before - kill.items_restored:,} of '
              f'{kill.items_before:,} agent-table items (restored '
              f'{kill.items_restored:,})')
    else:
      lost = 'its unreported env steps (< actor_update_period)'
    print(f'| {kill.role} | {kill.at_env_step:,} | '
          f'{kill.seconds_role_back:.1f} | {kill.seconds_to_recover:.1f} | '
          f'{lost} |')
  print(f'learner exit code {report.learner_exit_code}, actors '
        f'{report.actor_exit_codes}; final env steps '
        f'{report.final_env_steps:,}, episodes {report.final_episodes:,}, '
        f'learner steps {report.final_learner_steps:,} (at the learner kill '
        f'{report.learner_steps_at_kill:,}); {report.seconds:.0f} s in all; '
        f'logs: {report.log_dir}')


if __name__ == '__main__':
  app.run(main)
