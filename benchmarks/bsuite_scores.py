"""bsuite_sweep.py's scoring: bsuite's analysis of the runs, and its report.

The runs' bsuite CSV logs gathered per agent (ours written from their
journals first); bsuite's score of each agent and experiment; bsuite's
plots as PNGs; and scores.md (the table, its notes, the command line that
made it) and scores.csv.
"""

import glob
import importlib
import inspect
import logging
import os
import shlex
import shutil
import time
from typing import Dict, Optional, Sequence
import warnings

import bsuite_runs  # benchmarks/bsuite_runs.py, next to this module.
import common  # benchmarks/common.py, next to this module.

CSV_DIR = 'csv'  # under <work_dir>/<agent>: what bsuite's csv_load reads


def collect_csvs(agent: bsuite_runs.Agent, bsuite_ids: Sequence[str],
                 work_dir: str,
                 num_episodes: Optional[int] = None) -> Dict[str, str]:
  """Copies the agent's bsuite CSV logs to <work_dir>/<agent>/csv/.

  Our runs' CSVs are (re)written from their journals first, so a run that
  was killed is scored on what it logged; with a budget note, cut at
  `num_episodes` as the reference agents stop there (our envs end a few
  episodes more in the iteration that reaches it).

  Returns:
    {bsuite id: CSV path} of the ids with a log.
  """
  found = {}
  for bsuite_id in bsuite_ids:
    directory = bsuite_runs.run_dir(work_dir, agent, bsuite_id)
    if not os.path.isdir(directory):
      continue
    if agent.is_reference:
      path = os.path.join(directory, bsuite_runs.csv_name(bsuite_id))
    else:
      bsuite_journal = bsuite_runs.bsuite_journal_module()
      bsuite_journal.write_csv(directory, num_episodes)
      path = bsuite_journal.csv_path(directory, bsuite_id)
    if os.path.isfile(path):
      found[bsuite_id] = path
  csv_dir = os.path.join(work_dir, agent.name, CSV_DIR)
  os.makedirs(csv_dir, exist_ok=True)
  # Only this sweep's ids: bsuite's loader reads every CSV in the folder.
  for stale in glob.glob(os.path.join(csv_dir, '*.csv')):
    os.remove(stale)
  for path in found.values():
    shutil.copyfile(path, os.path.join(csv_dir, os.path.basename(path)))
  return found


def _costs(agent: bsuite_runs.Agent, bsuite_ids: Sequence[str], work_dir: str):
  """(ids finished, of them ended when solved, CPU s, wall s) of all attempts."""
  done, solved, cpu, wall = 0, 0, 0.0, 0.0
  for bsuite_id in bsuite_ids:
    directory = bsuite_runs.run_dir(work_dir, agent, bsuite_id)
    record = bsuite_runs.read_done(directory)
    done += record is not None
    solved += record is not None and 'solved_at_episode' in record
    for attempt in bsuite_runs.read_attempts(directory):
      cpu += attempt['cpu_seconds']
      wall += attempt['wall_seconds']
  return done, solved, cpu, wall


def _patch_matplotlib_for_plotnine() -> None:
  """Gives plotnine 0.12 the matplotlib function it imports for facets.

  plotnine 0.12 is the last release for pandas 1 (bsuite's analysis needs
  pandas 1); it imports `matplotlib.text._get_textbox`, which our
  matplotlib no longer has: without it every faceted plot (all of bsuite's)
  fails. `Text._get_layout` now returns the same box as its third item.
  """
  from matplotlib import text  # pylint: disable=g-import-not-at-top
  if hasattr(text, '_get_textbox'):
    return

  def _get_textbox(artist, renderer):
    _, _, ((x, y), (width, height)) = artist._get_layout(renderer)  # pylint: disable=protected-access
    return x, y, width, height

  text._get_textbox = _get_textbox  # pylint: disable=protected-access


def experiment_plots(experiment: str):
  """[(name, function, takes find_solution's frame)] of bsuite's analysis.

  Every `plot_*` of `bsuite.experiments.<experiment>.analysis`, its own or
  one it takes from another experiment's (deep_sea_stochastic's scaling
  and regret plots are deep_sea's). Each takes (df, sweep_vars), except
  those whose first argument is `plt_df` (deep_sea's scaling plots), which
  take this experiment's `find_solution(df, sweep_vars)`.
  """
  module = importlib.import_module(f'bsuite.experiments.{experiment}.analysis')
  plots = []
  for name, function in inspect.getmembers(module, inspect.isfunction):
    if not name.startswith('plot_'):
      continue
    first = next(iter(inspect.signature(function).parameters))
    plots.append((name[len('plot_'):], function, first == 'plt_df'))
  return module, plots


def save_plots(df, score_df, sweep_vars, experiments: Sequence[str],
               out_dir: str):
  """bsuite's plots as PNGs in out_dir.

  A plot that fails is reported and skipped: the table is already written.

  Returns:
    (the file names saved, {file name or experiment: why it was not
    drawn}) for scores.md.
  """
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')
  # absl shows INFO records; matplotlib's (font sizes clamped while plotnine
  # lays out legends) say nothing about the results.
  logging.getLogger('matplotlib').setLevel(logging.WARNING)
  _patch_matplotlib_for_plotnine()
  from bsuite.experiments import summary_analysis  # pylint: disable=g-import-not-at-top
  saved, not_drawn = [], {}

  def save(file_name, make):
    path = os.path.join(out_dir, file_name)
    if os.path.exists(path):
      os.remove(path)  # not an earlier sweep's plot in place of a failed one
    try:
      make().save(path, verbose=False)
      saved.append(file_name)
    except Exception as e:  # pylint: disable=broad-except
      reason = f'{type(e).__name__}: {_first_line(e)}'
      not_drawn[file_name] = reason
      print(f'plot {file_name} failed: {reason}', flush=True)

  if score_df['agent_name'].nunique() > 1:
    save('bsuite_bar_plot_compare.png',
         lambda: summary_analysis.bsuite_bar_plot_compare(score_df,
                                                          sweep_vars))
  else:
    save('bsuite_bar_plot.png',
         lambda: summary_analysis.bsuite_bar_plot(score_df, sweep_vars))
  for experiment in experiments:
    experiment_df = df[df.bsuite_env == experiment]
    if experiment_df.empty:
      continue
    try:
      module, plots = experiment_plots(experiment)
    except ImportError as e:
      not_drawn[f'plots of {experiment}'] = f'no analysis module ({e})'
      print(f'plots of {experiment}: no analysis module ({e})', flush=True)
      continue
    for name, function, wants_solution in plots:
      if wants_solution:
        make = (lambda function=function: function(
            module.find_solution(experiment_df, sweep_vars), sweep_vars))
      else:
        make = (lambda function=function: function(experiment_df,
                                                   sweep_vars))
      save(f'{experiment}_{name}.png', make)
  return saved, not_drawn


def _first_line(error: BaseException, limit: int = 160) -> str:
  lines = str(error).strip().splitlines()
  line = lines[0] if lines else repr(error)
  return line if len(line) <= limit else line[:limit - 3] + '...'


def _episodes(values: Sequence[int]) -> str:
  if not values:
    return '-'
  low, high = min(values), max(values)
  return f'{low:,}' if low == high else f'{low:,} to {high:,}'


def score(agents: Sequence[bsuite_runs.Agent], bsuite_ids: Sequence[str],
          work_dir: str, out_dir: str, num_episodes: Optional[int],
          command_line: str) -> Optional[str]:
  """Scores every agent with bsuite's analysis; writes out_dir's files.

  Returns:
    The markdown of scores.md, or None if no agent has a CSV log yet.
  """
  import pandas as pd  # pylint: disable=g-import-not-at-top
  from bsuite.experiments import summary_analysis  # pylint: disable=g-import-not-at-top
  from bsuite.logging import csv_load  # pylint: disable=g-import-not-at-top

  logged = {agent.name: collect_csvs(agent, bsuite_ids, work_dir,
                                     num_episodes)
            for agent in agents}
  results_dirs = {agent.name: os.path.join(work_dir, agent.name, CSV_DIR)
                  for agent in agents if logged[agent.name]}
  if not results_dirs:
    return None
  experiments = list(dict.fromkeys(i.partition('/')[0] for i in bsuite_ids))
  with warnings.catch_warnings():
    # bsuite's analysis runs on pandas 1 with calls pandas 2 removed
    # (Series.append): FutureWarnings by the dozen, nothing to act on.
    warnings.simplefilter('ignore', FutureWarning)
    warnings.simplefilter('ignore', DeprecationWarning)
    df, sweep_vars = csv_load.load_bsuite(results_dirs)
    score_df = summary_analysis.bsuite_score(df, sweep_vars)
    # bsuite drops groupby's level_* columns only if its input had them.
    score_df = score_df.drop(
        columns=[c for c in score_df.columns if c.startswith('level_')])

    rows = []
    # {agent: {experiment: (ids finished, ids logged)}}: what each
    # experiment's score is over.
    id_counts = {agent.name: _id_counts(agent, bsuite_ids, work_dir,
                                        logged[agent.name])
                 for agent in agents}
    for agent in agents:
      done, solved, cpu, wall = _costs(agent, bsuite_ids, work_dir)
      counts = [int(count) for count in df[df.agent_name == agent.name]
                .groupby('bsuite_id')['episode'].max()]
      row = {'agent': agent.name, 'config': agent.describe(),
             'reference': agent.is_reference}
      agent_scores = score_df[score_df.agent_name == agent.name]
      for experiment in experiments:
        match = agent_scores[agent_scores.bsuite_env == experiment]
        row[experiment] = (float(match.score.iloc[0]) if len(match) else None)
        row[f'{experiment} finished'] = (bool(match.finished.iloc[0])
                                         if len(match) else None)
      row.update(ids_requested=len(bsuite_ids), ids_done=done,
                 ids_ended_solved=solved,
                 ids_logged=len(logged[agent.name]),
                 episodes_min=min(counts) if counts else None,
                 episodes_max=max(counts) if counts else None,
                 cpu_hours=cpu / 3600, wall_hours=wall / 3600)
      rows.append(row)

    os.makedirs(out_dir, exist_ok=True)
    pd.DataFrame(rows).to_csv(os.path.join(out_dir, 'scores.csv'),
                              index=False)
    markdown = _markdown(rows, experiments, id_counts, num_episodes,
                         command_line)
    with open(os.path.join(out_dir, 'scores.md'), 'w') as f:
      f.write(markdown)
    warnings.simplefilter('ignore', UserWarning)  # plotnine's advice
    plots, not_drawn = save_plots(df, score_df, sweep_vars, experiments,
                                  out_dir)
  if plots or not_drawn:
    markdown += '\n'
  if plots:
    markdown += f'Plots (bsuite\'s own): {", ".join(plots)}\n'
  if not_drawn:
    markdown += 'Plots not drawn: ' + '; '.join(
        f'{name} ({reason})' for name, reason in not_drawn.items()) + '\n'
  with open(os.path.join(out_dir, 'scores.md'), 'w') as f:
    f.write(markdown)
  return markdown


def _id_counts(agent: bsuite_runs.Agent, bsuite_ids: Sequence[str],
               work_dir: str, logged: Dict[str, str]) -> Dict[str, tuple]:
  """{experiment: (ids finished, ids logged)} of the agent's runs.

  An experiment's score is over the ids logged, finished or not.
  """
  counts = {}
  for bsuite_id in bsuite_ids:
    experiment = bsuite_id.partition('/')[0]
    finished, count = counts.get(experiment, (0, 0))
    if bsuite_id in logged:
      count += 1
      finished += bsuite_runs.read_done(
          bsuite_runs.run_dir(work_dir, agent, bsuite_id)) is not None
    counts[experiment] = (finished, count)
  return counts


def _ids_scored(experiment: str, counts: Dict[str, tuple],
                total: int) -> str:
  """"deep_sea: 11 finished of bsuite's 21", per agent if they differ."""
  def ids(finished, logged):
    unfinished = logged - finished
    return f'{finished} finished' + (f' and {unfinished} unfinished'
                                     if unfinished else '')
  texts = {agent: ids(*by_experiment[experiment])
           for agent, by_experiment in counts.items()}
  if len(set(texts.values())) == 1:
    return f'{experiment}: {next(iter(texts.values()))} of bsuite\'s {total}'
  return (f'{experiment}, of bsuite\'s {total}: '
          + ', '.join(f'{agent} {text}' for agent, text in texts.items()))


def _markdown(rows, experiments, id_counts, num_episodes,
              command_line) -> str:
  header = (['agent'] + experiments +
            ['ids run', 'episodes per id', 'CPU-hours', 'wall-hours',
             'config'])
  lines = ['| ' + ' | '.join(header) + ' |',
           '|' + '---|' * len(header)]
  unfinished = False
  for row in rows:
    cells = [row['agent'] + (' (bsuite)' if row['reference'] else '')]
    for experiment in experiments:
      value = row[experiment]
      if value is None:
        cells.append('-')
        continue
      star = '' if row[f'{experiment} finished'] else '*'
      unfinished = unfinished or bool(star)
      cells.append(f'{value:.2f}{star}')
    ids = f'{row["ids_done"]}/{row["ids_requested"]}'
    if row['ids_logged'] > row['ids_done']:
      ids += f' (+{row["ids_logged"] - row["ids_done"]} unfinished)'
    counts = [c for c in (row['episodes_min'], row['episodes_max'])
              if c is not None]
    cells += [ids, _episodes(counts), f'{row["cpu_hours"]:.3g}',
              f'{row["wall_hours"]:.3g}', f'`{row["config"]}`']
    lines.append('| ' + ' | '.join(cells) + ' |')

  totals = {e: len(ids) for e, ids in bsuite_runs.sweep_ids().items()}
  notes = [
      '',
      'Scores: bsuite\'s own (`summary_analysis.bsuite_score` on the CSV '
      'logs), in [0, 1]; an experiment\'s score is over the ids each agent '
      'logged (' + '; '.join(_ids_scored(e, id_counts, totals[e])
                             for e in experiments) + ').',
      'ids run: finished runs / ids asked. episodes per id: the fewest and '
      'most episodes logged. CPU- and wall-hours: all attempts of the '
      'agent\'s runs (CPU: the process and the children it waited for).',
  ]
  below = [e for e in experiments
           if num_episodes and num_episodes < bsuite_runs.episode_budget(e)]
  if below:
    notes.append(
        f'Budget: --num_episodes={num_episodes:,} episodes per id, below '
        'bsuite\'s for ' + ', '.join(
            f'{e} ({bsuite_runs.episode_budget(e):,})' for e in below)
        + ': a trial, not a bsuite result.')
  stopped = [f'{row["agent"]} {row["ids_ended_solved"]}' for row in rows
             if row['ids_ended_solved']]
  if stopped:
    notes.append(
        'Ended when solved (--stop_when_solved), ids per agent: '
        + ', '.join(stopped) + '. bsuite\'s analysis scores an id by the '
        'first logged episode below its threshold and counts a solved id as '
        'finished: the scores are those of the full budget; episodes per id '
        'counts the episodes run.')
  if unfinished:
    notes.append('`*`: not every id reached bsuite\'s episode count '
                 '(bsuite\'s `finished` flag is false).')
  notes.append('One seed per bsuite id: bsuite\'s protocol (the settings of '
               'an experiment are its repetitions).')
  notes += [
      '',
      f'Command: `{command_line}`',
      f'Commit: {common.commit_description()}; date: '
      f'{bsuite_runs.utc(time.time())}.',
  ]
  return '\n'.join(lines + notes) + '\n'


def recorded_command(argv: Sequence[str], cwd: str) -> str:
  """The sweep's command, to be run again from `cwd`, the folder it ran in.

  scores.md is shared, so no path in it is absolute: the script and every
  absolute path in a flag (a gin file outside the checkout, --work_dir)
  are written relative to `cwd`.
  """
  def relative(path):
    return os.path.relpath(path, cwd) if os.path.isabs(path) else path

  def rewrite(arg):
    name, equals, value = arg.partition('=')
    if not (equals and name.startswith('-')):
      return relative(arg)
    if name.lstrip('-') == 'agent':  # --agent=NAME=GIN_FILE
      agent, equals, gin_file = value.partition('=')
      if equals:
        return f'{name}={agent}={relative(gin_file)}'
    return f'{name}={relative(value)}'

  script = os.path.relpath(os.path.abspath(argv[0]), cwd)
  return shlex.join(['python', script] + [rewrite(arg) for arg in argv[1:]])
