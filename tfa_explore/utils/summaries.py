"""The summaries the experiment loops write, named by area.

Tags (TensorBoard), all with the environment step count as x-axis unless
noted:

* `Metrics/AverageReturn`, `Metrics/AverageEpisodeLength` (train/: recent
  collect episodes; eval/: greedy evaluation episodes)
* `Metrics/EnvironmentSteps`, `Metrics/NumberOfEpisodes`,
  `Metrics/StepsPerSecond` (train/)
* `Metrics/TerminatedEpisodes` (cumulative episodes that ended by
  termination, discount 0: the flag, the goal) and
  `Metrics/TerminatedEpisodesPerIteration` (train/)
* `Exploration/<name>_{mean,max}` over the collect envs, for envs wrapped
  by `tfa_explore.environments.exploration` (train/)
* `Losses/total_loss` (train/, x-axis: the agent's train step, like the
  `Losses/*` TF-Agents agents write themselves)
* `operative_config` text (train/)
"""

from typing import Mapping

import gin
import tensorflow as tf

METRICS = 'Metrics'
LOSSES = 'Losses'
EXPLORATION = 'Exploration'


def scalars(area: str, values: Mapping[str, float], step) -> None:
  """Writes `area/name` scalars to the default summary writer."""
  for name, value in values.items():
    tf.summary.scalar(f'{area}/{name}', value, step=step)


def operative_config(writer: tf.summary.SummaryWriter, config_str: str,
                     step) -> None:
  """Writes gin's operative config as a TensorBoard text summary."""
  with writer.as_default():
    tf.summary.text('operative_config', gin.markdown(config_str), step=step)
  writer.flush()
