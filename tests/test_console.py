"""The binaries' quiet console (tfa_explore.process.console).

Unit tests of its parts (the --verbose scan, the record filter, the
format, the Reverb line filter), then the binary itself: a tiny train_eval
run prints our lines and nothing else; --verbose brings TensorFlow's lines
back; a config error is one line and exit code 2 either way.
"""

import glob
import logging
import os
import re
import signal
import subprocess
import sys
import tempfile

from absl.testing import absltest
from absl.testing import parameterized
import pytest

from tfa_explore.process import console
from tfa_explore.testing import processes

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.path.join(REPO_ROOT, 'train', 'train_eval.py')
CARTPOLE_GIN = os.path.join(REPO_ROOT, 'gin', 'ppo', 'cartpole.gin')
# 4 envs x 32 steps = 128 steps per iteration (a few less env steps: resets
# are not counted): 2 iterations, a progress line each, then an eval and a
# checkpoint (PolicySaver's lines).
TINY_RUN = (
    'NUM_ENV_STEPS = 200',
    'on_policy.Settings.num_envs = 4',
    'on_policy.Settings.rollout_length = 32',
    'on_policy.Settings.eval_interval = 200',
    'on_policy.Settings.num_eval_episodes = 2',
    'on_policy.Settings.checkpoint_interval = 200',
    'on_policy.Settings.log_interval = 100',
    'ppo.ppo_clip_agent.num_epochs = 1',
    'suite_gymnasium.load.max_episode_steps = 50',
)
# What a default run printed before the console was quiet.
NOISE = ('cuda', 'cudnn', 'tensorrt', 'gym has been unmaintained',
         'syntaxwarning', 'gather_all', 'deprecat', 'warning:tensorflow',
         'userwarning', 'assets written', 'untraced functions')
# Our lines: console.ShortFormatter's 'HH:MM:SS message'.
OUR_LINE = re.compile(r'\d\d:\d\d:\d\d \S')
# TensorFlow's C++ log lines: '2026-01-02 03:04:05.678901: I tensorflow/...'.
TF_CPP_LINE = re.compile(
    r'^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWEF] ', re.MULTILINE)
# absl's prefix on a Python record: 'I0102 03:04:05.678901 1234 file.py:50]'.
ABSL_PREFIX = re.compile(r'^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ \S+:\d+\]',
                         re.MULTILINE)


def run_binary(*args, timeout=300):
  """Runs train_eval.py; (return code, stdout + stderr)."""
  result = subprocess.run(
      [sys.executable, BINARY, *args], capture_output=True, text=True,
      timeout=timeout, cwd=REPO_ROOT, check=False)
  return result.returncode, result.stdout + result.stderr


class VerboseRequestedTest(parameterized.TestCase):

  @parameterized.parameters(
      ([], False),
      (['--verbose'], True),
      (['-verbose'], True),
      (['--verbose=true'], True),
      (['--verbose=1'], True),
      (['--verbose=false'], False),
      (['--verbose=0'], False),
      (['--noverbose'], False),
      (['--verbose', '--noverbose'], False),
      (['--noverbose', '--verbose'], True),
      (['--verbose_other'], False),
      (['--gin_bindings=verbose'], False),
      (['--', '--verbose'], False),
  )
  def test_scan(self, args, expected):
    self.assertEqual(console.verbose_requested(['binary.py'] + args),
                     expected)

  def test_configure_only_a_program(self):
    # An imported binary (a test importing train/...) changes nothing.
    self.assertFalse(console.configure('train_eval', argv=['x']))
    self.assertFalse(console.configure('__main__', argv=['x', '--verbose']))


class FilterAndFormatTest(absltest.TestCase):

  def record(self, pathname, level=logging.INFO, msg='message'):
    return logging.LogRecord('absl', level, pathname, 1, msg, None, None)

  def test_ours_at_any_level_theirs_from_error(self):
    ours = os.path.join(tempfile.gettempdir(), 'repo', 'tfa_explore')
    binaries = os.path.join(tempfile.gettempdir(), 'repo', 'train')
    theirs = os.path.join(tempfile.gettempdir(), 'site-packages')
    records = console.OurRecords([ours, binaries])
    self.assertTrue(records.filter(self.record(
        os.path.join(ours, 'experiments', 'run_kit.py'))))
    self.assertTrue(records.filter(self.record(
        os.path.join(binaries, 'collect_demonstrations.py'))))
    for level in (logging.INFO, logging.WARNING):
      self.assertFalse(records.filter(self.record(
          os.path.join(theirs, 'tf_agents', 'policies', 'policy_saver.py'),
          level)))
    self.assertTrue(records.filter(self.record(
        os.path.join(theirs, 'tensorflow', 'x.py'), logging.ERROR)))
    # 'tfa_explore_other' is not under 'tfa_explore'.
    self.assertFalse(records.filter(self.record(ours + '_other/x.py')))
    # gin's file search logs ERROR for every path it tries; muted.
    self.assertFalse(records.filter(self.record(
        os.path.join(theirs, 'gin', 'resource_reader.py'), logging.ERROR)))

  def test_short_format(self):
    formatter = console.ShortFormatter()
    info = self.record('x.py', msg='env steps 1/2')
    self.assertRegex(formatter.format(info), r'^\d\d:\d\d:\d\d env steps 1/2$')
    warning = self.record('x.py', logging.WARNING, 'late')
    self.assertRegex(formatter.format(warning),
                     r'^\d\d:\d\d:\d\d WARNING: late$')


class LineFilterTest(absltest.TestCase):

  def test_drops_reverb_info_lines_only(self):
    lines = [
        '[reverb/cc/client.cc:165] Sampler and server are owned by the same '
        'process (7) so Table t is accessed directly without gRPC.',
        '[reverb/cc/platform/default/server.cc:71] Started replay server on '
        'port 8000',
        '[reverb/cc/reverb_service_impl.cc:168] Stored checkpoint to /r/1',
        'WARNING: All log messages before absl::InitializeLog() is called are '
        'written to STDERR',
        'I0000 00:00:1795659621.636671   24333 device_compiler.h:186] Compiled '
        'cluster using XLA!  This line is logged at most once for the '
        'lifetime of the process.',
        'A.L.E: Arcade Learning Environment (version 0.12.1+8a8fafb)',
        '[Powered by Stella]',
        '12:00:00 env steps 1/2 (50%)',
        '[reverb/cc/writer.cc:1] Failed to insert: deadline exceeded',
        'Sampler and server are owned by the same process (not Reverb)',
        'Traceback without a newline at the end',
    ]
    result = subprocess.run(
        console.line_filter_command(), input='\n'.join(lines),
        capture_output=True, text=True, timeout=60, check=True)
    self.assertEqual(result.stdout, '\n'.join(lines[7:]))

  def test_drops_a_restore_of_replay_tables(self):
    # What Reverb 0.14 printed for one restore (the 'Still reading' line
    # once per 100 records: hundreds per resume).
    path = '/r/replay_checkpoints/2026-01-02T03:04:05.678+00:00'
    checkpointer = '[reverb/cc/platform/tfrecord_checkpointer.cc'
    restore = [
        f'{checkpointer}:286] Loading checkpoint from {path}',
        f'{checkpointer}:295] Loading and verifying metadata of the '
        'checkpointed tables.',
        f"{checkpointer}:341] Metadata for table 'r2d2_sequences' was "
        'successfully loaded and verified.',
        f'{checkpointer}:404] Successfully loaded and verified metadata for '
        'all (3) tables. We\'ll now proceed to read the data referenced by '
        'the items in the table.',
    ] + [
        f'{checkpointer}:447] Still reading compressed trajectory data. '
        f'{records} records have been read so far.'
        for records in range(1, 1002, 100)
    ] + [
        f'{checkpointer}:457] Completed reading compressed trajectory data. '
        'We\'ll now start assembling the checkpointed tables.',
        f'{checkpointer}:534] Table r2d2_sequences and 34 items have been '
        f'successfully loaded from checkpoint at path {path}.',
        f'{checkpointer}:540] Successfully loaded 3 tables from {path}',
        # Two threads' lines at once, interleaved.
        '[[reverb/cc/client.ccreverb/cc/client.cc::165] 165Sampler and server '
        'are owned by the same process (] 31571Sampler and server are owned '
        'by the same process () so Table 31571variables) so Table  is '
        'accessed directly without gRPC.variables',
        ' is accessed directly without gRPC.',
    ]
    ours = ['12:00:00 Reverb tables restored from ' + path,
            f'{checkpointer}:100] Failed to read table r2d2_sequences']
    result = subprocess.run(
        console.line_filter_command(), input='\n'.join(restore + ours) + '\n',
        capture_output=True, text=True, timeout=60, check=True)
    self.assertEqual(result.stdout.splitlines(), ours)


class StopLineTest(absltest.TestCase):

  def test_a_stop_through_gin_configurables_is_one_line(self):
    # pylint: disable=g-import-not-at-top
    import gin
    from tfa_explore import config
    from tfa_explore.process import stop_signals
    # pylint: enable=g-import-not-at-top

    @gin.configurable('test_console_stopped_loop')
    def stopped_loop():
      raise stop_signals.RunStopped(2, 1234)

    # Gin adds a line to the message for each configurable it passes.
    with self.assertRaises(stop_signals.RunStopped) as raised:
      stopped_loop()
    self.assertIn('In call to configurable', str(raised.exception))
    with self.assertLogs('absl', level='WARNING') as logs, \
        self.assertRaises(SystemExit) as exited:
      config.exits.exit_stopped(raised.exception)
    self.assertEqual(exited.exception.code, 130)
    (record,) = logs.records
    self.assertEqual(
        record.getMessage(),
        'Stopped by SIGINT at env step 1,234; a checkpoint was saved there: '
        'run the same command again to resume.')


@pytest.mark.integration
class BinaryConsoleTest(absltest.TestCase):

  def test_a_default_run_prints_our_lines_only(self):
    root_dir = tempfile.mkdtemp(prefix='tfa_explore_console_')
    self.addCleanup(subprocess.run, ['rm', '-rf', root_dir], check=False)
    code, output = run_binary(
        f'--root_dir={root_dir}', f'--gin_file={CARTPOLE_GIN}',
        *[f'--gin_bindings={binding}' for binding in TINY_RUN])
    self.assertEqual(code, 0, output[-3000:])
    lines = [line for line in output.splitlines() if line.strip()]
    self.assertEqual(
        [line for line in lines if not OUR_LINE.match(line)], [],
        'lines that are not ours')
    for marker in NOISE:
      self.assertNotIn(marker, output.lower())
    # The first iteration's line has no timed interval behind it; the
    # second line has a rate and an ETA.
    self.assertIn(f'Training in {root_dir}', lines[0])
    self.assertRegex(lines[1], r'First iteration done at env step 1\d\d;')
    progress = [line for line in lines if line[9:].startswith('env steps ')]
    self.assertLen(progress, 2, output)
    self.assertRegex(progress[0], r'env steps 1\d\d/200 \(\d+%\) \| '
                     r'recent return .* \| rate and ETA from the next line$')
    self.assertRegex(progress[1], r'env steps 2\d\d/200 \(\d+%\) \| '
                     r'[\d,]+ env steps/s \| recent return .* \| ETA 0:00:00$')
    self.assertRegex(output, r'Eval at env step 2\d\d: average return')
    # The checkpoint due at the last iteration is the final one, announced
    # once.
    self.assertLen(re.findall(r'Checkpoint (and policies )?saved at env step',
                              output), 1, output)
    self.assertRegex(output, r'Checkpoint and policies saved at env step 2\d\d')

  def test_r2d2_resume_fallback_and_stop_print_our_lines_only(self):
    # pylint: disable=g-import-not-at-top
    import test_r2d2_experiment  # the tiny R2D2 gin file
    # pylint: enable=g-import-not-at-top
    work_dir = tempfile.mkdtemp(prefix='tfa_explore_console_')
    self.addCleanup(subprocess.run, ['rm', '-rf', work_dir], check=False)
    root_dir = os.path.join(work_dir, 'run')
    gin_file = os.path.join(work_dir, 'tiny_r2d2.gin')
    with open(gin_file, 'w') as f:
      f.write(test_r2d2_experiment.TINY_GIN)
    args = (f'--root_dir={root_dir}', f'--gin_file={gin_file}',
            "--gin_bindings=r2d2.Settings.actor_mode = 'thread'",
            '--gin_bindings=r2d2.Settings.checkpoint_interval = 60')

    def run(num_env_steps):
      code, output = run_binary(
          *args, f'--gin_bindings=NUM_ENV_STEPS = {num_env_steps}')
      self.assertEqual(code, 0, output[-3000:])
      self.assert_our_lines_only(output)
      # Every checkpoint once, each with one of the replay tables.
      saved = re.findall(r'Checkpoint (?:and policies )?saved at env step '
                         r'([\d,]+)', output)
      self.assertNotEmpty(saved, output)
      self.assertLen(set(saved), len(saved), output)
      self.assertLen(re.findall('Replay tables checkpointed', output),
                     len(saved), output)
      self.assertNotIn('restarting it', output)  # no actor stopped early
      return output

    output = run(120)
    # An R2D2 run cannot stop exactly at its budget, and says so at start.
    self.assertIn('The run ends at the first learner iteration after the '
                  "actors' reports reach 120 env steps", output)
    replay_dir = os.path.join(root_dir, 'replay_checkpoints')
    (newest,) = glob.glob(os.path.join(replay_dir, '*', 'DONE'))
    output = run(240)  # a finished run continued: a resume
    self.assertIn('Reverb tables restored from '
                  f'{os.path.dirname(newest)}: r2d2_sequences ', output)

    # A damaged newest replay checkpoint: its kept predecessor is restored.
    (newest,) = glob.glob(os.path.join(replay_dir, '*', 'DONE'))
    with open(os.path.join(os.path.dirname(newest), 'chunks.tfrecord'),
              'r+b') as f:
      f.write(b'\xff' * 32)
    output = run(360)
    self.assertIn('does not load', output)
    self.assertIn(f'Reverb tables restored from {replay_dir}_kept{os.sep}',
                  output)

    # A signal stop ends with the stop line.
    process = subprocess.Popen(
        [sys.executable, BINARY, *args,
         '--gin_bindings=NUM_ENV_STEPS = 1000000'], cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = []
    try:
      for line in process.stderr:
        lines.append(line)
        if re.search(r'env steps [\d,]+/', line):  # a progress line
          break
      process.send_signal(signal.SIGINT)
      lines.extend(process.stderr)
      process.wait(timeout=120)
    finally:
      processes.end(process)
    output = ''.join(lines)
    self.assertEqual(process.returncode, 130, output[-3000:])
    self.assert_our_lines_only(output)
    self.assertRegex(output.strip().splitlines()[-1],
                     r'^\d\d:\d\d:\d\d WARNING: Stopped by SIGINT at env '
                     r'step [\d,]+; a checkpoint was saved there: run the same '
                     r'command again to resume\.$')

  def assert_our_lines_only(self, output):
    lines = [line for line in output.splitlines() if line.strip()]
    self.assertEqual([line for line in lines if not OUR_LINE.match(line)],
                     [], 'lines that are not ours')

  def test_config_error_is_one_line_verbose_shows_tensorflow(self):
    missing = os.path.join(tempfile.gettempdir(), 'no_such_file.gin')
    args = ('--root_dir=unused', f'--gin_file={missing}')
    code, output = run_binary(*args)
    self.assertEqual(code, 2, output[-3000:])
    lines = output.strip().splitlines()
    self.assertLen(lines, 1, output)
    self.assertStartsWith(lines[0], 'ERROR: Cannot read gin file')

    code, output = run_binary('--verbose', *args)
    self.assertEqual(code, 2, output[-3000:])
    self.assertIn('ERROR: Cannot read gin file', output)
    self.assertRegex(output, TF_CPP_LINE)  # e.g. the CUDA probe.
    self.assertRegex(output, ABSL_PREFIX)  # e.g. gin's file search.


if __name__ == '__main__':
  absltest.main()
