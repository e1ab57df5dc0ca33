"""Start a grandchild, write both pids to argv[1], then sleep; 'ignore-term' ignores SIGTERM."""

import os
import signal
import subprocess
import sys
import time

ignore = len(sys.argv) > 2 and sys.argv[2] == "ignore-term"
if ignore:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen(
    [
        sys.executable,
        "-c",
        "import signal, sys, time\n"
        + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if ignore else "")
        + "time.sleep(120)",
    ],
)
print("tree started", flush=True)
tmp = sys.argv[1] + ".tmp"
with open(tmp, "w") as fh:
    fh.write(f"{os.getpid()} {child.pid}\n")
os.replace(tmp, sys.argv[1])
time.sleep(120)
