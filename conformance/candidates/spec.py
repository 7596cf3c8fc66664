"""A `--candidate` spec, parsed once into its form and argument, and the table that builds the
candidate each form names.

The forms themselves (names, and how the help shows them) are data in
`conformance.core.candidate_forms`, below the option table that writes the help from them;
this module gives each form its builder.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from conformance.candidates.adapter.command import CommandCandidate
from conformance.candidates.base import Candidate
from conformance.candidates.clients.bullmq_node import node_candidate
from conformance.candidates.clients.rust import BULLMQ_RUST, RUST_PORTS, rust_candidate
from conformance.candidates.scripts.candidate import ScriptsCandidate
from conformance.core import candidate_forms as forms
from conformance.core.candidate_forms import SpecForm
from conformance.core.errors import UsageError
from conformance.core.resources import lua_dir


@dataclass(frozen=True)
class CandidateSpec:
    """A candidate spec as given (`text`), with its form and its argument (the part after
    `name:`; empty for a form that takes none)."""

    text: str
    form: SpecForm
    argument: str = ""

    @classmethod
    def parse(cls, text: str) -> CandidateSpec:
        """The spec `text` names; a UsageError listing the forms for one it does not."""
        for form in forms.FORMS:
            if form.argument is None and text == form.name:
                return cls(text, form)
            if form.argument is not None and text.startswith(f"{form.name}:"):
                return cls(text, form, text.removeprefix(f"{form.name}:"))
        raise UsageError(f"unknown candidate {text!r}; expected one of: {forms.USAGE}")

    @property
    def path(self) -> Path:
        """The argument as a path (`scripts:DIR`), `~` expanded."""
        return Path(self.argument).expanduser()

    def build(self, timeout: float) -> Candidate:
        """The candidate this spec names, unstarted; `timeout` limits each op of an adapter
        and each script call of a scripts directory, in seconds."""
        return BUILDERS[self.form](self, timeout)


def _reference(spec: CandidateSpec, timeout: float) -> Candidate:
    return ScriptsCandidate(lua_dir(), label=forms.REFERENCE.name, limit=timeout)


def _scripts(spec: CandidateSpec, timeout: float) -> Candidate:
    directory = spec.path
    if not directory.is_dir():
        raise UsageError(f"--candidate {spec.text}: {directory} is not a directory")
    try:
        return ScriptsCandidate(directory.resolve(), limit=timeout)
    except UsageError as exc:  # it holds none of the scripts
        raise UsageError(f"--candidate {spec.text}: {exc}") from None


def _command(spec: CandidateSpec, timeout: float) -> Candidate:
    return CommandCandidate(spec.argument, timeout=timeout)


def _bullmq_node(spec: CandidateSpec, timeout: float) -> Candidate:
    return node_candidate(timeout)


def _bullmq_rust(spec: CandidateSpec, timeout: float) -> Candidate:
    return rust_candidate(BULLMQ_RUST, timeout)


def _port(spec: CandidateSpec, timeout: float) -> Candidate:
    adapter = RUST_PORTS.get(spec.argument)
    if adapter is None:
        raise UsageError(f"--candidate {spec.text}: no bundled adapter for the port "
                         f"{spec.argument!r}; the ports: {', '.join(sorted(RUST_PORTS))} "
                         "(any other runs as command:'CMD' with an adapter of its own)")
    return rust_candidate(adapter, timeout)


def _bullmq_py(spec: CandidateSpec, timeout: float) -> Candidate:
    # Imported only when asked for: it imports the bullmq package (and its redis client).
    from conformance.candidates.clients.bullmq_py import PythonClientCandidate

    return PythonClientCandidate()


#: What builds each form's candidate: one entry per form of `candidate_forms.FORMS`.
BUILDERS: Mapping[SpecForm, Callable[[CandidateSpec, float], Candidate]] = {
    forms.REFERENCE: _reference,
    forms.SCRIPTS: _scripts,
    forms.COMMAND: _command,
    forms.BULLMQ_NODE: _bullmq_node,
    forms.BULLMQ_PY: _bullmq_py,
    forms.BULLMQ_RUST: _bullmq_rust,
    forms.PORT: _port,
}
