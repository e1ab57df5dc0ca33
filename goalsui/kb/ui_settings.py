"""The console's own settings in the KB's ``goalsui.yaml`` (``keymap``, ``theme``). Read with the
YAML reader only, so the console can apply them to its first frame."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from goalsui.errors import GoalsuiError
from goalsui.kb.paths import CONFIG_FILE
from goalsui.kb.regular import open_regular

UI_KEYS = ("keymap", "theme")
#: Bytes looked at before deciding to parse (the YAML reader enforces its own limit).
HEAD_BYTES = 256 * 1024 + 1


def read_ui_settings(root: Path | str) -> dict[str, Any]:
    """Raw ``keymap`` and ``theme`` of goalsui.yaml; empty when absent, broken or out of the KB."""
    root = Path(root)
    path = root / CONFIG_FILE
    try:
        if not path.is_file() or not path.resolve().is_relative_to(root.resolve()):
            return {}
        with os.fdopen(open_regular(path, CONFIG_FILE), "rb") as fh:
            head = fh.read(HEAD_BYTES)
    except (OSError, GoalsuiError):
        return {}
    if not any(key.encode() in head for key in UI_KEYS):
        return {}  # neither key can be there: no YAML (its import alone costs ~20 ms)
    from goalsui.kb.regular import read_text
    from goalsui.kb.yamlio import parse_yaml

    try:
        data = parse_yaml(read_text(path, display=CONFIG_FILE), CONFIG_FILE)
    except GoalsuiError:
        return {}
    return {key: data[key] for key in UI_KEYS if key in data} if isinstance(data, dict) else {}
