"""`bullmq-conformance diff`: the same ops against two candidates, first state difference.

Each vector's `given` is seeded into two fresh queues, one per candidate; after every op both
queues are snapshotted and candidate B's state is compared with candidate A's, under the same
rules as the vectors (exact scores, stream ids ignored, JSON compared parsed, and the documented
client differences tolerated: meta.version, client defaults in job opts).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
from fractions import Fraction
from typing import Any

from conformance import servers
from conformance.candidates import from_spec
from conformance.candidates.base import Candidate
from conformance.core.errors import CandidateError, CandidateSkipped, UsageError
from conformance.core.queues import QueueNames, QueueRef
from conformance.run import binding
from conformance.run.spec import profile_for, protocol_version
from conformance.run.verdict import seed
from conformance.state import compare, snapshot
from conformance.vectors import Vector, iter_vectors, load_dir
from reference_impl import versions
from reference_impl.expected import client_meta
from reference_impl.form import score_to_form
from reference_impl.ops import Op, op_to_dict
from reference_impl.versions import Version


def _json(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _hash_rule(field: str, value_a: str, value_b: str | None) -> Any:
    parsed_a = _json(value_a)
    if field == "opts" and isinstance(parsed_a, dict):
        parsed_b = _json(value_b) if value_b is not None else None
        common = {k: v for k, v in parsed_a.items()
                  if not isinstance(parsed_b, dict) or k in parsed_b}
        return {"json_includes": common}
    if field in ("data", "opts", "parent") and parsed_a is not None:
        return {"json": parsed_a}
    return value_a


def expectation_from(a: snapshot.Snapshot, b: snapshot.Snapshot) -> dict[str, Any]:
    """Candidate A's state as the expectation that candidate B is compared with."""
    out: dict[str, Any] = {}
    for suffix, entry in a.keys.items():
        kind, body = next(iter(entry.items()))
        other = b.keys.get(suffix, {}).get(kind)
        if kind == "zset":
            out[suffix] = {"zset": {m: score_to_form(Fraction(float(s))) for m, s in body}}
        elif kind == "string" and isinstance(body, dict):
            pttl_b = other["pttl"] if isinstance(other, dict) else 0
            out[suffix] = {"string": {"value": body["value"],
                                      "pttl": max(body["pttl"], pttl_b, 1)}}
        elif kind == "hash":
            fields_b = other if isinstance(other, dict) else {}
            out[suffix] = {"hash": {f: _hash_rule(f, v, fields_b.get(f)) for f, v in body.items()}}
        else:
            out[suffix] = entry
    out["meta"] = client_meta(out.get("meta"))
    return out


def _apply(candidate: Candidate, client: Any, queue: QueueRef, op: Op) -> Any:
    try:
        return candidate.apply(client, queue, op)
    except CandidateError as exc:
        return f"<errored: {exc}>"
    except CandidateSkipped as exc:
        return f"<skipped: {exc.reason}>"


def _first_difference(vector: Vector, a: Candidate, b: Candidate, client: Any,
                      names: QueueNames, profile_name: str, protocol: Version) -> list[str]:
    profile = profile_for(profile_name)
    # A flow across queues runs in two queues on each side.
    qa = binding.fresh_queues(vector, profile, names, protocol)
    qb = binding.fresh_queues(vector, profile, names, protocol)
    try:
        va, vb = binding.bound(vector, qa), binding.bound(vector, qb)
        seed(client, qa[0], dict(va.given), others=qa[1:])
        seed(client, qb[0], dict(vb.given), others=qb[1:])
        steps = zip(vector.when, va.when, vb.when, binding.op_queues(vector, qa),
                    binding.op_queues(vector, qb), strict=True)
        for index, (op, op_a, op_b, on_a, on_b) in enumerate(steps, 1):
            ra, rb = _apply(a, client, on_a, op_a), _apply(b, client, on_b, op_b)
            ra, rb = binding.unbound(ra, qa[0], qa[1:]), binding.unbound(rb, qb[0], qb[1:])
            lines = [] if ra == rb else [f"return: A {ra!r}, B {rb!r}"]
            sa, sb = _state(client, qa), _state(client, qb)
            lines += compare.compare_keys(expectation_from(sa, sb), sb.keys)
            lines = [line.replace("expected", "A").replace("actual", "B") for line in lines]
            if lines:
                return [f"{vector.id} ({vector.where}), after op {index}: "
                        f"{json.dumps(op_to_dict(op))}", *("  " + line for line in lines)]
        return []
    finally:
        for queue in (*qa, *qb):
            snapshot.delete_queue(client, queue)


def _state(client: Any, queues: tuple[QueueRef, ...]) -> snapshot.Snapshot:
    """What a side's queues hold, as a vector names it (`<q>`, `<q2>:<suffix>`)."""
    first, *others = queues
    snap = snapshot.merged(snapshot.take(client, first),
                           [(snapshot.take(client, other), other) for other in others])
    return binding.unbound_snapshot(snap, first, others)


def main(args: argparse.Namespace) -> int:
    """Compare two candidates vector by vector; 0 when they never differ, 1 otherwise."""
    if len(args.candidate) != 2:
        raise UsageError("diff needs exactly two --candidate options")
    a, b = (from_spec(spec, args.adapter_timeout) for spec in args.candidate)
    protocol = protocol_version(args.protocol) or versions.CURRENT
    # one vector per fact: the ops of the other ranges' variants are the same
    vectors = [v for v in iter_vectors(load_dir(args.vectors))
               if v.profile in (None, args.profile) and v.span.holds(protocol)
               and (not args.keyword or fnmatch.fnmatchcase(v.id, args.keyword))]
    if not vectors:
        raise UsageError("no vectors selected")
    with servers.provision(args.redis) as info:
        client = servers.client_for(info)
        profile = profile_for(args.profile)
        for candidate in (a, b):
            candidate.start(info.url, profile)
        try:
            print(f"diff: A = {a.name}, B = {b.name}, {len(vectors)} vectors, "
                  f"redis {info.kind} {info.engine} {info.version}")
            names = QueueNames()
            for vector in vectors:
                lines = _first_difference(vector, a, b, client, names, args.profile, protocol)
                if lines:
                    print("first difference:")
                    print("\n".join(lines))
                    return 1
        finally:
            a.close()
            b.close()
    print(f"no difference in {len(vectors)} vectors")
    return 0
