"""A complete bullmq-conformance adapter (docs/ADAPTERS.md). Usage: python_adapter.py SCRIPTS_DIR

SCRIPTS_DIR holds inlined BullMQ-convention Lua scripts `<name>-<numkeys>.lua`, such as the
PyPI bullmq package's `commands`. Each op calls one with the op's own time, never the clock."""

import json
import sys
import traceback
from functools import partial
from pathlib import Path

import msgpack
import redis

KEYS = {  # each script's KEYS, as queue key suffixes in order (PROTOCOL.md §7.2, §7.3)
    "addStandardJob": "wait paused meta id completed delayed active events marker",
    "addDelayedJob": "marker meta id delayed completed events",
    "addPrioritizedJob": "marker meta id prioritized delayed completed active events pc",
    "moveToActive": "wait active prioritized events stalled limiter delayed paused meta pc marker",
    "promote": "delayed wait paused meta prioritized active pc events marker",
    "changeDelay": "delayed meta marker events",
    "changePriority": "wait paused meta prioritized active pc marker",
}
IMPLEMENTATION = {"name": "python-scripts-example", "version": "1.0", "language": "python"}
pack = partial(msgpack.packb, use_bin_type=True)  # msgpack nil (None) is Lua nil


class Adapter:
    def __init__(self, scripts_dir: Path, redis_url: str, profile: dict):
        self.client = redis.Redis.from_url(redis_url, decode_responses=True)
        self.profile = profile
        self.scripts = {}  # register_script caches the SHA and reloads it on NOSCRIPT
        for name, keys in KEYS.items():
            text = (scripts_dir / f"{name}-{len(keys.split())}.lua").read_text(encoding="utf-8")
            self.scripts[name] = self.client.register_script(text)

    def base(self, queue: str) -> str:
        """BASE, the start of every key of `queue`: `bull:q:`, or `emq:{q}:` with hash_tag."""
        name = f"{{{queue}}}" if self.profile["hash_tag"] else queue
        return f"{self.profile['prefix']}:{name}:"

    def call(self, script: str, base: str, *args):
        keys = [base + suffix for suffix in KEYS[script].split()]
        return self.scripts[script](keys=keys, args=list(args))

    def apply(self, base: str, op: dict):
        if op["op"] == "add":  # Node's routing: delay > 0 wins, then a non-zero priority
            opts = op.get("opts", {})
            script = "addDelayedJob" if int(opts.get("delay") or 0) > 0 else \
                "addPrioritizedJob" if opts.get("priority") else "addStandardJob"
            job = [base, op.get("jobId") or "", op["name"], op["timestamp"]] + [None] * 5
            data = json.dumps(op.get("data", {}), separators=(",", ":"))
            reply = self.call(script, base, pack(job), data, pack(opts))
            return reply if isinstance(reply, int) and reply < 0 else str(reply)  # id or code
        if op["op"] == "moveToActive":  # replies [job hash, id or 0, ttl, next]
            lock = {"token": op.get("token", "tok"), "lockDuration": op.get("lockDuration", 30000)}
            _, job, ttl, next_ms = self.call("moveToActive", base, base, op["now"], pack(lock))
            return {"job": str(job) if job else None, "ttl": int(ttl), "next": int(next_ms)}
        if op["op"] == "promote":
            return self.call("promote", base, base, op["jobId"])
        if op["op"] == "changeDelay":  # ARGV 4 is the full job key, BASE + id
            args = (op["delay"], str(op["now"]), op["jobId"], base + op["jobId"])
            return self.call("changeDelay", base, *args)
        if op["op"] == "changePriority":
            lifo = "1" if op.get("lifo") else "0"
            return self.call("changePriority", base, op["priority"], base, op["jobId"], lifo)
        raise NotImplementedError(op["op"])


def main() -> None:
    scripts_dir, adapter = Path(sys.argv[1]), None
    out, sys.stdout = sys.stdout, sys.stderr  # stdout is for replies: stray prints go to stderr
    for line in sys.stdin:
        msg = json.loads(line)
        reply = {"seq": msg["seq"]}
        if msg["type"] == "start":
            adapter = Adapter(scripts_dir, msg["redis"], msg["profile"])
            reply["implementation"] = IMPLEMENTATION
        elif msg["type"] == "stop":
            adapter.client.close()
            reply["stopped"] = True
        elif (base := adapter.base(msg["queue"])) != msg["base"]:  # we must build the same keys
            reply.update(errored=True, message=f"built BASE {base!r}, suite sent {msg['base']!r}")
        else:
            try:
                reply["result"] = adapter.apply(base, msg["op"])
            except NotImplementedError as exc:
                reply.update(skipped=True, reason=f"this adapter has no {exc}")
            except Exception as exc:  # a script error (redis.ResponseError) or a malformed op
                reply.update(errored=True, message=f"{type(exc).__name__}: {exc}",
                             traceback=traceback.format_exc())
        print(json.dumps(reply), file=out, flush=True)
        if msg["type"] == "stop":
            return


if __name__ == "__main__":
    main()
