"""The stock TF-Agents recurrent DQN of an R2D2 gin file: the peer's agent.

No absl flags here, so any benchmark script can import it beside its own
(`stock_recurrent_dqn.py` runs it; `r2d2_speed.py --measure=learner` times
its train step beside ours). Reads the gin file's `r2d2.r2d2_agent_fn`
values, so gin must already be parsed.
"""

import common  # benchmarks/common.py, next to this module.

EPSILON = 0.4  # R2D2's most random actor slot.


def agent_setting(name):
  """A bound value of `r2d2.r2d2_agent_fn`, macros evaluated."""
  return common.gin_value(f'r2d2.r2d2_agent_fn.{name}')


def recurrent_dqn_agent(time_step_spec, action_spec, train_step):
  """`DqnAgent` + `QRnnNetwork` of the gin file's sizes and optimiser.

  The torso, LSTM and head sizes, Adam's learning rate and epsilon, gamma,
  target period and gradient clipping are the gin file's; the TD loss is
  Huber, as R2D2's. Initialised.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tf_agents.agents.dqn import dqn_agent  # pylint: disable=g-import-not-at-top
  from tf_agents.networks import q_rnn_network  # pylint: disable=g-import-not-at-top
  from tf_agents.utils import common as tfa_common  # pylint: disable=g-import-not-at-top
  q_network = q_rnn_network.QRnnNetwork(
      time_step_spec.observation, action_spec,
      input_fc_layer_params=tuple(agent_setting('torso_fc_layer_params')),
      lstm_size=(agent_setting('lstm_size'),),
      output_fc_layer_params=tuple(agent_setting('dueling_fc_layer_params')))
  agent = dqn_agent.DqnAgent(
      time_step_spec, action_spec,
      q_network=q_network,
      optimizer=tf.keras.optimizers.Adam(
          learning_rate=agent_setting('learning_rate'),
          epsilon=agent_setting('adam_epsilon')),
      epsilon_greedy=EPSILON,
      target_update_period=agent_setting('target_update_period'),
      gamma=agent_setting('gamma'),
      gradient_clipping=agent_setting('gradient_clipping'),
      td_errors_loss_fn=tfa_common.element_wise_huber_loss,
      train_step_counter=train_step)
  agent.initialize()
  return agent
