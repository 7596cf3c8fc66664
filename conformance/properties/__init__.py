"""The `properties` area: a random differential state machine run against the model and a
candidate. `check` runs it (`check_candidate`) and judges; the rules of the queue half and of
the worker half are in `queue_rules` and `worker_rules`; `children` checks the properties items
in child processes while the vectors run, where that is safe."""
