"""`reference` and `scripts:DIR`: a directory of Lua scripts in BullMQ's calling convention,
called directly. `candidate` is the candidate; `args` builds each script's KEYS and ARGV per
protocol version, `worker_calls` the worker half's; `includes` expands `--- @include`; `call`
limits each script call and kills a runaway script."""
