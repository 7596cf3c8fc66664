"""A deliberately faulty adapter for the suite's robustness tests.

Usage: faulty.py MODE, where MODE says how it misbehaves on the first op it sees:
garbage (a non-JSON line), crash (exit 3), hang (sleep), badseq (wrong seq), schema (a reply
that is JSON but not the protocol), skip (a valid skipped reply), errored (a valid errored
reply). Every later op after a restart behaves the same, so each affected vector is errored.
"""

import json
import sys
import time

mode = sys.argv[1]
for line in sys.stdin:
    request = json.loads(line)
    seq = request["seq"]
    if request["type"] == "start":
        reply = {"seq": seq, "implementation": {"name": "faulty", "version": mode}}
    elif request["type"] == "stop":
        print(json.dumps({"seq": seq, "stopped": True}), flush=True)
        break
    elif mode == "garbage":
        print("this is not json", flush=True)
        continue
    elif mode == "crash":
        print("about to crash", file=sys.stderr, flush=True)
        sys.exit(3)
    elif mode == "hang":
        print("thinking very hard", file=sys.stderr, flush=True)
        time.sleep(30)
        continue
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
