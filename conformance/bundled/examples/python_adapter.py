"""A complete bullmq-conformance adapter (docs/ADAPTERS.md). Usage: python_adapter.py SCRIPTS_DIR
SCRIPTS_DIR holds inlined `<name>-<numkeys>.lua` scripts, such as PyPI bullmq's `commands`. It
speaks adapter protocol 1 (its start reply has no "protocol"): worker-half vectors are skipped."""

import json
import sys
import traceback
from pathlib import Path

import redis
from msgpack import packb  # msgpack nil (None) is Lua nil

KEYS = {  # each script's KEYS, as queue key suffixes in order (RESEARCH.md §7.2, §7.3)
    "addStandardJob": "wait paused meta id completed delayed active events marker",
    "addDelayedJob": "marker meta id delayed completed events",
    "addPrioritizedJob": "marker meta id prioritized delayed completed active events pc",
    "moveToActive": "wait active prioritized events stalled limiter delayed paused meta pc marker",
    "promote": "delayed wait paused meta prioritized active pc events marker",
    "changeDelay": "delayed meta marker events",
    "changePriority": "wait paused meta prioritized active pc marker",
    "moveToDelayed": "marker active prioritized delayed {job} events meta stalled wait limiter pc",
    "pause": "{src} {dst} meta prioritized events delayed marker",  # {...}: filled in by call()
}
IMPLEMENTATION = {"name": "python-scripts-example", "version": "1.0", "language": "python"}


class Adapter:  # each op calls one script, with the op's own time, never the clock
    def __init__(self, scripts_dir: Path, redis_url: str, profile: dict):
        self.client = redis.Redis.from_url(redis_url, decode_responses=True)
        self.profile = profile
        self.scripts = {}  # register_script caches the SHA and reloads it on NOSCRIPT
        for name, keys in KEYS.items():
            text = (scripts_dir / f"{name}-{len(keys.split())}.lua").read_text(encoding="utf-8")
            self.scripts[name] = self.client.register_script(text)

    def base(self, queue: str) -> str:  # BASE starts every key: `bull:q:`, or `emq:{q}:`
        name = f"{{{queue}}}" if self.profile["hash_tag"] else queue
        return f"{self.profile['prefix']}:{name}:"

    def call(self, script: str, base: str, *args, **names):
        keys = [base + suffix.format(**names) for suffix in KEYS[script].split()]
        return self.scripts[script](keys=keys, args=list(args))

    def apply(self, base: str, op: dict):
        jid = op.get("jobId") or ""
        if op["op"] == "add":  # Node's routing: delay > 0 wins, then a non-zero priority
            opts = op.get("opts", {})
            script = "addDelayedJob" if int(opts.get("delay") or 0) > 0 else \
                "addPrioritizedJob" if opts.get("priority") else "addStandardJob"
            job = [base, jid, op["name"], op["timestamp"]] + [None] * 5
            data = json.dumps(op.get("data", {}), separators=(",", ":"))
            reply = self.call(script, base, packb(job), data, packb(opts))
            return reply if isinstance(reply, int) and reply < 0 else str(reply)  # id or code
        if op["op"] == "moveToActive":  # replies [job hash, id or 0, ttl, next]
            lock = {"token": op.get("token", "tok"), "lockDuration": op.get("lockDuration", 30000)}
            _, job, ttl, next_ms = self.call("moveToActive", base, base, op["now"], packb(lock))
            return {"job": str(job) if job else None, "ttl": int(ttl), "next": int(next_ms)}
        if op["op"] == "promote":
            return self.call("promote", base, base, jid)
        if op["op"] == "changeDelay":  # ARGV 2 is now as a string (like Node), ARGV 4 the job key
            return self.call("changeDelay", base, op["delay"], str(op["now"]), jid, base + jid)
        if op["op"] == "changePriority":  # flags go as 1 / 0, like Node (ARGV arrive as strings)
            return self.call("changePriority", base, op["priority"], base, jid, int(op["lifo"]))
        if op["op"] == "moveToDelayed":  # KEYS 5 is the job's key; ARGV 7-8: no fields, no fetch
            args = (op["now"], jid, op["token"], op["delay"], int(op["skipAttempt"]))
            return self.call("moveToDelayed", base, base, *args, "", "0", job=jid)
        if op["op"] in ("pause", "resume"):  # resume moves a legacy `paused` list back to wait
            src, dst = ("wait", "paused") if op["op"] == "pause" else ("paused", "wait")
            return self.call("pause", base, op["op"] + "d", src=src, dst=dst)  # paused|resumed
        raise NotImplementedError(op["op"])


def main() -> None:
    out, sys.stdout = sys.stdout, sys.stderr  # stdout is for replies: stray prints go to stderr
    for msg in map(json.loads, sys.stdin):
        reply = {"seq": msg["seq"]}
        if msg["type"] == "start":
            adapter = Adapter(Path(sys.argv[1]), msg["redis"], msg["profile"])
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
