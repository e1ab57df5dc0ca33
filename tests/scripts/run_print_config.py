"""Print the MCP config named by ``--config=PATH`` and the run id argument (stdin drained)."""

import json
import sys

sys.stdin.read()
path = sys.argv[1].removeprefix("--config=")
with open(path, encoding="utf-8") as fh:
    print(json.dumps({"config": json.load(fh), "run_id": sys.argv[2]}))
