"""The bundled JSON Schemas as validators, and the one way a validation error is worded.

Three documents are checked against a schema: vector files (`vector-file`), adapter replies
(`adapter-protocol`, its `reply` definition) and `--report-json` files (`report`). Each caller
reports the first problem as `at <json pointer>: <message>`, through `problem`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError, best_match

from conformance.core.resources import schema

#: A schema message is cut to this many characters: some quote a whole offending value.
MAX_MESSAGE = 200


@dataclass(frozen=True)
class Problem:
    """The first way a document breaks its schema (`error` is jsonschema's, for callers that
    locate the value in the document's text)."""

    path: tuple[str | int, ...]
    message: str
    error: ValidationError

    @property
    def pointer(self) -> str:
        """The offending value's place: `tests/3/when/0/op`, or `(top level)`."""
        return "/".join(str(part) for part in self.path) or "(top level)"

    def __str__(self) -> str:
        return f"at {self.pointer}: {self.message}"


def problem(validator: jsonschema.protocols.Validator, document: Any) -> Problem | None:
    """The most relevant error of `document` (jsonschema's best match), or None when valid."""
    error: ValidationError | None = best_match(validator.iter_errors(document))
    if error is None:
        return None
    message = error.message
    if len(message) > MAX_MESSAGE:
        message = message[:MAX_MESSAGE - 3] + "..."
    return Problem(tuple(error.absolute_path), message, error)


def _inline_refs(node: Any, defs: Mapping[str, Any]) -> Any:
    """Replace local `{"$ref": "#/$defs/x"}` with the definition (the schema is not recursive).

    Validation is three times faster without per-item reference resolution, and vector files
    hold tens of thousands of zset members.
    """
    if isinstance(node, dict):
        ref = node.get("$ref")
        annotations = set(node) <= {"$ref", "description", "$comment"}
        if isinstance(ref, str) and annotations and ref.startswith("#/$defs/"):
            return _inline_refs(defs[ref.removeprefix("#/$defs/")], defs)
        return {k: _inline_refs(v, defs) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_inline_refs(v, defs) for v in node]
    return node


@cache
def vector_file() -> jsonschema.protocols.Validator:
    """The validator of vector files, strict about integers."""
    document = schema("vector-file")
    cls = jsonschema.validators.validator_for(document)
    cls.check_schema(document)
    # JSON Schema counts 1700000000000.0 as an integer; a float where the protocol takes
    # milliseconds or a score is a mistake in a vector (and rounds past 2^53), so not here.
    strict = cls.TYPE_CHECKER.redefine(
        "integer", lambda _, value: isinstance(value, int) and not isinstance(value, bool))
    strict_cls = jsonschema.validators.extend(cls, type_checker=strict)  # type: ignore[no-untyped-call]
    validator: jsonschema.protocols.Validator = strict_cls(
        _inline_refs(document, document.get("$defs", {})))
    return validator


@cache
def adapter_reply() -> jsonschema.protocols.Validator:
    """The validator of one adapter reply (the protocol schema's `reply` definition)."""
    document = schema("adapter-protocol")
    reply = {"$schema": document["$schema"], "$defs": document["$defs"],
             "$ref": "#/$defs/reply"}
    return jsonschema.Draft202012Validator(reply)


@cache
def report() -> jsonschema.protocols.Validator:
    """The validator of `--report-json` documents."""
    document = schema("report")
    jsonschema.Draft202012Validator.check_schema(document)
    return jsonschema.Draft202012Validator(document)
