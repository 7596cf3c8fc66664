"""The ARGV layouts and op-to-script table the spec prints agree with the calls the `scripts:`
candidate makes: the newest range of every fact is replayed through it on the reference Lua,
and each script call is checked against `script_args` (its ARGV count) and against
`OP_SCRIPTS` (the op that made it)."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.candidates.scripts import args
from conformance.candidates.scripts.candidate import LAYOUTS, ScriptsCandidate
from conformance.core.queues import QueueNames
from conformance.core.resources import lua_dir
from conformance.run.serial import run_vector
from conformance.run.spec import profile_for
from conformance.servers import ServerInfo, client_for
from conformance.vectors import Vector
from reference_impl import versions
from reference_impl.ops import OP_NAMES, op_to_dict


def test_every_script_has_an_argv_layout_and_every_op_its_scripts() -> None:
    assert set(args.ARGV) == set(LAYOUTS)
    assert set(args.OP_SCRIPTS) == set(OP_NAMES)
    assert {s for names in args.OP_SCRIPTS.values() for s in names} == set(LAYOUTS)
    for script, entries in args.ARGV.items():
        optional = [e.endswith(args.OPTIONAL) for e in entries]
        assert optional == sorted(optional), f"{script}: an optional entry before a required one"


def test_calls_match_the_layouts(every_vector: list[Vector], redis_server: ServerInfo,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    current: list[str] = []
    calls: list[tuple[str, str, int]] = []
    real_apply, real_call = ScriptsCandidate.apply, ScriptsCandidate._call

    def apply(self: ScriptsCandidate, client: Any, queue: Any, op: Any) -> Any:
        current[:] = [op_to_dict(op)["op"]]
        return real_apply(self, client, queue, op)

    def call(self: ScriptsCandidate, client: Any, queue: Any, name: str, args: list[Any],
             *rest: Any, **kw: Any) -> Any:
        calls.append((current[0], name, len(args)))
        return real_call(self, client, queue, name, args, *rest, **kw)

    real_flow_calls = ScriptsCandidate.flow_calls

    def flow_calls(self: ScriptsCandidate, queue: Any, op: Any) -> Any:
        planned = real_flow_calls(self, queue, op)  # addFlow's calls share one pipeline
        calls.extend(("addFlow", call.name, len(call.args)) for call in planned)
        return planned

    monkeypatch.setattr(ScriptsCandidate, "apply", apply)
    monkeypatch.setattr(ScriptsCandidate, "_call", call)
    monkeypatch.setattr(ScriptsCandidate, "flow_calls", flow_calls)
    candidate = ScriptsCandidate(lua_dir())
    client = client_for(redis_server)
    names = QueueNames()
    # The newest range of every fact: the current protocol's, and (at the start of their
    # range) the facts of the 5.x ops 6.0.0 removed, which our Lua has too.
    for vector in (v for v in every_vector if not v.older):
        protocol = versions.CURRENT if vector.span.until is None else vector.span.since
        verdict = run_vector(vector, candidate, client, profile_for("bullmq"), names,
                             protocol=protocol)
        assert verdict.outcome in ("passed", "skipped"), (vector.id, verdict.message)
    problems = []
    for op, script, count in calls:
        low, high = args.argv_counts(script)
        if script not in args.OP_SCRIPTS[op] or not low <= count <= high:
            problems.append(f"{op} called {script} with {count} ARGV (layout: {low}-{high})")
    assert sorted(set(problems)) == []
    assert {script for _, script, _ in calls} == set(LAYOUTS), "a script no vector calls"
