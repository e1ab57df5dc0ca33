"""An ended worker schedule comes back when its definition.yaml is edited or touched."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from goalsui.service import Service

REPO = Path(__file__).resolve().parent.parent.parent
PULSE = "demo-pulse-05c0f5ca"


def test_touching_definition_yaml_reinstates_an_ended_worker(
    tmp_path: Path, make_service: Callable[..., Service]
) -> None:
    kb = tmp_path / "kb"
    shutil.copytree(REPO / "sample_kb", kb)
    svc = make_service(kb)
    intent = svc.workers.intent(PULSE, "pulse")
    svc.intents.cancel(intent.id)
    definition = kb / PULSE / "workers" / "pulse" / "definition.yaml"
    past = time.time() - 3600
    os.utime(definition, (past, past))
    svc.index.sync([PULSE])  # a sync alone (the file older than the end) changes nothing
    assert svc.intents.get(intent.id).status == "cancelled"
    later = time.time() + 5
    os.utime(definition, (later, later))  # touch
    svc.index.sync([PULSE])
    back = svc.intents.get(intent.id)
    assert back.status == "active" and back.next_run_at is not None
    assert back.last_error is None
