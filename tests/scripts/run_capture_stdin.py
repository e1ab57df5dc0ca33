"""Write stdin to the file named by argv[1]; exit with argv[2] (default 0)."""

import sys

data = sys.stdin.read()
with open(sys.argv[1], "w", encoding="utf-8") as fh:
    fh.write(data)
sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
