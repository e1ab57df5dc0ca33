"""Result delivery: outbox file, goal log line, message with provenance. Blocking: call these
through ``asyncio.to_thread``."""

from __future__ import annotations

import contextlib
import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from goalsui.domain.replies import is_reply
from goalsui.domain.states import ChangeTopic
from goalsui.domain.untrusted import plain
from goalsui.errors import GoalsuiError
from goalsui.kb.atomic import atomic_write
from goalsui.store.models import Intent, IntentRun

if TYPE_CHECKING:
    from goalsui.service import Service

log = logging.getLogger("goalsui.runners")


OUTBOX_NAME = re.compile(r"^(\d{8}T\d{6}Z)-(\d+)\.md$")
MAX_MESSAGE_CHARS = 64 * 1024


@dataclass(frozen=True)
class Delivery:
    status: str  # ok | silent
    outbox_path: Path | None = None


def provenance(intent: Intent) -> str:
    """Why a result appears: ``Reply to: ...`` for a reply, else ``Came back about: ...``."""
    return intent.title if is_reply(intent.operation_key) else f"Came back about: {intent.title}"


def run_label(intent: Intent) -> str:
    """How log lines name the intent: its worker, else ``intent <id>``."""
    return intent.worker or f"intent {intent.id}"


def headline(output: str, limit: int = 160) -> str:
    """The first non-blank line of a result, Markdown heading marks removed, one line."""
    for line in output.splitlines():
        if text := line.strip().lstrip("#").strip():
            return plain(" ".join(text.split()), limit=limit)
    return ""


def deliver_result(service: Service, intent: Intent, run: IntentRun, output: str) -> Delivery:
    """Deliver an ok run's stdout: silent token, or outbox + goal log + message."""
    token = service.config().silent_token
    silent = bool(token) and output.strip() == token.strip()
    if silent or not output.strip():
        if intent.goal_id:
            said = "silent (nothing to report)" if silent else "ok (no output)"
            service.files.append_log(intent.goal_id, f"run {run.id} {run_label(intent)} {said}")
        return Delivery("silent" if silent else "ok")
    outbox: Path | None = None
    where = "the run log"
    if intent.goal_id and intent.worker:
        # <YYYYmmddTHHMMSSZ>-<run_id>.md (OUTBOX_NAME), stamped with the run's start (UTC)
        started = run.started_at.astimezone(UTC) if run.started_at else datetime.now(UTC)
        name = f"{started:%Y%m%dT%H%M%SZ}-{run.id}.md"
        outbox = service.kb.outbox_dir(intent.goal_id, intent.worker) / name
        atomic_write(outbox, output if output.endswith("\n") else output + "\n")
        where = f"workers/{intent.worker}/outbox/{outbox.name}"  # in the goal directory
    if intent.goal_id:
        pointer = f" -> {where}" if outbox else ""
        line = f"run {run.id} {run_label(intent)} ok: {headline(output) or '(result)'}{pointer}"
        service.files.append_log(intent.goal_id, line)
    content = output
    if len(content) > MAX_MESSAGE_CHARS:
        content = content[:MAX_MESSAGE_CHARS] + f"\n\n… (cut; the whole result is in {where})"
    if intent.thread_id is not None or intent.goal_id is not None:
        service.threads.post(  # into the thread, else the goal
            content,
            thread_id=intent.thread_id,
            goal_id=None if intent.thread_id is not None else intent.goal_id,
            role="assistant",
            intent_id=intent.id,
            run_id=run.id,
            provenance=provenance(intent),
        )
    return Delivery("ok", outbox_path=outbox)


def log_failure(
    service: Service, intent: Intent, run: IntentRun, status: str, reason: str | None
) -> tuple[Path, int] | None:
    """One goal-log line for a run that did not deliver (failed, timeout, cancelled)."""
    if not intent.goal_id:
        return None
    detail = f": {plain(reason, limit=300)}" if reason else ""
    return service.files.append_log(
        intent.goal_id, f"run {run.id} {run_label(intent)} {status}{detail}"
    )


def delivery_problem(service: Service, intent: Intent, run: IntentRun, exc: BaseException) -> str:
    """Record for the operator (journal alert, goal log) a result that could not be delivered;
    the run did its work, so it stays ok and is never re-run. Returns the run's reason."""
    problem = (
        f"delivery problem: the result could not be delivered ({plain(str(exc), limit=200)});"
        " the whole output is in the run log"
    )
    log.warning("run %s of intent %s: %s", run.id, intent.id, problem)
    try:
        service.journal.record(
            "alert", f"intent {intent.id}", problem, actor="scheduler", run_id=run.id
        )
        service.changed(ChangeTopic.ALERTS)
    except Exception:  # the outcome is recorded whatever happens here
        log.exception("run %s: could not journal its delivery problem", run.id)
    if intent.goal_id:  # the same folder, most likely: then the journal has it
        with contextlib.suppress(GoalsuiError, OSError):
            service.files.append_log(intent.goal_id, f"ALERT run {run.id}: {problem}")
    return problem
