"""`python -m conformance <subcommand> ...`: the same as the `bullmq-conformance` command."""

import sys

from conformance.cli import main

sys.exit(main())
