"""Some output, two stderr lines, then exit with the code given (default 3)."""

import sys

sys.stdin.read()
print("partial result")
print("first problem", file=sys.stderr)
print("disk quota exceeded on /data", file=sys.stderr)
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
