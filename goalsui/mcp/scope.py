"""Who is calling the tool server and what it may touch, checked at every call (a leaked config dies
with its run)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from goalsui.domain.capabilities import CAPABILITIES, READ_ONLY, own_files, tools_for
from goalsui.errors import ValidationError

if TYPE_CHECKING:
    from goalsui.service import Service


#: a thread intent's run has no worker file: it gets these
THREAD_RUN_CAPABILITIES = ("read_kb", "todos", "threads", "schedule")
GOAL_TOOLS = CAPABILITIES["read_kb"] + CAPABILITIES["write_kb"]


@dataclass(frozen=True)
class Scope:
    """The goal, worker and thread a session is bound to, and the tools it gets."""

    tools: frozenset[str]
    run_id: int | None = None
    goal_id: str | None = None
    worker: str | None = None
    thread_id: int | None = None
    #: the only files ``goal_kb_read`` may read (path parts in the goal); None: any
    readable: tuple[tuple[str, ...], ...] | None = None

    def goal(self, given: str | None) -> str:
        """The goal a call acts on: the scope's own (``given`` must match it) or ``given``."""
        if self.goal_id is not None:
            if given not in (None, "", self.goal_id):
                raise ValidationError(f"goal {given!r} is outside this session's goal")
            return self.goal_id
        if not given:
            raise ValidationError("name the goal (argument 'goal_id')")
        return given

    def thread(self, given: int | None) -> int:
        """The thread a call acts on: the scope's own (``given`` must match it) or ``given``."""
        if self.thread_id is not None:
            if given is not None and given != self.thread_id:
                raise ValidationError(f"thread {given} is outside this session's thread")
            return self.thread_id
        if given is None:
            raise ValidationError("name the thread (argument 'thread_id')")
        return given

    def describe(self) -> str:
        if self.run_id is not None:
            return f"run {self.run_id}"
        parts = [f"goal {self.goal_id}"] if self.goal_id else []
        if self.worker:
            parts.append(f"worker {self.worker}")
        if self.thread_id is not None:
            parts.append(f"thread {self.thread_id}")
        return ", ".join(parts) or "no scope (read-only)"


def _narrowed(
    caps: tuple[str, ...],
    goal_id: str | None,
    worker: str | None,
    thread_id: int | None,
    private: bool,
    run_id: int | None = None,
) -> Scope:
    """The scope's tools: the capabilities' in this goal and thread; a worker without
    ``read_kb`` reads only its own prompt and the goal's protocol."""
    has_worker = worker is not None and goal_id is not None
    tools = tools_for(
        caps, has_thread=thread_id is not None, private_thread=private, has_worker=has_worker
    )
    return Scope(
        tools=tools if goal_id is not None else tools - set(GOAL_TOOLS),
        run_id=run_id,
        goal_id=goal_id,
        worker=worker,
        thread_id=thread_id,
        readable=(
            own_files(worker)
            if worker is not None and goal_id is not None and "read_kb" not in caps
            else None
        ),
    )


def run_scope(service: Service, run_id: int) -> Scope:
    """The scope of a live run (refused when the run is not running)."""
    rs = service.agents.run_scope(run_id)
    caps = rs.capabilities if rs.capabilities is not None else THREAD_RUN_CAPABILITIES
    return _narrowed(caps, rs.goal_id, rs.worker, rs.thread_id, rs.private_thread, run_id)


def operator_scope(
    service: Service, goal_id: str | None, worker: str | None, thread_id: int | None
) -> Scope:
    """An operator's session: every capability in the named scope; none: read-only."""
    if worker is not None and goal_id is None:
        raise ValidationError("--worker needs --goal")
    if goal_id is None and thread_id is None:
        return Scope(tools=frozenset(READ_ONLY))
    if goal_id is not None:
        service.goals.get(goal_id)
    caps = tuple(CAPABILITIES)
    if worker is not None and goal_id is not None:
        caps = service.agents.worker_capabilities(goal_id, worker)
    private = service.threads.get(thread_id).private if thread_id is not None else False
    return _narrowed(caps, goal_id, worker, thread_id, private)
