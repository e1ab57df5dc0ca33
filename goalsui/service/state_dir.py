"""Where a KB's state lives by default (light: no database stack)."""

from __future__ import annotations

import hashlib
from pathlib import Path


def default_state_dir(kb_root: Path) -> Path:
    """Per-KB state folder under the user's state directory (platformdirs)."""
    from platformdirs import user_state_path

    digest = hashlib.sha1(str(kb_root).encode()).hexdigest()[:8]
    return user_state_path("goalsui") / f"{kb_root.name or 'kb'}-{digest}"
