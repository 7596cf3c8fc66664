"""An adapter that leaves processes behind, for the process-group tests.

Usage: forking.py PIDFILE CHILD MODE

CHILD says what it starts before it reads anything: `fork` forks a grandchild that sleeps for
five minutes; `stubborn` one that also ignores SIGTERM (and SIGINT, SIGHUP); `none` nothing.
The adapter writes its own pid and the grandchild's to PIDFILE (one a line), so that a test can
check every one of them is gone, even after they were re-parented away from the suite.

MODE: `serve` answers start, skips every op and answers stop, then exits (a well-behaved
adapter, but its grandchild lives on); `hang` answers start, then never answers an op;
`no-start` exits with code 2 before answering start.
"""

import json
import os
import signal
import sys
import time

pidfile, child, mode = sys.argv[1:4]

pids = [os.getpid()]
if child in ("fork", "stubborn"):
    pid = os.fork()
    if pid == 0:  # the grandchild: detached from the pipes, as a daemon would be
        if child == "stubborn":
            for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(signum, signal.SIG_IGN)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        time.sleep(300)
        os._exit(0)
    pids.append(pid)
with open(pidfile, "a") as out:
    out.write("".join(f"{pid}\n" for pid in pids))

if mode == "no-start":
    print("forking: cannot start", file=sys.stderr, flush=True)
    sys.exit(2)
for line in sys.stdin:
    request = json.loads(line)
    seq = request["seq"]
    if request["type"] == "start":
        reply = {"seq": seq, "implementation": {"name": "forking", "version": mode}}
    elif request["type"] == "stop":
        print(json.dumps({"seq": seq, "stopped": True}), flush=True)
        break
    elif mode == "hang":
        time.sleep(300)
        continue
    else:
        reply = {"seq": seq, "skipped": True, "reason": "forking skips everything"}
    print(json.dumps(reply), flush=True)
