"""Drain stdin and report nothing (the silent token)."""

import sys

sys.stdin.read()
print("NOTHING_TO_REPORT")
