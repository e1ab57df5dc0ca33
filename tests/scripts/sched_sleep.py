"""A runner that sleeps; it exits early when its parent (the daemon) dies.

Usage: sched_sleep.py PIDDIR SECONDS. Writes PIDDIR/<run id>.pid first, so a test can
check that the process is gone afterwards.
"""

import os
import sys
import time
from pathlib import Path

piddir, seconds = Path(sys.argv[1]), float(sys.argv[2])
sys.stdin.read()  # the prompt
run_id = os.environ.get("GOALSUI_RUN_ID", "unknown")
tmp = piddir / f"{run_id}.pid.tmp"  # then renamed: a reader never sees an empty file
tmp.write_text(str(os.getpid()))
tmp.replace(piddir / f"{run_id}.pid")
parent = os.getppid()
end = time.monotonic() + seconds
while time.monotonic() < end:
    if os.getppid() != parent:
        sys.exit(3)  # orphaned: the daemon was killed
    time.sleep(0.05)
print(f"slept {seconds:g}s")
