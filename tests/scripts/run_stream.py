"""Print one line, wait until the file named by argv[1] exists, print another, exit 0."""

import os
import sys
import time

sys.stdin.read()
print("line one: started", flush=True)
print("progress on stderr", file=sys.stderr, flush=True)
deadline = time.monotonic() + 60
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    time.sleep(0.01)
print("line two: done", flush=True)
