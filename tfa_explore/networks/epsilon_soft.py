"""An epsilon-soft categorical policy head: no action's probability reaches 0.

The head's distribution is the mixture `(1 - epsilon) * softmax(logits) +
epsilon / num_actions` (Sutton & Barto 2018, section 5.4: an on-policy agent
with an epsilon-soft policy keeps trying every action). It is still the
policy's own distribution: PPO's ratios, entropy and KL terms see the mixture,
so the update stays on-policy.

Why a policy gradient agent needs it: PPO learns only from the actions it
samples. Once a softmax saturates at one cell (probability ~1e-4 for the other
action), no novelty behind the other action can reach the update, however
large the intrinsic value there would be. An entropy bonus prevents the
saturation too, but it pulls every state towards uniform, including those on
the walk the agent must commit to; the floor costs nothing until the policy
is nearly deterministic.
"""

import gin
import tensorflow as tf
from tf_agents.networks import categorical_projection_network

from tfa_explore import errors


@gin.configurable(module='networks', denylist=['sample_spec'])
class EpsilonSoftProjectionNetwork(
    categorical_projection_network.CategoricalProjectionNetwork):
  """`CategoricalProjectionNetwork` whose distribution mixes in uniform."""

  def __init__(self, sample_spec, epsilon: float = gin.REQUIRED,
               logits_init_output_factor: float = 0.1,
               name: str = 'EpsilonSoftProjectionNetwork'):
    """Creates the head.

    Args:
      sample_spec: A discrete `BoundedTensorSpec` of the actions.
      epsilon: Probability mass spread uniformly over the actions, in
        [0, 1): each action's probability is at least epsilon / num_actions.
      logits_init_output_factor: As `CategoricalProjectionNetwork`.
      name: Network name.

    Raises:
      ConfigError: epsilon is not a number in [0, 1).
    """
    with errors.values_of('networks.EpsilonSoftProjectionNetwork'):
      errors.check_number('epsilon', epsilon)
      if not 0.0 <= epsilon < 1.0:
        raise ValueError(f'epsilon must be in [0, 1), got {epsilon!r}.')
    super().__init__(sample_spec,
                     logits_init_output_factor=logits_init_output_factor,
                     name=name)
    self._epsilon = float(epsilon)

  def call(self, inputs, outer_rank, training=False, mask=None):
    distribution, state = super().call(inputs, outer_rank, training=training,
                                       mask=mask)
    log_policy = tf.nn.log_softmax(distribution.logits)
    valid = tf.ones_like(log_policy)
    if mask is not None:
      mask = tf.cast(mask, log_policy.dtype)
      if mask.shape.rank < log_policy.shape.rank:
        mask = tf.expand_dims(mask, -2)  # as the parent: (B, 1, A) actions
      valid = valid * mask
    uniform = valid / tf.reduce_sum(valid, axis=-1, keepdims=True)
    # log((1 - e) p + e u), computed from log p without leaving log space.
    mixed = tf.math.reduce_logsumexp(
        tf.stack([log_policy + tf.math.log1p(-self._epsilon),
                  tf.math.log(self._epsilon * uniform + 1e-30)]), axis=0)
    # Actions the mask rules out keep the parent's almost -inf logit.
    mixed = tf.where(valid > 0, mixed, distribution.logits)
    return self.output_spec.build_distribution(logits=mixed), state
