"""The first frame's SQL text is the claim path's Core statements compiled for SQLite."""

from __future__ import annotations

from pathlib import Path

from goalsui.store import frame_sql
from goalsui.store.claims.statements import frame_module


def test_frame_sql_is_the_compiled_core_statements() -> None:
    expected = frame_module()
    assert Path(frame_sql.__file__).read_text(encoding="utf-8") == expected, (
        "goalsui/store/frame_sql.py is stale; write frame_module()'s text to it:\n" + expected
    )
