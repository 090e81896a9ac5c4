"""What the benchmark scripts share: running train_eval, reading its logs.

Imported by the scripts next to it (`python benchmarks/<name>.py` puts this
directory on sys.path). TensorFlow is imported only when event files are
read, so --help and the job launchers stay light.
"""

import glob
import os
import re
import subprocess
import sys
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAIN_EVAL = os.path.join(REPO_ROOT, 'train', 'train_eval.py')
# The vector extensions TensorFlow's kernels (oneDNN, XLA, Eigen) may use,
# as /proc/cpuinfo names them, in the order printed.
VECTOR_EXTENSIONS = ('sse4_2', 'avx', 'avx2', 'fma', 'avx_vnni', 'avx512f',
                     'avx512bw', 'avx512vl', 'avx512_vnni', 'avx512_bf16',
                     'amx_tile', 'amx_bf16', 'amx_int8')
# Environment variables that cap or change what TensorFlow's CPU kernels
# use, printed when set: a figure measured under one is not this CPU's.
ISA_VARIABLES = ('ONEDNN_MAX_CPU_ISA', 'TF_ENABLE_ONEDNN_OPTS', 'XLA_FLAGS',
                 'OMP_NUM_THREADS')


def cpu_description(cpuinfo_path='/proc/cpuinfo'):
  """'<model> (<n> CPUs; <vector extensions>)' of this machine, and any
  variable of ISA_VARIABLES that is set. Every speed figure names it."""
  model, flags = 'CPU model unknown', set()
  try:
    with open(cpuinfo_path) as f:
      for line in f:
        key, _, value = line.partition(':')
        key = key.strip()
        if key == 'model name' and model == 'CPU model unknown':
          model = value.strip()
        elif key in ('flags', 'Features') and not flags:
          flags = set(value.split())
  except OSError:
    pass
  extensions = [name for name in VECTOR_EXTENSIONS if name in flags]
  text = (f'{model} ({os.cpu_count()} CPUs; vector extensions: '
          f'{" ".join(extensions) or "not read"})')
  settings = [f'{name}={os.environ[name]}' for name in ISA_VARIABLES
              if name in os.environ]
  if settings:
    text += f'; set: {" ".join(settings)}'
  return text


def tree_cpu_seconds(pid=None):
  """User + system CPU seconds of a process (default: this one) and its live
  children. Needs psutil (the `bench` extra)."""
  return sum(own_and_children_cpu_seconds(pid))


def own_and_children_cpu_seconds(pid=None):
  """(the process's own, its live children's) user + system CPU seconds,
  read in one walk of the tree. Needs psutil (the `bench` extra)."""
  processes = process_cpu_seconds(pid)
  own = processes[0][2] if processes and processes[0][0] == (
      pid or os.getpid()) else 0.0
  return own, sum(cpu for _, _, cpu in processes) - own


def process_cpu_seconds(pid=None):
  """[(pid, command line, user + system CPU seconds)] of a process
  (default: this one), first, and of its live descendants, read in one
  walk of the tree; a process gone meanwhile is left out. Needs psutil
  (the `bench` extra)."""
  import psutil  # pylint: disable=g-import-not-at-top
  root = psutil.Process(pid)
  processes = []
  for process in [root] + root.children(recursive=True):
    try:
      with process.oneshot():
        times = process.cpu_times()
        command = ' '.join(process.cmdline())
    except psutil.NoSuchProcess:
      continue
    processes.append((process.pid, command, times.user + times.system))
  return processes


def commit_description():
  """The checkout's short commit, '(with uncommitted changes)' when tracked
  files differ from it; 'unknown' outside git. What a results file names."""
  def git(*args):
    try:
      return subprocess.run(['git', *args], cwd=REPO_ROOT, capture_output=True,
                            text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
      return ''

  commit = git('rev-parse', '--short', 'HEAD') or 'unknown'
  if git('status', '--porcelain', '--untracked-files=no'):
    commit += ' (with uncommitted changes)'
  return commit


def read_json_lines(path):
  """The JSON objects of a file of one a line, [] if it is missing. A line
  torn by a kill is passed over."""
  import json  # pylint: disable=g-import-not-at-top
  objects = []
  try:
    with open(path) as f:
      for line in f:
        try:
          objects.append(json.loads(line))
        except ValueError:
          pass
  except OSError:
    pass
  return objects


def gin_value(name):
  """The value gin binds to `name` ('scope.function.parameter'), a macro
  or an evaluated reference (`@f()`) evaluated. Gin must be parsed."""
  import gin  # pylint: disable=g-import-not-at-top
  value = gin.query_parameter(name)
  if getattr(value, 'evaluate', False):
    return value.scoped_configurable_fn()
  return value


_PROGRESS = re.compile(r'env steps ([\d,]+)/')


def progress_steps(log_text):
  """The env steps of each progress line (`env steps N/M ...`) of a log."""
  return [int(m.replace(',', '')) for m in _PROGRESS.findall(log_text)]


def progress_marks(command, log_path, thresholds, timeout, sample,
                   environment=None, count_lines=False):
  """Runs `command` and samples it at progress lines; then stops it.

  `command` (train_eval.py or a loop printing its progress lines, `env
  steps N/M ...`) runs from the repo root with its output in `log_path`.
  For each threshold in turn, at the first progress line at or past it
  (env steps; with `count_lines`, the line's number, the first line 1),
  `sample(pid)` is called on the command's process. The run is then
  stopped (its children and it killed). Exits naming the command if it
  ends or `timeout` seconds pass first.

  Returns:
    [(env steps of the line, line number, sample, time.monotonic())], one
    a threshold.
  """
  def lines_logged():
    with open(log_path) as f:
      return progress_steps(f.read())

  with open(log_path, 'w') as log:
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                               cwd=REPO_ROOT, env=environment)
  marks = []
  deadline = time.time() + timeout
  try:
    for threshold in thresholds:
      while True:
        logged = lines_logged()
        past = [number for number, steps in enumerate(logged, 1)
                if (number if count_lines else steps) >= threshold]
        if past:
          marks.append((logged[past[0] - 1], past[0], sample(process.pid),
                        time.monotonic()))
          break
        if process.poll() is not None or time.time() > deadline:
          unit = 'progress lines' if count_lines else 'env steps'
          with open(log_path) as f:
            sys.exit(f'{" ".join(command)} ended or timed out before '
                     f'{threshold} {unit}:\n{f.read()[-3000:]}')
        time.sleep(0.05)
  finally:
    subprocess.run(['pkill', '-KILL', '-P', str(process.pid)], check=False)
    process.kill()
    process.wait()
  return marks


def window(command, log_path, start, end, timeout, environment=None):
  """One run's steady window, from its progress lines.

  Runs `command` (train_eval.py or a loop printing its progress lines,
  `env steps N/M ...`) with its output in `log_path`. The window runs from
  the first line at or past `start` env steps to the first at or past
  `end`; the CPU seconds of the process and of its live children are read
  (psutil) when each of the two lines appears, and the run is then
  stopped (`progress_marks`). Returns (env steps per CPU-s of the process
  tree, env steps per s, CPU-ms per env step of the process, CPU-ms per
  env step of its children). Exits naming the command if it ends or
  `timeout` seconds pass first.
  """
  (steps0, _, (own0, children0), wall0), (steps1, _, (own1, children1),
                                         wall1) = progress_marks(
      command, log_path, (start, end), timeout, own_and_children_cpu_seconds,
      environment)
  steps = steps1 - steps0
  own, children = own1 - own0, children1 - children0
  return (steps / (own + children), steps / (wall1 - wall0),
          1000 * own / steps, 1000 * children / steps)


CLEANRL_SHIM = os.path.join(REPO_ROOT, 'benchmarks', 'cleanrl_shim.py')


def cleanrl_window(python, cleanrl_dir, script, script_args, start_line,
                   end_line, env_steps, timeout, one_thread=False):
  """A CleanRL script in its own process, timed between two "SPS:" lines.

  Runs `cleanrl/<script>` of the checkout `cleanrl_dir` through
  `cleanrl_shim.py` with `python` (a PyTorch environment) and
  `script_args`; the CPU seconds of its process tree and the wall time are
  read when its `start_line`-th and `end_line`-th "SPS:" lines arrive,
  which the caller knows to be `env_steps` env steps apart; then it is
  stopped. `one_thread`: torch's pools at one thread (`OMP_NUM_THREADS=1`,
  `MKL_NUM_THREADS=1`) instead of its default. Exits naming the command if
  it prints too few lines within `timeout` seconds.
  """
  import tempfile  # pylint: disable=g-import-not-at-top
  import psutil  # pylint: disable=g-import-not-at-top
  command = [python, '-u', CLEANRL_SHIM, f'--cleanrl_dir={cleanrl_dir}',
             f'--script={script}', '--'] + list(script_args)
  start = time.monotonic()
  with tempfile.TemporaryDirectory() as run_dir:  # its runs/ go here
    environment = dict(os.environ)
    if one_thread:
      environment.update(OMP_NUM_THREADS='1', MKL_NUM_THREADS='1')
    process = subprocess.Popen(command, cwd=run_dir, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True,
                               env=environment)
    lines, marks, tail, first_line = 0, [], [], None
    try:
      for line in process.stdout:
        tail = (tail + [line])[-40:]
        if not line.startswith('SPS:'):
          continue
        lines += 1
        if lines == 1:
          first_line = time.monotonic() - start
        if lines in (start_line, end_line):
          marks.append((tree_cpu_seconds(process.pid), time.monotonic()))
        if lines == end_line or time.monotonic() - start > timeout:
          break
    finally:
      for child in psutil.Process(process.pid).children(recursive=True):
        child.kill()
      process.kill()
      process.wait()
  if len(marks) < 2:
    sys.exit(f'{" ".join(command)} printed {lines} "SPS:" lines, '
             f'{end_line} needed:\n{"".join(tail)}')
  (cpu0, wall0), (cpu1, wall1) = marks
  return dict(env_steps=env_steps, tree_cpu_seconds=cpu1 - cpu0,
              wall_seconds=wall1 - wall0, first_line_seconds=first_line,
              steps_per_tree_cpu_second=env_steps / (cpu1 - cpu0),
              steps_per_second=env_steps / (wall1 - wall0))


def reaches(value, target):
  """`value >= target` for a float32 summary.

  Rates are logged as float32: 9 of 10 episodes is 0.8999999762, which
  counts as 0.9.
  """
  return value >= target - 1e-6


def read_scalars(directory):
  """{tag: [(step, wall_time, value)]} of the event files in `directory`.

  Sorted by step (a resumed run appends a second event file); text
  summaries such as `operative_config` are skipped. A missing directory
  gives {}.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  scalars = {}
  for path in sorted(glob.glob(os.path.join(directory, 'events.out.*'))):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        try:
          number = float(tf.make_ndarray(value.tensor))
        except (TypeError, ValueError):
          continue
        scalars.setdefault(value.tag, []).append(
            (event.step, event.wall_time, number))
  return {tag: sorted(points, key=lambda point: point[0])
          for tag, points in scalars.items()}


def train_eval_command(root_dir, gin_file, bindings=()):
  """The train/train_eval.py command line of one run."""
  return [sys.executable, TRAIN_EVAL, f'--root_dir={root_dir}',
          f'--gin_file={gin_file}'] + [
              f'--gin_bindings={binding}' for binding in bindings]


def run_logged(command, log_path, check=True):
  """Runs `command` from the repo root, output to `log_path`.

  Returns:
    (seconds, exit code).

  Raises:
    subprocess.CalledProcessError: if `check` and the command failed.
  """
  print(' '.join(command), flush=True)
  os.makedirs(os.path.dirname(os.path.abspath(log_path)), exist_ok=True)
  start = time.time()
  with open(log_path, 'w') as log:
    code = subprocess.call(command, stdout=log, stderr=subprocess.STDOUT,
                           cwd=REPO_ROOT)
  seconds = time.time() - start
  if check and code:
    raise subprocess.CalledProcessError(code, command)
  return seconds, code


def plot_eval_curves(curves, path, title, ylabel, target, budget,
                     ylim=None):
  """Draws greedy eval curves against env steps into the PNG `path`.

  Args:
    curves: {variant: {seed: [(env_step, value)]}}; one colour per variant
      (in this order, also the legend's), one thin line per seed. Runs
      without evals are left out.
    path: the PNG to write (its directory is created).
    title: figure title.
    ylabel: y-axis label (what the eval measures).
    target: value of the dashed horizontal target line.
    budget: env-step budget, a dotted vertical line.
    ylim: (bottom, top) of the y-axis, or None for matplotlib's choice.
  """
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')
  from matplotlib import pyplot  # pylint: disable=g-import-not-at-top
  figure, axes = pyplot.subplots(figsize=(8, 4.5))
  colours = pyplot.rcParams['axes.prop_cycle'].by_key()['color']
  for index, (variant, seeds) in enumerate(curves.items()):
    colour = colours[index % len(colours)]
    drawn = [seed for seed, points in seeds.items() if points]
    for seed in drawn:
      steps, values = zip(*seeds[seed])
      seed_list = ('seed ' if len(drawn) == 1 else 'seeds ') + ','.join(
          map(str, drawn))
      axes.plot(steps, values, color=colour, linewidth=1, alpha=0.8,
                label=f'{variant} ({seed_list})' if seed == drawn[0] else None)
  axes.axhline(target, color='grey', linestyle='--', linewidth=1,
               label=f'target {target:g}')
  axes.axvline(budget, color='grey', linestyle=':', linewidth=1)
  axes.set_xlabel('env steps')
  axes.set_ylabel(ylabel)
  if ylim is not None:
    axes.set_ylim(*ylim)
  axes.set_title(title)
  axes.legend(loc='best', fontsize='small')
  figure.tight_layout()
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  figure.savefig(path, dpi=80)
  pyplot.close(figure)
