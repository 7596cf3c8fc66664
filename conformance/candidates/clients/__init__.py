"""The official clients, driven through their own public API: `bullmq-py` in-process
(`bullmq_py`, its worker half in `bullmq_py_worker`), and finding and pinning an installed
`bullmq` package (`package`); `bullmq-node` through the bundled Node adapter (`bullmq_node`)."""
