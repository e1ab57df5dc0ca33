"""Demo records (a thread with todos, a reminder, an empty heartbeat) for newcomers."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from goalsui.errors import KBError
from goalsui.kb.layout import copy_sample_kb, find_sample_kb
from goalsui.kb.yamlio import load_yaml_mapping

if TYPE_CHECKING:
    from goalsui.service import Service

DEMO_FILE = "demo_records.yaml"


def load_demo_records(service: Service, path: Path | None = None) -> dict[str, int]:
    """Load ``demo_records.yaml`` through the service (idempotent: keys and titles reused)."""
    path = path or (service.kb.root / DEMO_FILE)
    if not path.is_file():
        path = find_sample_kb() / DEMO_FILE
    data, _ = load_yaml_mapping(path, path.name)
    threads: dict[str, int] = {}
    counts = {"threads": 0, "todos": 0, "intents": 0}
    for spec in data.get("threads") or []:
        if not isinstance(spec, dict) or not spec.get("title"):
            raise KBError(path.name, "each thread needs a title")
        existing = service.find_thread(spec["title"])
        if existing is not None:
            threads[spec["title"]] = existing.id  # type: ignore[assignment]
            continue
        thread = service.create_thread(spec["title"], private=bool(spec.get("private")))
        threads[spec["title"]] = thread.id  # type: ignore[assignment]
        counts["threads"] += 1
        for todo in spec.get("todos") or []:
            service.add_todo(thread.id, todo["text"], done=bool(todo.get("done")))  # type: ignore[arg-type]
            counts["todos"] += 1
        for message in spec.get("messages") or []:
            service.post_message(
                message["content"], thread_id=thread.id, role=message.get("role", "user")
            )
    for spec in data.get("intents") or []:
        kind = spec.get("kind", "cron")
        schedule = spec.get("cron") or spec.get("every") or spec.get("at")
        service.create_intent(
            title=spec["title"],
            instruction=spec.get("instruction", ""),
            kind=kind,
            schedule=schedule,
            timezone=spec.get("timezone", "UTC"),
            thread_id=threads.get(spec.get("thread", "")),
            operation_key=spec.get("operation_key"),
            checklist=spec.get("checklist"),
            event_source=spec.get("source"),
        )
        counts["intents"] += 1
    return counts


def make_demo_kb(target: Path | None = None) -> Path:
    """Copy the sample KB to a scratch folder and return it."""
    base = Path(target) if target else Path(tempfile.mkdtemp(prefix="goalsui-demo-"))
    kb = base / "kb"
    copy_sample_kb(kb)
    return kb
