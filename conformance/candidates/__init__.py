"""Turn a `--candidate` spec into a Candidate (the forms and their builders: `spec`)."""

from __future__ import annotations

from conformance.candidates.base import Candidate
from conformance.candidates.spec import CandidateSpec
from conformance.core.options import ADAPTER_TIMEOUT_S


def from_spec(spec: str, timeout: float = ADAPTER_TIMEOUT_S) -> Candidate:
    """Build the candidate a `--candidate` spec names (`conformance.core.candidate_forms`):
    `reference` is our lua/ scripts; `scripts:DIR` any directory of BullMQ-convention scripts;
    `command:CMD` an adapter process (docs/ADAPTERS.md); `bullmq-node` and `bullmq-py` the
    official Node and Python clients. A UsageError (one line) for a spec of no form, or a
    candidate that cannot be built."""
    return CandidateSpec.parse(spec).build(timeout)
