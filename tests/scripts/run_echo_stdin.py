"""Echo stdin to stdout (the prompt comes back as the result)."""

import sys

sys.stdout.write(sys.stdin.read())
