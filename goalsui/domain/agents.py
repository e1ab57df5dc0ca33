"""The agent CLIs goalsui has runner presets for (see docs/agents.md)."""

from __future__ import annotations

#: Names a runner may give as ``runner: {agent: NAME}``.
AGENTS = ("claude", "codex", "goose")
