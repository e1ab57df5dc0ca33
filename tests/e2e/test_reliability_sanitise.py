"""Untrusted text never reaches the terminal raw, on any command line output (issue 21.7).

Agent output, thread messages, KB fields and intent titles carrying escape sequences
(CSI, OSC), C1 controls and bidi overrides, printed by the real command line: the text
forms show none of them; ``--json`` keeps the data exact but escapes them as ``\\uXXXX``.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from goalsui.domain.untrusted import json_escape
from goalsui.kb.layout import WorkerSeed
from goalsui.service import Service
from tests.base_kit import clean_environ, run_cli

#: clear screen, set the window title (OSC), a one-byte CSI (C1), bidi override and isolate
EVIL = "x\x1b[2J\x1b]0;pwned\x07 \x9b31m red \u202eevil\u2066 \x1b]8;;http://a\x1b\\link"
RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def cli(kb: Path, state: Path, *args: str) -> subprocess.CompletedProcess:
    return run_cli(*args, kb=kb, state=state, env=clean_environ())  # strict UTF-8 decoding


@pytest.fixture
def evil_kb(empty_kb: Path, tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    state = tmp_path / "state"
    svc = Service.open(empty_kb, None, state)
    view = svc.goals.create(
        f"Goal {EVIL}",
        f"task {EVIL}",
        [WorkerSeed("w", {"schedule": {"every": "1h"}, "runner": {"command": ["cat"]}})],
    )
    thread = svc.threads.create(f"thread {EVIL}")
    svc.threads.post(f"agent said {EVIL}", thread_id=thread.id, role="assistant")
    svc.todos.add(thread.id, f"todo {EVIL}")
    intent = svc.intents.create(
        title=f"intent {EVIL}", instruction=f"do {EVIL}", kind="heartbeat", schedule="1h"
    )
    svc.close()
    ids = {"goal": view.goal_id, "thread": str(thread.id), "intent": str(intent.id)}
    return empty_kb, state, ids


def strings(data: object) -> list[str]:
    """Every string value inside decoded JSON."""
    if isinstance(data, str):
        return [data]
    if isinstance(data, dict):
        return [s for value in data.values() for s in strings(value)]
    if isinstance(data, list):
        return [s for value in data for s in strings(value)]
    return []


def human_commands(ids: dict[str, str]) -> list[tuple[str, ...]]:
    return [
        ("goal", "list"),
        ("goal", "show", ids["goal"]),
        ("thread", "list"),
        ("thread", "show", ids["thread"]),
        ("todo", "list", ids["thread"]),
        ("intent", "list"),
        ("intent", "show", ids["intent"]),
        ("plan",),
        ("thread", "show", EVIL),  # echoed back in the error message
    ]


def test_text_output_never_carries_escapes_controls_or_bidi(evil_kb) -> None:
    kb, state, ids = evil_kb
    for command in human_commands(ids):
        result = cli(kb, state, *command)
        where = " ".join(command[:2])
        assert not RAW.findall(result.stdout), (where, result.stdout)
        assert not RAW.findall(result.stderr), (where, result.stderr)
        assert "0;pwned" not in result.stdout  # the OSC title sequence is removed whole
    shown = cli(kb, state, "thread", "show", ids["thread"]).stdout
    assert "agent said x" in shown and "red" in shown and "link" in shown  # the text stays


@pytest.mark.parametrize(
    "command",
    [("goal", "list"), ("goal", "show", "{goal}"), ("thread", "list"), ("intent", "list")],
)
def test_json_output_escapes_them_and_keeps_the_data(evil_kb, command) -> None:
    kb, state, ids = evil_kb
    args = [part.format(**ids) for part in command]
    result = cli(kb, state, *args, "--json")
    assert result.returncode == 0, result.stderr
    assert not RAW.findall(result.stdout), result.stdout
    assert "\\u202e" in result.stdout and "\\u009b" in result.stdout
    assert any(EVIL in text for text in strings(json.loads(result.stdout)))  # exact data


def test_json_escape_leaves_json_meaning_unchanged() -> None:
    data = {"k\u2067": ["\x85", "\ud800", "plain é 中"], "n": 1}
    text = json_escape(json.dumps(data, ensure_ascii=False))
    assert not RAW.findall(text)
    assert "é 中" in text  # ordinary text stays readable
    assert json.loads(text) == data
