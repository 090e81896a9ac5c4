"""Fault injection: the three R2D2 binaries on loopback, each role killed.

`run_three_role_scenario` starts `train/replay_server.py` (with
`--checkpoint_dir`), `train/learner.py` and `num_actors` x `train/actor.py`,
then SIGKILLs, in turn, an actor, the replay server and the learner, each
at a learner checkpoint, and restarts it as a supervisor would (same
command; the actor with `--incarnation=1`). It returns what it measured,
for `tests/test_fault_tolerance.py` to assert and
`benchmarks/fault_injection.py` to print:

* per kill: the env step of the kill, the time to recover (until the next
  learner checkpoint), and what was lost (learner: env steps since its
  last checkpoint; replay server: items of the agent table since its last
  checkpoint);
* the end: learner exit code, its final env steps and episodes, the
  actors' exit codes.

The learner's checkpoints (numbered by env steps) are the clock: they are
files, read without a client.

`RunThread` and the Ray helpers serve the tests that kill an actor of a
run launched in-process (one machine's actor pool, a local Ray cluster),
whatever the family.
"""

import dataclasses
import glob
import os
import re
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

import reverb

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
AGENT_TABLE = 'r2d2_sequences'


class ScenarioError(AssertionError):
  """A step of the scenario did not happen in time; the logs' tails."""


@dataclasses.dataclass
class Kill:
  role: str
  at_env_step: int  # the learner's latest checkpoint when killed
  seconds_to_recover: float = float('nan')  # to the next learner checkpoint
  # Until the role works again: a restarted actor waits for weights, the
  # learner's and actors' retries reach the restarted server, a restarted
  # learner ends its first iteration.
  seconds_role_back: float = float('nan')
  env_steps_lost: Optional[int] = None  # learner: since its checkpoint
  items_before: Optional[int] = None  # replay server: agent table
  items_restored: Optional[int] = None


@dataclasses.dataclass
class Report:
  kills: List[Kill]
  learner_exit_code: Optional[int]
  learner_steps_at_kill: int
  actor_exit_codes: List[Optional[int]]
  final_env_steps: int
  final_learner_steps: int
  final_episodes: int
  seconds: float
  log_dir: str


def checkpoint_step(root_dir: str) -> int:
  """Env step of the learner's latest checkpoint (-1: none yet)."""
  try:
    with open(os.path.join(root_dir, 'checkpoints', 'checkpoint')) as f:
      match = re.search(r'model_checkpoint_path: "ckpt-(\d+)"', f.read())
  except FileNotFoundError:
    return -1
  return int(match.group(1)) if match else -1


class RunThread(threading.Thread):
  """A run (`run()` -> its final evaluation) in a thread of the test.

  Attributes:
    results: the final evaluation, once the run returned.
    failures: what the run raised.
  """

  def __init__(self, run: Callable[[], Dict[str, Any]]):
    super().__init__(name='run_under_test', daemon=True)
    self._run = run
    self.results = {}
    self.failures = []
    self.start()

  def run(self):
    try:
      self.results.update(self._run())
    except Exception as e:  # pylint: disable=broad-except
      self.failures.append(e)

  def wait_for_checkpoint(self, root_dir: str, env_step: int,
                          deadline: float) -> None:
    """Returns once the learner checkpointed at `env_step` or later.

    Raises:
      AssertionError: the run ended first, or `deadline` (time.time())
        passed.
    """
    while checkpoint_step(root_dir) < env_step:
      if not self.is_alive():
        raise AssertionError(f'The run ended before a checkpoint at env '
                             f'step {env_step}: {self.failures}')
      if time.time() > deadline:
        raise AssertionError(f'No checkpoint at env step {env_step} in time.')
      time.sleep(0.2)

  def finish(self, timeout_seconds: float) -> Dict[str, Any]:
    """The run's final evaluation; AssertionError if it hung or raised."""
    self.join(timeout=timeout_seconds)
    if self.is_alive():
      raise AssertionError('The run did not finish.')
    if self.failures:
      raise AssertionError(f'The run failed: {self.failures!r}')
    return self.results


def kill_ray_actor(name: str, deadline: float) -> int:
  """SIGKILLs the process of the named Ray actor (a `ray_launch` role with
  `pid()`); returns once Ray restarted it, with the new pid.

  Raises:
    AssertionError: Ray did not restart it before `deadline`.
  """
  import ray  # pylint: disable=g-import-not-at-top
  actor = ray.get_actor(name)
  old_pid = ray.get(actor.pid.remote())
  os.kill(old_pid, signal.SIGKILL)
  new_pid = None
  while new_pid in (None, old_pid):
    if time.time() > deadline:
      raise AssertionError(f'Ray did not restart {name}.')
    try:
      new_pid = ray.get(actor.pid.remote(), timeout=10)
    except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
      time.sleep(0.5)
  return new_pid


def end_ray_run(run: RunThread, role_names: Sequence[str],
                timeout_seconds: float) -> None:
  """A test's clean-up: a run still going (the test failed) ends before
  the cluster goes (Ray torn down under a live driver thread crashed the
  process later), then the cluster."""
  import ray  # pylint: disable=g-import-not-at-top
  if run.is_alive() and ray.is_initialized():
    for name in role_names:
      try:
        ray.kill(ray.get_actor(name), no_restart=True)
      except ValueError:  # not started, or gone
        pass
    run.join(timeout=timeout_seconds)
  if ray.is_initialized():
    ray.shutdown()


def replay_checkpoints(checkpoint_dir: str) -> List[str]:
  """Complete Reverb checkpoints (with their DONE file), oldest first."""
  return sorted(os.path.dirname(path) for path in
                glob.glob(os.path.join(checkpoint_dir, '*', 'DONE')))


def final_metrics(summary_dir: str) -> Dict[str, float]:
  """{tag: value at the largest step} of the scalar summaries there."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  latest = {}
  for path in sorted(glob.glob(os.path.join(summary_dir, 'events.out.*'))):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        array = tf.make_ndarray(value.tensor)
        if array.dtype.kind not in 'fiub':
          continue  # text (the operative config)
        if value.tag not in latest or event.step >= latest[value.tag][0]:
          latest[value.tag] = (event.step, float(array))
  return {tag: value for tag, (_, value) in latest.items()}


class RoleProcesses:
  """The role binaries of a run on loopback (replay server, learner,
  `num_actors` actors), their commands and logs: `start(role)`,
  `kill(role)`, `log(role)`, `stop_all()`."""

  def __init__(self, gin_file, root_dir, replay_dir, port, log_dir,
               num_actors):
    self.address = f'127.0.0.1:{port}'
    self.log_dir = log_dir
    gin = [f'--gin_file={gin_file}']
    self.commands = {
        'replay_server': ['replay_server', f'--port={port}',
                          f'--checkpoint_dir={replay_dir}'] + gin,
        'learner': ['learner', f'--replay_server={self.address}',
                    f'--root_dir={root_dir}'] + gin,
    }
    for task in range(num_actors):
      self.commands[f'actor_{task}'] = [
          'actor', f'--task={task}', f'--replay_server={self.address}',
          f'--root_dir={root_dir}'] + gin
    self.processes: Dict[str, subprocess.Popen] = {}
    self._logs = []

  def start(self, role, extra_args=()):
    binary, *args = self.commands[role]
    log = open(os.path.join(self.log_dir, f'{role}.log'), 'a')
    self._logs.append(log)
    self.processes[role] = subprocess.Popen(
        [sys.executable, os.path.join(REPO_ROOT, 'train', f'{binary}.py')] +
        args + list(extra_args), stdout=log, stderr=subprocess.STDOUT,
        cwd=REPO_ROOT)

  def kill(self, role):
    process = self.processes.pop(role)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)

  def log(self, role) -> str:
    try:
      with open(os.path.join(self.log_dir, f'{role}.log')) as f:
        return f.read()
    except FileNotFoundError:
      return ''

  def tails(self) -> str:
    return '\n'.join(f'--- {role} ---\n{self.log(role)[-2500:]}'
                     for role in self.commands)

  def stop_all(self):
    for process in self.processes.values():
      if process.poll() is None:
        process.kill()
        process.wait(timeout=30)
    for log in self._logs:
      log.close()


def run_three_role_scenario(gin_file: str, workdir: str, port: int,
                            num_actors: int = 2,
                            kill_steps=(200, 600, 1000),
                            learner_lead: int = 100,
                            timeout_seconds: float = 600) -> Report:
  """Runs the scenario; see the module docstring.

  Args:
    gin_file: an R2D2 gin file whose `checkpoint_interval` is well below
      the gaps between `kill_steps` and whose budget is past the last.
    workdir: root_dir, replay checkpoints and logs go here.
    port: a free port for the replay server.
    num_actors: actor processes (the gin file's `num_actors`).
    kill_steps: learner checkpoint env steps at (or after) which the actor
      0, the replay server and the learner are killed.
    learner_lead: the learner is killed once its progress line shows this
      many env steps past its checkpoint (what a kill then loses).
    timeout_seconds: the whole scenario's bound.

  Returns:
    The `Report`.

  Raises:
    ScenarioError: a step did not happen in time (with the logs' tails).
  """
  root_dir = os.path.join(workdir, 'run')
  replay_dir = os.path.join(workdir, 'replay_checkpoints')
  log_dir = os.path.join(workdir, 'logs')
  os.makedirs(log_dir, exist_ok=True)
  roles = RoleProcesses(gin_file, root_dir, replay_dir, port, log_dir,
                        num_actors)
  start = time.monotonic()
  deadline = start + timeout_seconds

  def wait_until(condition, what):
    while not condition():
      if time.monotonic() > deadline:
        raise ScenarioError(f'Timed out waiting for {what}.\n' +
                            roles.tails())
      for role, process in roles.processes.items():
        if process.poll() not in (None, 0):
          raise ScenarioError(f'{role} exited with {process.returncode} '
                              f'while waiting for {what}.\n' + roles.tails())
      time.sleep(0.2)

  def wait_for_next_checkpoint(after_step, what):
    wait_until(lambda: checkpoint_step(root_dir) > after_step, what)

  kills = []
  try:
    roles.start('replay_server')
    roles.start('learner')
    for task in range(num_actors):
      roles.start(f'actor_{task}')

    # 1. An actor: the others keep the learner training; then restarted.
    wait_until(lambda: checkpoint_step(root_dir) >= kill_steps[0],
               f'a learner checkpoint at env step >= {kill_steps[0]}')
    kill = Kill('actor', checkpoint_step(root_dir))
    killed_at = time.monotonic()
    roles.kill('actor_0')
    wait_for_next_checkpoint(kill.at_env_step,
                             'a learner checkpoint with actor 0 dead')
    kill.seconds_to_recover = time.monotonic() - killed_at
    restarted_at = time.monotonic()
    roles.start('actor_0', ['--incarnation=1'])
    wait_until(lambda: 'restart 1) waiting' in roles.log('actor_0'),
               'the restarted actor 0')
    kill.seconds_role_back = time.monotonic() - restarted_at
    kills.append(kill)

    # 2. The replay server, at a replay checkpoint; restarted from it.
    wait_until(lambda: checkpoint_step(root_dir) >= kill_steps[1] and
               replay_checkpoints(replay_dir),
               f'a checkpoint at env step >= {kill_steps[1]}')
    client = reverb.Client(roles.address)
    items_before = client.server_info(timeout=10)[AGENT_TABLE].current_size
    kill = Kill('replay_server', checkpoint_step(root_dir),
                items_before=items_before)
    killed_at = time.monotonic()
    roles.kill('replay_server')
    time.sleep(2.0)  # the others notice and start waiting
    roles.start('replay_server')
    # Its log is appended to: the second start line is the restarted one.
    wait_until(lambda: roles.log('replay_server').count(
        'Reverb server on port') >= 2, 'the restarted replay server')
    restored = re.findall(rf'{AGENT_TABLE} ([\d,]+) items',
                          roles.log('replay_server'))
    kill.items_restored = (int(restored[-1].replace(',', ''))
                           if restored else 0)
    wait_for_next_checkpoint(kill.at_env_step,
                             'a learner checkpoint after the server restart')
    kill.seconds_to_recover = time.monotonic() - killed_at
    back = re.findall(r'the learner carries on after (\d+) s',
                      roles.log('learner'))
    kill.seconds_role_back = float(back[-1]) if back else float('nan')
    kills.append(kill)

    # 3. The learner, between two checkpoints: restarted, it resumes from
    # the last one.
    wait_until(lambda: checkpoint_step(root_dir) >= kill_steps[2],
               f'a learner checkpoint at env step >= {kill_steps[2]}')
    kill = Kill('learner', checkpoint_step(root_dir))
    train_steps = re.findall(r'train step ([\d,]+)', roles.log('learner'))

    def progress_steps():
      steps = re.findall(r'env steps ([\d,]+)/', roles.log('learner'))
      return int(steps[-1].replace(',', '')) if steps else 0
    # The learner is frozen (SIGSTOP) to read its last progress line and
    # checkpoint together: a line that also crossed a checkpoint interval is
    # followed by a save, which would leave nothing to lose. Then it is
    # killed, or let go on to the next checkpoint's window.
    while True:
      wait_until(lambda: progress_steps() >= kill.at_env_step + learner_lead,
                 f'learner progress {learner_lead} env steps past its '
                 'checkpoint')
      roles.processes['learner'].send_signal(signal.SIGSTOP)
      last_seen = progress_steps()
      kill.at_env_step = checkpoint_step(root_dir)
      if last_seen >= kill.at_env_step + learner_lead:
        break
      roles.processes['learner'].send_signal(signal.SIGCONT)
    killed_at = time.monotonic()
    roles.kill('learner')
    roles.start('learner')
    wait_until(lambda: roles.log('learner').count('First iteration done') >= 2,
               'the first iteration of the restarted learner')
    kill.seconds_role_back = time.monotonic() - killed_at
    wait_for_next_checkpoint(kill.at_env_step,
                             'a checkpoint of the restarted learner')
    kill.seconds_to_recover = time.monotonic() - killed_at
    resumed = re.findall(r'Resumed from checkpoint at env step ([\d,]+)',
                         roles.log('learner'))
    resumed_step = int(resumed[-1].replace(',', '')) if resumed else 0
    kill.env_steps_lost = max(last_seen - resumed_step, 0)
    kills.append(kill)

    learner = roles.processes['learner']
    remaining = max(deadline - time.monotonic(), 1)
    try:
      learner_code = learner.wait(timeout=remaining)
    except subprocess.TimeoutExpired as e:
      raise ScenarioError('The learner did not finish.\n' +
                          roles.tails()) from e
    actor_codes = []
    for task in range(num_actors):
      try:
        actor_codes.append(roles.processes[f'actor_{task}'].wait(timeout=60))
      except subprocess.TimeoutExpired:
        actor_codes.append(None)
    metrics = final_metrics(os.path.join(root_dir, 'train'))
    return Report(
        kills=kills, learner_exit_code=learner_code,
        learner_steps_at_kill=(int(train_steps[-1].replace(',', ''))
                               if train_steps else 0),
        final_learner_steps=int(metrics.get('Metrics/LearnerSteps', -1)),
        actor_exit_codes=actor_codes,
        final_env_steps=int(metrics.get('Metrics/EnvironmentSteps', -1)),
        final_episodes=int(metrics.get('Metrics/NumberOfEpisodes', -1)),
        seconds=time.monotonic() - start, log_dir=log_dir)
  finally:
    roles.stop_all()
