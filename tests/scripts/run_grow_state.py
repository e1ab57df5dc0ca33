"""A runner that rewrites state.yaml in its working directory (the goal) with argv[1] bytes."""

import sys

sys.stdin.read()
size = int(sys.argv[1])
body = "plan: []\nnotes: " + "x" * max(0, size - 20) + "\n"
with open("state.yaml", "w", encoding="utf-8") as fh:
    fh.write(body)
print(f"state.yaml rewritten ({len(body)} bytes)")
