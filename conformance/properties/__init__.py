"""The `properties` area: a random differential state machine run against the model and a
candidate. `check` runs it under Hypothesis (`check_candidate`) and judges; `machine` is the
state machine itself (one example: a fresh queue and model, each op applied to both); the rules
that draw the ops are the queue half's, the worker half's and the flows' (`queue_rules`,
`worker_rules`, `flow_rules`); `children` checks the properties items in child processes while
the vectors run, where that is safe."""
