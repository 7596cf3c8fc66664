"""Strict YAML for vector files: JSON-compatible YAML only, with the line of every test.

Duplicate keys, anchors and aliases, merge keys, non-string keys, dates, sets, binary, .nan,
.inf and integers beyond a double's range are errors. A parse error becomes one `VectorError`
line: `file:line: id: message`, with the id of the test it happened in where that can be told.

Before the file is composed, `too_deep` reads its event stream for collections nested deeper
than `MAX_DEPTH`: the composers recurse once per level (libyaml's overflows an 8 MB C stack,
a segfault, between 20,000 and 25,000 levels; PyYAML's raises RecursionError near 500), while
the parsers that produce the events keep an explicit stack.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import yaml

from conformance.core.errors import VectorError

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_JSON_ONLY = "vector files are JSON-compatible YAML"

#: The deepest nesting of mappings and sequences a vector file may have. The bundled vectors
#: reach 11 (tests, a test, expect, keys, a key, hash, opts, json, and job data), so this
#: leaves room for deep job data while staying far from either composer's recursion limit.
MAX_DEPTH = 64
_OPENS = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSES = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


def too_deep(text: str, limit: int = MAX_DEPTH, loader: type[Any] | None = None) -> int | None:
    """The 1-based line of the first collection nested deeper than `limit`, or None.

    `loader` is the class that will compose the text (the fastest safe loader by default).
    Only its events are read, one at a time, stopping at that collection (or at the parser's
    own depth limit, where it has one). Any other syntax error ends the scan with None:
    composing stops at the same error, with no deeper nesting before it, and reports it with
    its context.
    """
    depth = 0
    parser: Any = (loader or _Loader)(text)
    try:
        while parser.check_event():
            event = parser.get_event()
            if isinstance(event, _OPENS):
                depth += 1
                if depth > limit:
                    mark = event.start_mark
                    return (mark.line if mark is not None else 0) + 1
            elif isinstance(event, _CLOSES):
                depth -= 1
    except yaml.YAMLError as exc:
        # PyYAML 6.0.4 and later stop deep flow nesting themselves, in the scanner, which reads
        # ahead of the events: the same fault, told the same way.
        if "maximum nesting depth" in str(getattr(exc, "problem", "")):
            mark = getattr(exc, "problem_mark", None)
            return (mark.line if mark is not None else 0) + 1
        return None
    finally:
        parser.dispose()
    return None


def nesting_message(limit: int = MAX_DEPTH) -> str:
    """What a file nested deeper than `limit` is told."""
    return f"mappings and sequences nested more than {limit} deep"


class _Rejected(Exception):
    """A construct that YAML allows but a vector file must not hold (duplicate key, alias...)."""

    def __init__(self, mark: Any, message: str):
        self.line: int = mark.line + 1
        self.index: int = mark.index
        super().__init__(message)


class _VectorLoader(_Loader):  # type: ignore[misc, valid-type]
    """The safe loader, restricted to what JSON can hold.

    PyYAML silently keeps the last of two equal keys, shares aliased nodes, and builds dates,
    sets, bytes and non-string keys; none of them survives a trip through JSON, and a port
    reading the vectors as JSON would see different data.
    """

    def _child(self, node: yaml.Node, deep: bool) -> Any:
        # A node is constructed once; meeting it again means an alias refers to it (the alias
        # itself has no mark, so the anchored node's line is the one reported).
        if node in self.constructed_objects or node in self.recursive_objects:
            raise _Rejected(node.start_mark, f"anchors and aliases are not allowed: {_JSON_ONLY}")
        return self.construct_object(node, deep=deep)

    def construct_sequence(self, node: yaml.Node, deep: bool = False) -> list[Any]:
        if not isinstance(node, yaml.SequenceNode):
            return super().construct_sequence(node, deep)  # type: ignore[no-any-return]
        return [self._child(child, deep) for child in node.value]

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        if not isinstance(node, yaml.MappingNode):
            return super().construct_mapping(node, deep)  # type: ignore[no-any-return]
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise _Rejected(key_node.start_mark,
                                f"merge keys (<<) are not allowed: {_JSON_ONLY}")
            key = self._child(key_node, deep)
            if not isinstance(key, str):
                shown = repr(key) if isinstance(key_node, yaml.ScalarNode) else "a collection"
                raise _Rejected(key_node.start_mark,
                                f"mapping key {shown} is not a string: quote it")
            if key in mapping:
                first = next(k for k, _ in node.value if self.constructed_objects.get(k) == key)
                raise _Rejected(key_node.start_mark, f"duplicate key {key!r} "
                                                     f"(first at line {first.start_mark.line + 1})")
            mapping[key] = self._child(value_node, deep)
        return mapping

    def construct_json_int(self, node: yaml.Node) -> int:
        """An integer, but not one beyond a double's range: no JSON reader holds it, and past
        4300 digits Python will not even read it."""
        try:
            value: int = self.construct_yaml_int(node)
            float(value)
        except (ValueError, OverflowError):
            shown = node.value if len(node.value) <= 24 else node.value[:20] + "..."
            raise _Rejected(node.start_mark, f"integer {shown} ({len(node.value)} characters) "
                                             "is beyond the range of a JSON number") from None
        return value

    def construct_finite_float(self, node: yaml.Node) -> float:
        """A float, but not .nan or .inf, which JSON cannot write."""
        value: float = self.construct_yaml_float(node)
        if not math.isfinite(value):
            raise _Rejected(node.start_mark, f"{node.value} is not a JSON number")
        return value

    def construct_not_json(self, node: yaml.Node) -> Any:
        """Reject a YAML type JSON has no counterpart for."""
        kind = node.tag.rsplit(":", 1)[-1]
        if kind == "timestamp":
            raise _Rejected(node.start_mark, f"{node.value} is a YAML timestamp, not JSON: "
                                             "quote it")
        raise _Rejected(node.start_mark, f"!!{kind} values are not JSON")


_VectorLoader.add_constructor("tag:yaml.org,2002:int", _VectorLoader.construct_json_int)
_VectorLoader.add_constructor("tag:yaml.org,2002:float", _VectorLoader.construct_finite_float)
for _tag in ("timestamp", "binary", "set", "omap", "pairs"):
    _VectorLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _VectorLoader.construct_not_json)



_ID_LINE = re.compile(r"""- id: *(['"]?)([^'"\s#]+)\1 *(#.*)?$""")


def _id_before(text: str, line: int) -> str | None:
    """The id of the test whose block holds `line`, read from the text (None outside tests)."""
    found, in_tests = None, False
    for row in text.splitlines()[:line]:
        if row[:1] not in ("", " ", "\t", "#", "-") or row.startswith(("---", "...")):
            in_tests, found = row.startswith("tests:"), None
        elif in_tests and (match := _ID_LINE.match(row)):
            found = match.group(2)
    return found


_Span = tuple[int, int, str | None]


def _test_spans(node: yaml.MappingNode) -> tuple[list[int], list[_Span]]:
    """The line of each entry of `tests`, and its character span and id (to name the vector
    around an error found while constructing)."""
    lines: list[int] = []
    spans: list[_Span] = []
    for key, value in node.value:
        if key.value == "tests" and isinstance(value, yaml.SequenceNode):
            for item in value.value:
                lines.append(item.start_mark.line + 1)
                test_id = None
                if isinstance(item, yaml.MappingNode):
                    test_id = next((v.value for k, v in item.value
                                    if k.value == "id" and isinstance(v, yaml.ScalarNode)), None)
                spans.append((item.start_mark.index, item.end_mark.index, test_id))
    return lines, spans


def _id_at(index: int, spans: list[_Span]) -> str | None:
    return next((test_id for start, end, test_id in spans if start <= index < end), None)


# libyaml reports a bad character's position in bytes of the UTF-8 text, PyYAML in characters.
_BYTE_POSITIONS = _Loader is not yaml.SafeLoader


def compose(path: Path, raw: bytes) -> tuple[str, Any, list[int], dict[str, int]]:
    """Parse YAML: the text, the data, the 1-based line of each entry of `tests`, and the line
    of each top-level key."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        near = _id_before(raw.decode("utf-8", "replace"), line)
        raise VectorError(f"vector file is not UTF-8 (byte 0x{raw[exc.start]:02x})",
                          f"{path}:{line}", near) from None
    deep = too_deep(text)
    if deep is not None:
        raise VectorError(nesting_message(), f"{path}:{deep}", _id_before(text, deep))
    loader = _VectorLoader(text)
    spans: list[_Span] | None = None
    try:
        node = loader.get_single_node()
        if node is None:
            raise VectorError("vector file is empty", str(path))
        if not isinstance(node, yaml.MappingNode):
            kind = "a list" if isinstance(node, yaml.SequenceNode) else "a scalar"
            raise VectorError(f"the top level is {kind}, not a mapping of header fields and "
                              "tests", f"{path}:{node.start_mark.line + 1}")
        lines, spans = _test_spans(node)
        header_lines = {k.value: k.start_mark.line + 1 for k, _ in node.value
                        if isinstance(k, yaml.ScalarNode)}
        data = loader.construct_document(node)
    except _Rejected as exc:
        near = _id_at(exc.index, spans or [])
        raise VectorError(str(exc), f"{path}:{exc.line}", near) from None
    except yaml.YAMLError as exc:
        raise _yaml_error(path, text, exc, spans) from None
    finally:
        loader.dispose()
    return text, data, lines, header_lines


def _yaml_error(path: Path, text: str, exc: yaml.YAMLError,
                spans: list[_Span] | None) -> VectorError:
    """One line for a YAML error: where the parser stopped, what it was parsing, which test."""
    mark = getattr(exc, "problem_mark", None)
    line, index = (mark.line + 1, mark.index) if mark else (None, None)
    position = getattr(exc, "position", None)
    if mark is None and isinstance(position, int):  # a bad character: no mark, a position
        before = text.encode("utf-8")[:position].decode("utf-8", "replace") \
            if _BYTE_POSITIONS else text[:position]
        line, index = before.count("\n") + 1, len(before)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context, context_mark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    if context and context_mark and context_mark.line + 1 != line:
        problem += f" ({context} at line {context_mark.line + 1})"
    elif context:
        problem += f" ({context})"
    near = None
    if line is not None and index is not None:
        near = _id_at(index, spans) if spans is not None else _id_before(text, line)
    return VectorError(f"invalid YAML: {problem}", f"{path}:{line}" if line else str(path), near)



#: The fastest safe YAML loader available (libyaml's when built with it).
Loader = _Loader
