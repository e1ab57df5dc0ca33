"""A runner that reads the prompt and prints a result with the run id."""

import os
import sys

prompt = sys.stdin.read()
print(f"done for run {os.environ.get('GOALSUI_RUN_ID')}: read {len(prompt)} characters")
print("second line of the result")
