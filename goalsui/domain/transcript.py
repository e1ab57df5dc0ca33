"""A run's transcript as text for people: sanitised, one section per part. Pure."""

from __future__ import annotations

import json
import shlex
from typing import Any

from goalsui.domain.untrusted import plain

#: how a tool call's lines start in a run's log (the Output screen styles them)
TOOL_LINE = "[tool] "

ARG_LIMIT = 400
RESULT_LIMIT = 600


def _one_line(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return plain(" ".join(str(text).split()), limit=limit)


def format_tool_call(call: dict[str, Any]) -> str:
    """``→ name(arguments)`` then ``  ← result`` or ``  ✗ error``, each one line."""
    args = _one_line(call.get("arguments") or {}, ARG_LIMIT)
    mark = "✗ error:" if call.get("is_error") else "←"
    result = _one_line(call.get("result") or "", RESULT_LIMIT)
    return f"→ {plain(str(call.get('name')), limit=100)}({args})\n  {mark} {result}"


def _session_line(session: Any) -> str:
    """Whether the run's agent opened its goalsui tools, and which it was offered."""
    if not isinstance(session, dict):
        return "(none: no goalsui tool session was opened)"
    tools = session.get("tools")
    if not isinstance(tools, list):
        return "opened, but the agent never listed its tools"
    names = ", ".join(plain(str(name), limit=60) for name in tools)
    return f"offered {len(tools)} tools: {names}"


def format_transcript(t: dict[str, Any]) -> str:
    """Prompt, argv, tool calls and output of one run, safe for a terminal."""
    head = f"run {t['run_id']} of intent {t['intent_id']}: {t['status']}"
    if t.get("needs_review"):
        head += f", needs review ('goalsui runs retry|dismiss {t['run_id']}')"
    if t.get("reason"):
        head += f" ({plain(t['reason'], limit=200)})"
    argv = t.get("argv")
    calls = t.get("tool_calls") or []
    parts = [
        head,
        "## argv\n" + (plain(shlex.join(str(a) for a in argv)) if argv else "(not recorded)"),
        "## prompt\n" + (plain(t.get("prompt") or "") or "(not recorded)").rstrip(),
        "## tool session\n" + _session_line(t.get("tool_session")),
        f"## tool calls ({len(calls)})\n"
        + ("\n".join(format_tool_call(c) for c in calls) if calls else "(none)"),
        "## output\n" + (plain(t.get("output") or "") or "(none)").rstrip(),
    ]
    return "\n\n".join(parts) + "\n"
