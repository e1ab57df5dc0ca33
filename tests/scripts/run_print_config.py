"""Print the MCP configs named by ``--config=PATH`` and ``--stdio=PATH`` and the run id
argument (stdin drained); it never opens its tools."""

import json
import sys

sys.stdin.read()
configs = {}
for arg in sys.argv[1:-1]:
    name, _, path = arg.removeprefix("--").partition("=")
    with open(path, encoding="utf-8") as fh:
        configs[name] = {"path": path, "document": json.load(fh)}
print(json.dumps({"configs": configs, "run_id": sys.argv[-1]}))
