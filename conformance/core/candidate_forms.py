"""The forms a `--candidate` spec takes, as plain data: each form's name and how the help
shows it.

They are here, below every other folder, so that the option table (`conformance.core.options`)
writes the `--candidate` help from them; `conformance.candidates.spec` parses a spec into one of
them and builds the candidate it names.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SpecForm:
    """One form of a candidate spec: `name` alone, or `name:ARGUMENT` when it takes an argument
    (`argument` is how the help shows it)."""

    name: str
    argument: str | None = None

    @property
    def usage(self) -> str:
        """The form as the help and the errors name it: `reference`, `scripts:DIR`."""
        return self.name if self.argument is None else f"{self.name}:{self.argument}"


#: Our own Lua scripts (`lua/`): the suite's baseline.
REFERENCE = SpecForm("reference")
#: Any directory of BullMQ-convention scripts.
SCRIPTS = SpecForm("scripts", "DIR")
#: An adapter process speaking the JSON-lines protocol (docs/ADAPTERS.md).
COMMAND = SpecForm("command", "'CMD ARGS'")
#: The official npm client, through the bundled Node adapter.
BULLMQ_NODE = SpecForm("bullmq-node")
#: The official PyPI client, in-process.
BULLMQ_PY = SpecForm("bullmq-py")

#: The official Rust SDK (crate `bullmq-official`), through the bundled Rust adapter.
BULLMQ_RUST = SpecForm("bullmq-rust")
#: A community port with a bundled adapter (`port:bullrs`, `port:bullmq-rs`).
PORT = SpecForm("port", "NAME")

#: Every form, in the order the help lists them.
FORMS = (REFERENCE, SCRIPTS, COMMAND, BULLMQ_NODE, BULLMQ_PY, BULLMQ_RUST, PORT)
#: The forms as one line of the help: `reference | scripts:DIR | ...`.
USAGE = " | ".join(form.usage for form in FORMS)
