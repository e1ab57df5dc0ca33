"""What only ``goalsui demo`` adds to its scratch copy of the sample KB: a long worker (from
``kb/templates/demo_long``) and the stand-in agent, a script, not a model, as every reply says."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from goalsui.kb.atomic import atomic_write
from goalsui.kb.authoring import TEMPLATES
from goalsui.kb.yamlio import roundtrip_update

PULSE = "demo-pulse-05c0f5ca"
STANDIN_DIR = ".demo"  # a dot folder: never read as a goal

STANDIN_AGENT = '''\
"""The goalsui demo's stand-in agent: not a model. It answers a thread so the demo
shows a conversation; set a real runner with 'goalsui config set runner claude'."""

import sys

prompt = sys.stdin.read()
paragraphs = [p.strip() for p in prompt.split("\\n\\n") if p.strip()]
said = " ".join(paragraphs[-1].split()) if paragraphs else ""
if len(said) > 160:
    said = said[:159] + "\\u2026"
print("(This reply comes from the goalsui demo's stand-in agent, not a real model.)")
print()
print(f"You wrote: \\u201c{said}\\u201d")
print()
print(
    "In your own KB, a real agent answers here: choose one with "
    "'goalsui config set runner claude' (or codex, goose, or --command ARGV)."
)
'''


def add_demo_extras(kb: Path) -> None:
    """Add the long worker and the stand-in agent to the demo's scratch KB."""
    wdir = kb / PULSE / "workers" / "long"
    if (kb / PULSE).is_dir() and not wdir.exists():
        for sub in ("inbox", "outbox"):
            (wdir / sub).mkdir(parents=True, exist_ok=True)
        for name in ("definition.yaml", "prompt.md"):  # a run to watch and to stop
            shutil.copyfile(TEMPLATES / "demo_long" / name, wdir / name)
    script = kb / STANDIN_DIR / "standin_agent.py"
    script.parent.mkdir(exist_ok=True)
    atomic_write(script, STANDIN_AGENT)
    config = kb / "goalsui.yaml"
    text = config.read_text(encoding="utf-8") if config.exists() else ""
    runner = {"command": [sys.executable, str(script.resolve())], "timeout": "1m"}
    atomic_write(config, roundtrip_update(text, {"runner": runner}, display="goalsui.yaml"))
