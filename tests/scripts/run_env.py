"""Print the working directory and the environment as JSON (stdin drained)."""

import json
import os
import sys

sys.stdin.read()
print(json.dumps({"cwd": os.getcwd(), "env": dict(os.environ)}))
