"""A runner that fails: a line on stderr, exit code 3."""

import sys

sys.stdin.read()
print("partial output")
print("something broke", file=sys.stderr)
sys.exit(3)
