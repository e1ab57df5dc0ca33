"""A tick result in the protocol's shape; the first argument names the worker."""

import sys

sys.stdin.read()
name = sys.argv[1] if len(sys.argv) > 1 else "tester"
print(f"## {name}: 3 findings, 17 files")
print()
print("- first finding")
print("- second finding")
print("Next: nothing")
