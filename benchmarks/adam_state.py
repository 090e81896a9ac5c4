r"""How Adam's epsilon compares with the gradients of an R2D2/R2D3 run.

  python benchmarks/adam_state.py --run_dir=runs/r2d2_benchmark/batched_actors_seed0 \
      [--checkpoint=ckpt-200166]

Restores the run's agent with its optimizer slots (`r2d2_rollouts`) and
prints, per trainable variable, the bias-corrected RMS gradient
sqrt(v_hat) that Adam divides by (median and 90th percentile over the
variable's entries) and the share of entries where it is below Adam's
epsilon, i.e. where epsilon, not the gradient scale, sets the step size
(update = lr m_hat / (sqrt(v_hat) + epsilon)). Used in
benchmarks/results/r2d2/history_2026-11-23_stateless_cartpole.md and
benchmarks/results/bsuite/history_2026-11-27_memory_len.md.
"""

from absl import app
import numpy as np

import r2d2_rollouts

# --run_dir and --checkpoint are r2d2_rollouts' flags.
RUN_DIR = r2d2_rollouts.RUN_DIR
CHECKPOINT = r2d2_rollouts.CHECKPOINT


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  agent, env = r2d2_rollouts.restore_run(
      RUN_DIR.value, CHECKPOINT.value, with_optimizer=True)
  env.close()
  optimizer = agent.optimizer
  # Keras names Adam's second moment of variable `x:0` 'v/x:0'.
  velocities = {slot.name: slot for slot in optimizer.variables}
  steps = int(optimizer.iterations.numpy())
  epsilon = float(optimizer.epsilon)
  correction = 1.0 - float(optimizer.beta_2) ** steps
  print(f'{steps} Adam steps, epsilon {epsilon:g}')
  below, total = 0, 0
  for var in agent.q_network.trainable_variables:
    slot = velocities[f'v/{var.name}']
    rms = np.sqrt(slot.numpy() / correction).ravel()
    below += int(np.sum(rms < epsilon))
    total += rms.size
    print(f'{var.name:60s} {str(tuple(var.shape)):12s} sqrt(v_hat) median '
          f'{np.median(rms):.1e} p90 {np.percentile(rms, 90):.1e}, below '
          f'epsilon {np.mean(rms < epsilon):.0%}')
  print(f'all {total} parameters: sqrt(v_hat) below epsilon for '
        f'{below / total:.0%}')


if __name__ == '__main__':
  app.run(main)
