"""A deliberately faulty adapter for the suite's robustness tests.

Usage: faulty.py MODE, where MODE says how it misbehaves on the first op it sees:
garbage (a non-JSON line), crash (exit 3), hang (sleep), badseq (wrong seq), schema (a reply
that is JSON but not the protocol), skip (a valid skipped reply), errored (a valid errored
reply), non-utf8 (a long reply line that starts with bytes that are not UTF-8; but a valid
result 0 to pause), stderr-non-utf8 (bytes that are not UTF-8 on stderr, then exit 3). Every
later op after a restart behaves the same, so each affected vector is errored.

Modes that fail before answering start: cannot-start (a line on stderr, then exit 2),
start-non-utf8 (a start reply that is not UTF-8), start-hang (never answers start), start-refused
(a valid errored reply to start). every-other-start:FILE fails to start (exit 2) when FILE does
not exist, and creates it; when FILE exists it removes it, starts, and crashes on its first op.

pause-null answers pause and resume with null (as a port of the 5.x scripts, which return
nothing) and skips the rest; pause-text answers them with the string "0".
skip-slow-stop:FILE skips every op, and on stop creates FILE and sleeps 30 s before answering.
hang:FILE and start-hang:FILE are hang and start-hang that first create FILE, so that a test
can wait until the adapter hangs.
runaway runs a Lua script that never ends on its first op (EVAL, in RESP over a bare socket to
the start request's Redis), and so hangs.
"""

import json
import os
import sys
import time

mode = sys.argv[1]
redis_url = None
hanging_marker = None  # created when the adapter starts to hang (hang:FILE, start-hang:FILE)
for hanging in ("hang:", "start-hang:"):
    if mode.startswith(hanging):
        mode, hanging_marker = hanging.rstrip(":"), mode.removeprefix(hanging)


def _hang() -> None:
    if hanging_marker is not None:
        open(hanging_marker, "w").close()
    time.sleep(30)


def _runaway(url: str) -> None:
    """EVAL a script that never ends, over a bare socket (no client library needed)."""
    import socket
    from urllib.parse import urlsplit

    where = urlsplit(url)
    sock = socket.create_connection((where.hostname, where.port or 6379))
    db = (where.path or "/0").lstrip("/") or "0"
    script = "while true do end"
    sock.sendall(f"*2\r\n$6\r\nSELECT\r\n${len(db)}\r\n{db}\r\n".encode())
    sock.recv(100)
    sock.sendall(f"*3\r\n$4\r\nEVAL\r\n${len(script)}\r\n{script}\r\n$1\r\n0\r\n".encode())
    sock.recv(100)  # never answered while the script runs


if mode == "cannot-start":
    print("faulty: cannot start: no config", file=sys.stderr, flush=True)
    sys.exit(2)
if mode.startswith("every-other-start:"):
    marker = mode.removeprefix("every-other-start:")
    if not os.path.exists(marker):
        open(marker, "w").close()
        print("faulty: this start fails", file=sys.stderr, flush=True)
        sys.exit(2)
    os.remove(marker)
    mode = "crash"
for line in sys.stdin:
    request = json.loads(line)
    seq = request["seq"]
    if request["type"] == "start":
        if mode == "start-non-utf8":
            sys.stdout.buffer.write(b'\xff\xfe{"seq": 0}\n')
            sys.stdout.flush()
            continue
        if mode == "start-hang":
            _hang()
            continue
        redis_url = request["redis"]
        if mode == "start-refused":
            reply = {"seq": seq, "errored": True, "message": "cannot reach Redis"}
        else:
            reply = {"seq": seq, "implementation": {"name": "faulty", "version": mode}}
    elif request["type"] == "stop":
        if mode.startswith("skip-slow-stop:"):
            open(mode.removeprefix("skip-slow-stop:"), "w").close()
            time.sleep(30)
        print(json.dumps({"seq": seq, "stopped": True}), flush=True)
        break
    elif mode.startswith("skip-slow-stop:"):
        reply = {"seq": seq, "skipped": True, "reason": "skips everything"}
    elif mode in ("pause-null", "pause-text"):
        if request["op"]["op"] in ("pause", "resume"):
            reply = {"seq": seq, "result": None if mode == "pause-null" else "0"}
        else:
            reply = {"seq": seq, "skipped": True, "reason": "only pauses"}
    elif mode == "runaway":
        _runaway(str(redis_url))
        continue
    elif mode == "garbage":
        print("this is not json", flush=True)
        continue
    elif mode == "crash":
        print("about to crash", file=sys.stderr, flush=True)
        sys.exit(3)
    elif mode == "hang":
        print("thinking very hard", file=sys.stderr, flush=True)
        _hang()
        continue
    elif mode == "non-utf8" and request["op"]["op"] == "pause":
        reply = {"seq": seq, "result": 0}
    elif mode == "non-utf8":
        sys.stdout.buffer.write(b'\xff\xfe{"ok": true, "pad": "' + b"x" * 1000 + b'"}\n')
        sys.stdout.flush()
        continue
    elif mode == "stderr-non-utf8":
        sys.stderr.buffer.write(b"caf\xe9 \xff\n")
        sys.stderr.flush()
        sys.exit(3)
    elif mode == "badseq":
        reply = {"seq": seq + 7, "result": "1"}
    elif mode == "schema":
        reply = {"seq": seq, "answer": 42}
    elif mode == "skip":
        reply = {"seq": seq, "skipped": True, "reason": "not supported by faulty"}
    else:
        reply = {"seq": seq, "errored": True, "message": "ValueError: nope",
                 "traceback": "Traceback...\nValueError: nope"}
    print(json.dumps(reply), flush=True)
