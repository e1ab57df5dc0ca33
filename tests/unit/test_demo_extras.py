"""``goalsui demo`` adds a worker long enough to stop and the stand-in agent that answers
its threads (and says it is a stand-in); the sample KB itself is left as it is."""

from __future__ import annotations

import subprocess
from datetime import timedelta
from pathlib import Path

from goalsui.bundled import find_sample_kb
from goalsui.demo import make_demo_kb
from goalsui.demo_extras import PULSE, add_demo_extras
from goalsui.kb.layout import KB


def test_the_demo_kb_has_a_long_worker_and_a_stand_in_agent(tmp_path: Path) -> None:
    kb = make_demo_kb(tmp_path / "demo")
    add_demo_extras(kb)
    loaded = KB(kb).load_goal(PULSE)
    long = loaded.workers["long"]
    assert long.timeout is not None and long.timeout >= timedelta(seconds=90)
    runner = KB(kb).config().runner
    assert runner is not None and runner.command is not None
    said = subprocess.run(
        list(runner.command),
        input="Context.\n\nWhat is left for the visa?\n",
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert "stand-in agent, not a real model" in said.stdout
    assert "What is left for the visa?" in said.stdout
    assert not (find_sample_kb() / PULSE / "workers" / "long").exists()  # the sample: untouched
    assert "# A run that takes longer" in (kb / "goalsui.yaml").read_text()  # comments kept
