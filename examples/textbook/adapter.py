#!/usr/bin/env python3
"""The textbook Redis delayed queue, as a bullmq-conformance adapter (docs/ADAPTERS.md).

THIS IS AN EXAMPLE OF A NON-CONFORMING DESIGN. It exists so that the suite can show, vector by
vector, where the classic pattern (RESEARCH.md §10) and BullMQ 6.x disagree. Do not copy it
into a port.

What it keeps from BullMQ, so that the failures isolate the design differences:
  - the key names (`<BASE>delayed`, `wait`, `active`, `prioritized`, `pc`, `id`, `meta`,
    `events`, `<BASE><id>`, `<BASE><id>:lock`);
  - the job hash (name, data, opts, timestamp, delay, priority), the id counter, duplicate
    custom ids, `meta opts.maxLenEvents`, and the events (`added`, `delayed`, `waiting`,
    `duplicated`, `active`);
  - fetch order (wait before prioritized), lifo for plain jobs, the activation writes (lock,
    processedOn, ats) and the paused / concurrency check of a fetch.

What it takes from the textbook (the numbers):
  - delayed score    = the raw fire time F = timestamp + delay, in ms (no *4096, no band bump);
  - priority score   = tier * 2^32 + arrival, arrival = INCR pc (no mod 2^32, pc never reset);
  - due sweep        = ZRANGEBYSCORE delayed -inf now LIMIT 0 10, then one ZREM per job (the
                       worker that gets reply 1 owns the job);
  - next wake        = the head score as it is;
  - no wake-up marker: the textbook worker sleeps until the head score, so nothing is written
                       to `<BASE>marker` (BullMQ's "0" and "1" members never exist here).

Standard library and redis-py only. Every op is a sequence of plain commands, not a script:
the textbook pattern relies on ZREM's reply, not on atomicity, to settle claim races.
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any

import redis

PRIORITY_SHIFT = 2**32  # tier in the high 32 bits, arrival in the low 32 bits
POLL_BATCH = 10  # the textbook's LIMIT 0 10
DEFAULT_MAX_EVENTS = 10000


class Queue:
    """The keys of one queue, under the BASE the suite sends."""

    def __init__(self, r: redis.Redis, base: str) -> None:
        self.r = r
        self.base = base

    def key(self, suffix: str) -> str:
        return self.base + suffix

    def job(self, job_id: str) -> str:
        return self.base + job_id

    # -- bookkeeping kept from BullMQ -----------------------------------------------------

    def max_events(self) -> int:
        """meta opts.maxLenEvents, written with BullMQ's default the first time."""
        cap = self.r.hget(self.key("meta"), "opts.maxLenEvents")
        if cap is None:
            self.r.hset(self.key("meta"), "opts.maxLenEvents", DEFAULT_MAX_EVENTS)
            return DEFAULT_MAX_EVENTS
        return int(cap)

    def event(self, *fields: Any, trimmed: bool = True) -> None:
        pairs = dict(zip(fields[::2], fields[1::2], strict=True))
        if trimmed:
            self.r.xadd(self.key("events"), pairs, maxlen=self.max_events(), approximate=True)
        else:
            self.r.xadd(self.key("events"), pairs)

    def paused_or_maxed(self) -> bool:
        paused, concurrency = self.r.hmget(self.key("meta"), "paused", "concurrency")
        if paused is not None:
            return True
        return concurrency is not None and self.r.llen(self.key("active")) >= int(concurrency)

    # -- textbook numbers -----------------------------------------------------------------

    def priority_score(self, tier: int) -> int:
        """Textbook: tier * 2^32 + arrival, with the raw counter (no mod, never reset)."""
        return tier * PRIORITY_SHIFT + self.r.incr(self.key("pc"))

    def make_ready(self, job_id: str) -> None:
        """A claimed or promoted delayed job: LPUSH wait, or into its priority tier."""
        tier = int(self.r.hget(self.job(job_id), "priority") or 0)
        if tier == 0:
            self.r.lpush(self.key("wait"), job_id)
        else:
            self.r.zadd(self.key("prioritized"), {job_id: self.priority_score(tier)})
        self.event("event", "waiting", "jobId", job_id, "prev", "delayed", trimmed=False)
        self.r.hset(self.job(job_id), "delay", 0)

    # -- ops ------------------------------------------------------------------------------

    def add(self, op: dict[str, Any]) -> str:
        opts = op.get("opts") or {}
        counter = self.r.incr(self.key("id"))
        self.max_events()  # BullMQ writes the meta default before the duplicate check
        job_id = op.get("jobId") or str(counter)
        if op.get("jobId") and self.r.exists(self.job(job_id)):
            self.event("event", "duplicated", "jobId", job_id)
            return job_id
        delay = opts.get("delay") or 0
        priority = opts.get("priority") or 0
        self.r.hset(self.job(job_id), mapping={
            "name": op["name"],
            "data": json.dumps(op.get("data"), separators=(",", ":")),
            "opts": json.dumps(opts, separators=(",", ":")),
            "timestamp": op["timestamp"],
            "delay": delay,
            "priority": priority,
        })
        self.event("event", "added", "jobId", job_id, "name", op["name"], trimmed=False)
        if delay > 0:
            fire = op["timestamp"] + delay
            self.r.zadd(self.key("delayed"), {job_id: fire})  # textbook: raw fire time
            self.event("event", "delayed", "jobId", job_id, "delay", fire)
        else:
            if priority:
                self.r.zadd(self.key("prioritized"), {job_id: self.priority_score(priority)})
            elif opts.get("lifo"):
                self.r.rpush(self.key("wait"), job_id)
            else:
                self.r.lpush(self.key("wait"), job_id)
            self.event("event", "waiting", "jobId", job_id)
        return job_id

    def move_to_active(self, op: dict[str, Any]) -> dict[str, Any]:
        now = op["now"]
        blocked = self.paused_or_maxed()
        # Textbook poll and claim: at most 10 due jobs, ZREM one by one; reply 1 = ours.
        due = self.r.zrangebyscore(self.key("delayed"), "-inf", now, start=0, num=POLL_BATCH)
        for job_id in due:
            if self.r.zrem(self.key("delayed"), job_id) == 1:
                self.make_ready(job_id)
        if blocked:
            return {"job": None, "ttl": 0, "next": 0}
        job_id = self.r.rpoplpush(self.key("wait"), self.key("active"))
        if job_id is None:
            popped = self.r.zpopmin(self.key("prioritized"))
            if popped:
                job_id = popped[0][0]
                self.r.lpush(self.key("active"), job_id)
        if job_id is None:
            head = self.r.zrange(self.key("delayed"), 0, 0, withscores=True)
            return {"job": None, "ttl": 0, "next": int(head[0][1]) if head else 0}
        if op["token"] != "0":
            self.r.set(self.job(job_id) + ":lock", op["token"], px=op["lockDuration"])
        self.event("event", "active", "jobId", job_id, "prev", "waiting", trimmed=False)
        self.r.hset(self.job(job_id), "processedOn", now)
        self.r.hincrby(self.job(job_id), "ats", 1)
        return {"job": job_id, "ttl": 0, "next": 0}

    def promote(self, op: dict[str, Any]) -> int:
        if self.r.zrem(self.key("delayed"), op["jobId"]) != 1:
            return -3
        self.make_ready(op["jobId"])
        return 0

    def change_delay(self, op: dict[str, Any]) -> int:
        job_id = op["jobId"]
        if not self.r.exists(self.job(job_id)):
            return -1
        if self.r.zscore(self.key("delayed"), job_id) is None:
            return -3
        fire = op["now"] + op["delay"]  # textbook retry: re-add with the raw new fire time
        self.r.hset(self.job(job_id), "delay", op["delay"])
        self.r.zadd(self.key("delayed"), {job_id: fire})
        self.event("event", "delayed", "jobId", job_id, "delay", fire)
        return 0

    def change_priority(self, op: dict[str, Any]) -> int:
        job_id, tier, lifo = op["jobId"], op["priority"], op.get("lifo", False)
        if not self.r.exists(self.job(job_id)):
            return -1
        ready = (self.r.zrem(self.key("prioritized"), job_id) > 0
                 or self.r.lrem(self.key("wait"), -1, job_id) > 0)
        if ready:
            if tier == 0:
                (self.r.rpush if lifo else self.r.lpush)(self.key("wait"), job_id)
            elif lifo:
                self.r.zadd(self.key("prioritized"), {job_id: tier * PRIORITY_SHIFT})
            else:
                self.r.zadd(self.key("prioritized"), {job_id: self.priority_score(tier)})
        self.r.hset(self.job(job_id), "priority", tier)
        return 0


OPS = {
    "add": Queue.add,
    "moveToActive": Queue.move_to_active,
    "promote": Queue.promote,
    "changeDelay": Queue.change_delay,
    "changePriority": Queue.change_priority,
}
#: Ops the textbook pattern has no equivalent for: replied to as `skipped`, with the reason.
UNSUPPORTED = {
    "moveToDelayed": "the textbook delayed queue has no worker-side moveToDelayed: a retry "
                     "there is a fresh ZADD of the raw fire time (as its changeDelay does), with "
                     "no lock check, no attempt counter and no move out of `active`",
    "pause": "the textbook delayed queue has no pause operation (it only honours a "
             "`meta paused` that something else wrote)",
    "resume": "the textbook delayed queue has no resume operation (it has no pause)",
}


def main() -> None:
    r: redis.Redis | None = None
    for line in sys.stdin:
        request = json.loads(line)
        seq, kind = request["seq"], request["type"]
        if kind == "start":
            r = redis.Redis.from_url(request["redis"], decode_responses=True)
            reply: dict[str, Any] = {"implementation": {
                "name": "textbook-delayed-queue", "version": "0.1.0", "language": "python"}}
        elif kind == "stop":
            if r is not None:
                r.close()
            print(json.dumps({"seq": seq, "stopped": True}), flush=True)
            return
        else:
            assert r is not None, "op before start"
            op = request["op"]
            try:
                if op["op"] in UNSUPPORTED:
                    reply = {"skipped": True, "reason": UNSUPPORTED[op["op"]]}
                else:
                    reply = {"result": OPS[op["op"]](Queue(r, request["base"]), op)}
            except Exception as exc:
                reply = {"errored": True, "message": f"{type(exc).__name__}: {exc}",
                         "traceback": traceback.format_exc()}
        print(json.dumps({"seq": seq, **reply}), flush=True)


if __name__ == "__main__":
    main()
