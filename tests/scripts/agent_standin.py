"""A stand-in agent CLI for conversation tests: the prompt arrives on stdin.

argv[1]: a folder; each call saves its prompt there as prompt-<run id>.txt.
argv[2]: the mode:
  echo       reply "Stand-in reply to: <the final message>"
  fail-once  fail (exit 3) on the first call, then behave like echo
  follow-up  try to schedule a follow-up in the run's thread through the goalsui
             CLI, then reply with what happened
  slow       sleep a minute, then behave like echo (to be cancelled)
"""

import os
import subprocess
import sys
import time
from pathlib import Path

prompt = sys.stdin.read()
folder = Path(sys.argv[1])
mode = sys.argv[2] if len(sys.argv) > 2 else "echo"
folder.mkdir(parents=True, exist_ok=True)
(folder / f"prompt-{os.environ.get('GOALSUI_RUN_ID')}.txt").write_text(prompt, encoding="utf-8")
final = prompt.rsplit("## Instruction (the message to act on)", 1)[-1].strip()

if mode == "fail-once":
    marker = folder / "failed-once"
    if not marker.exists():
        marker.write_text("x")
        print("the model is overloaded", file=sys.stderr)
        sys.exit(3)

if mode == "slow":
    time.sleep(60)

if mode == "follow-up":
    done = subprocess.run(
        [
            sys.executable, "-m", "goalsui", "intent", "add", "--title", "follow up",
            "--instruction", "ask again tomorrow", "--at", "2099-01-01T09:00Z",
            "--thread", os.environ["GOALSUI_THREAD"],
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    outcome = "scheduled" if done.returncode == 0 else "refused: " + done.stderr.strip()
    print(f"Stand-in reply to: {final}\nfollow-up {outcome}")
    sys.exit(0)

print(f"Stand-in reply to: {final}")
