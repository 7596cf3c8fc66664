"""A `--candidate` spec is parsed once, into one of the forms the help lists, each with a
builder (`conformance.candidates.spec`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.candidates import from_spec
from conformance.candidates.spec import BUILDERS, CandidateSpec
from conformance.core import candidate_forms as forms
from conformance.core.errors import UsageError
from conformance.core.options import CANDIDATE

LISTED = ("reference | scripts:DIR | command:'CMD ARGS' | bullmq-node | bullmq-py | bullmq-rust | "
          "port:NAME")


def test_every_form_has_a_builder_and_every_builder_a_form() -> None:
    assert list(BUILDERS) == list(forms.FORMS)


def test_the_help_and_the_error_list_the_forms() -> None:
    assert forms.USAGE == LISTED
    assert CANDIDATE.help == f"what to test: {LISTED}"
    with pytest.raises(UsageError) as caught:
        CandidateSpec.parse("nosuch")
    assert str(caught.value) == f"unknown candidate 'nosuch'; expected one of: {LISTED}"


@pytest.mark.parametrize(("text", "form", "argument"), [
    ("reference", forms.REFERENCE, ""),
    ("scripts:some/dir", forms.SCRIPTS, "some/dir"),
    ("scripts:a:b", forms.SCRIPTS, "a:b"),
    ("command:node adapter.js --x=1", forms.COMMAND, "node adapter.js --x=1"),
    ("command:", forms.COMMAND, ""),
    ("bullmq-node", forms.BULLMQ_NODE, ""),
    ("bullmq-py", forms.BULLMQ_PY, ""),
    ("bullmq-rust", forms.BULLMQ_RUST, ""),
    ("port:bullrs", forms.PORT, "bullrs"),
])
def test_a_spec_is_parsed_into_its_form_and_argument(text: str, form: forms.SpecForm,
                                                     argument: str) -> None:
    assert CandidateSpec.parse(text) == CandidateSpec(text, form, argument)


@pytest.mark.parametrize("text", ["", "scripts", "reference:x", "bullmq-py:3", "Reference",
                                  " reference"])
def test_what_is_no_form_is_refused(text: str) -> None:
    with pytest.raises(UsageError, match=r"^unknown candidate"):
        CandidateSpec.parse(text)


def test_a_scripts_path_expands_the_home_directory() -> None:
    assert CandidateSpec.parse("scripts:~/port").path == Path.home() / "port"


def test_from_spec_builds_the_form_named() -> None:
    assert from_spec("reference").name == "reference"
    assert from_spec("command:python adapter.py").name == "command:python adapter.py"
    with pytest.raises(UsageError, match=r"^command: needs a command line"):
        from_spec("command:")
