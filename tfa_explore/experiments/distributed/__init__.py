"""What every distributed family shares: roles, actor pool, launchers.

A family (the R2D2 family, the on-policy loop on Reverb) declares its
three roles as a `roles.Roles` object; the launchers run any `Roles`:

* `launch.train_eval_on_one_machine`: the replay server in-process, the
  actors as threads or spawned processes (`actor_pool.ActorPool`,
  restarting dead ones), the learner in the calling thread;
* `launch.run_job`: one role per process (train/replay_server.py,
  learner.py, actor.py);
* `ray_launch.train_eval` (needs Ray; not imported by the package): the
  three roles as Ray actors that Ray restarts.

`variables.SharedVariables` carries the learner's weights to the actors
through a one-item Reverb table.
"""
