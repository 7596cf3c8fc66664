"""`bullmq-conformance adapter check CMD`: a protocol smoke test for adapter authors.

It starts the adapter against a throwaway Redis, sends `start`, one request of every op kind and
`stop`, and validates every reply against the bundled `schemas/adapter-protocol.schema.json`.
It checks the protocol only (shapes, seq numbers, result types), not the Redis state: that is
what `run` is for.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import secrets
import shlex
from typing import Any

from conformance import servers, snapshot
from conformance.candidates.base import QueueRef
from conformance.candidates.command import PROTOCOL_VERSION, Adapter
from conformance.errors import CandidateError, UsageError
from conformance.session import profile_for
from reference_impl.ops import (
    Add,
    ChangeDelay,
    ChangePriority,
    MoveToActive,
    MoveToDelayed,
    Op,
    Pause,
    Promote,
    Resume,
    op_to_dict,
)

T = 1_700_000_000_000

#: The smoke sequence: each op with the JSON type its result must have.
SMOKE: tuple[tuple[Op, type], ...] = (
    (Add("standard", T, {"n": 1}), str),
    (Add("delayed", T, {"n": 2}, {"delay": 5000}), str),
    (Add("prioritized", T, {"n": 3}, {"priority": 2}), str),
    (MoveToActive(T), dict),
    (Promote("2"), int),
    (ChangeDelay("404", 1000, T), int),
    (ChangePriority("3", 1), int),
    (MoveToDelayed("1", T + 10, 1000), int),
    (Pause(), int),
    (Resume(), int),
)


def _describe(reply: dict[str, Any]) -> str:
    if "result" in reply:
        return f"result {json.dumps(reply['result'])}"
    if reply.get("skipped"):
        return f"skipped: {reply['reason']}"
    return f"errored: {reply.get('message')}"


def main(args: argparse.Namespace) -> int:
    """`adapter check`: run the smoke sequence against `args.adapter_command`; print one line
    per exchange. Returns 0 when all replies are valid, 1 otherwise."""
    command, redis_spec = args.adapter_command, args.redis
    profile_name, timeout = args.profile, args.adapter_timeout
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"cannot parse adapter command {command!r}: {exc}") from None
    profile = profile_for(profile_name)
    queue = QueueRef(profile, f"bmqc-check-{secrets.token_hex(4)}")
    problems = 0
    with servers.provision(redis_spec) as info:
        print(f"adapter check: {command!r} against {info.kind} {info.engine} {info.version}, "
              f"profile {profile.name}, protocol {PROTOCOL_VERSION}")
        adapter = Adapter(argv)
        try:
            reply = adapter.request({"type": "start", "protocol": PROTOCOL_VERSION,
                                     "redis": info.url,
                                     "profile": {"name": profile.name, "prefix": profile.prefix,
                                                 "hash_tag": profile.hash_tag}}, timeout)
            if "implementation" not in reply:
                print(f"FAIL start: expected an implementation reply, got {json.dumps(reply)}")
                return 1
            print(f"ok   start: {json.dumps(reply['implementation'])}")
            for op, result_type in SMOKE:
                step = op_to_dict(op)
                reply = adapter.request({"type": "op", "queue": queue.name, "base": queue.base,
                                         "op": step}, timeout)
                fields = ", ".join(f"{k}={v}" for k, v in step.items() if k != "op")
                name = f"{step['op']}({fields})"
                if "result" in reply and not isinstance(reply["result"], result_type):
                    problems += 1
                    print(f"FAIL {name}: result should be a JSON "
                          f"{'string' if result_type is str else result_type.__name__}, "
                          f"got {json.dumps(reply['result'])}")
                else:
                    print(f"ok   {name}: {_describe(reply)}")
            reply = adapter.request({"type": "stop"}, timeout)
            print("ok   stop")
            adapter.proc.wait(timeout=timeout)
        except CandidateError as exc:
            problems += 1
            print(f"FAIL {exc}")
        finally:
            adapter.kill()
            with contextlib.suppress(Exception):
                snapshot.delete_queue(servers.client_for(info), queue)
    print("adapter check: all replies follow protocol 1" if not problems
          else f"adapter check: {problems} problem(s)")
    return 0 if not problems else 1
