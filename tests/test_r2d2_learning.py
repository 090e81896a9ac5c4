"""R2D2 learns a memory task its feed-forward twin cannot (slow learning test).

`Recall-v0` (tfa_explore.testing.fake_envs) shows a cue at the first step
and asks for it at the fifth: remembering it returns 1, a policy without
memory at most 0.5 on average (the env charges for carrying the cue in the
actions, which both networks see as their previous action). The full single-machine pipeline (Reverb server,
two actor threads with stored recurrent state, prioritized sequence
replay, the learner) trains a small R2D2 for a fixed env-step budget with
a fixed seed and deterministic TF ops, each run in a fresh process (as
`train/train_eval.py` runs it), so nothing an earlier test ran in the
worker's process reaches it. Actor threads make the run nondeterministic
in its interleaving, so the thresholds leave a margin:
R2D2's final greedy return over 40 episodes must be >= 0.9, the
feed-forward twin's (`lstm_size = None`, same budget) <= 0.75. The eval
envs' cues are fixed by the seed (22 of the 40 are +1), and a policy
without memory gives one answer at the query, so the twin scores at most
0.55.
Times and returns measured on a 2-core CPU are in
benchmarks/results/r2d2/history_2026-11-23_stateless_cartpole.md ("Slow
learning test on Recall-v0").
"""

import multiprocessing
import os
import queue
import shutil
import tempfile
import time

from absl import logging
from absl.testing import absltest
import gin
import pytest
import tensorflow as tf

from tfa_explore import config

RECALL_GIN = """
import tfa_explore.agents.r2d2.config
import tfa_explore.environments.suite_gymnasium
import tfa_explore.experiments.r2d2
import tfa_explore.config.experiment
import tfa_explore.testing.fake_envs

NUM_ENV_STEPS = 6000
SEED = 0
run_experiment.experiment = @r2d2.train_eval
r2d2.Settings.env_loader = @suite_gymnasium.load
suite_gymnasium.load.env_id = 'tfa_explore_testing/Recall-v0'
suite_gymnasium.load.gym_kwargs = {'delay': 4}
r2d2.Settings.agent_fn = @r2d2.r2d2_agent_fn
r2d2.Settings.num_env_steps = %NUM_ENV_STEPS
r2d2.Settings.seed = %SEED
r2d2.Settings.num_actors = 2
r2d2.Settings.batch_size = 8
r2d2.Settings.replay_capacity = 2000
r2d2.Settings.samples_per_insert = 16.0
r2d2.Settings.min_size_to_sample = 32
r2d2.Settings.priority_exponent = 0.9
r2d2.Settings.eval_interval = 1000000
r2d2.Settings.num_eval_episodes = 40
r2d2.Settings.checkpoint_interval = 1000000
r2d2.Settings.log_interval = 1000
r2d2.Settings.summary_interval = 50
r2d2.Settings.train_steps_per_iteration = 10
r2d2.Settings.variable_push_period = 10
r2d2.Settings.actor_update_period = 50
r2d2.r2d2_agent_fn.sequence_config = @r2d2/SequenceConfig()
r2d2/SequenceConfig.burn_in_steps = 2
r2d2/SequenceConfig.trace_length = 6
r2d2/SequenceConfig.replay_period = 3
r2d2.r2d2_agent_fn.lstm_size = 16
r2d2.r2d2_agent_fn.torso_fc_layer_params = (16,)
r2d2.r2d2_agent_fn.dueling_fc_layer_params = (16,)
r2d2.r2d2_agent_fn.learning_rate = 1e-3
r2d2.r2d2_agent_fn.adam_epsilon = 1e-3
r2d2.r2d2_agent_fn.n_step = 2
r2d2.r2d2_agent_fn.gamma = 0.9
r2d2.r2d2_agent_fn.target_update_period = 100
r2d2.r2d2_agent_fn.importance_sampling_exponent = 0.6
r2d2.r2d2_agent_fn.priority_max_weight = 0.9
r2d2.r2d2_agent_fn.gradient_clipping = 40.0
"""


def train(bindings):
  """(final greedy eval return, env steps, seconds) of one run."""
  root_dir = tempfile.mkdtemp(prefix='tfa_explore_r2d2_recall_')
  gin_file = os.path.join(root_dir, 'recall.gin')
  with open(gin_file, 'w') as f:
    f.write(RECALL_GIN)
  try:
    gin.clear_config()
    start = time.time()
    result = config.run(os.path.join(root_dir, 'run'), [gin_file], bindings)
    return (float(result['AverageReturn']), int(result['EnvironmentSteps']),
            time.time() - start)
  finally:
    gin.clear_config()
    shutil.rmtree(root_dir, ignore_errors=True)


def _train_with_op_determinism(bindings, results):
  tf.config.experimental.enable_op_determinism()
  results.put(train(bindings))


def train_in_fresh_process(bindings, timeout_seconds=900):
  """`train(bindings)` in a spawned Python process.

  Raises:
    RuntimeError: the process ended without a result (its traceback is on
      stderr), so a crash fails the test at once, not at the timeout.
  """
  context = multiprocessing.get_context('spawn')
  results = context.Queue()
  process = context.Process(target=_train_with_op_determinism,
                            args=(bindings, results))
  process.start()
  deadline = time.time() + timeout_seconds
  try:
    while True:
      try:
        return results.get(timeout=5)
      except queue.Empty:
        if not process.is_alive():
          raise RuntimeError(
              f'the training process exited with code {process.exitcode} '
              'and no result') from None
        if time.time() > deadline:
          raise
  finally:
    process.join(timeout=60)


@pytest.mark.slow
@pytest.mark.timeout(1200)  # minutes-long by design; pytest.ini caps other tests at 900 s
class R2D2RecallLearningTest(absltest.TestCase):

  def test_r2d2_remembers_the_cue_and_its_feed_forward_twin_does_not(self):
    r2d2_return, r2d2_steps, r2d2_seconds = train_in_fresh_process([])
    ff_return, ff_steps, ff_seconds = train_in_fresh_process(
        ['r2d2.r2d2_agent_fn.lstm_size = None'])
    message = (f'Recall-v0: R2D2 {r2d2_return:.3f} after {r2d2_steps} env '
               f'steps ({r2d2_seconds:.0f} s), feed-forward {ff_return:.3f} '
               f'after {ff_steps} ({ff_seconds:.0f} s)')
    logging.info(message)
    print(message)
    self.assertLessEqual(r2d2_steps, 6000 + 100)
    self.assertGreaterEqual(r2d2_return, 0.9, message)
    self.assertLessEqual(ff_return, 0.75, message)


if __name__ == '__main__':
  absltest.main()
