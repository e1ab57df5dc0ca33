"""A notify: command for tests: append the notice (JSON on stdin) as one line to argv[1]."""

import json
import sys

notice = json.loads(sys.stdin.read())
with open(sys.argv[1], "a", encoding="utf-8") as fh:
    fh.write(json.dumps(notice) + "\n")
