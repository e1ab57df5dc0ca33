"""The database's tables (SQLModel), mapped to :mod:`goalsui.domain.records` by ``record()``;
every timestamp is stored as UTC (:class:`UTCDateTime`)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import JSON, Column, DateTime, Index, Text, UniqueConstraint
from sqlalchemy.types import TypeDecorator
from sqlmodel import Field, SQLModel

from goalsui.domain.records import (
    EventRecord,
    GoalRecord,
    IntentRecord,
    MessageRecord,
    RunRecord,
    ThreadRecord,
    TodoRecord,
    record_of,
)
from goalsui.domain.states import OVERLAP, RunStatus, RunTrigger
from goalsui.domain.timeutil import utcnow

if TYPE_CHECKING:
    from goalsui.domain.intent_spec import IntentSpec


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes in, aware UTC datetimes out, on SQLite and PostgreSQL."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the database; use aware UTC")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _ts(nullable: bool = True, index: bool = False) -> Any:
    return Field(default=None, sa_column=Column(UTCDateTime(), nullable=nullable, index=index))


def _stamp_now(index: bool = False) -> Any:
    return Field(
        default_factory=utcnow, sa_column=Column(UTCDateTime(), nullable=False, index=index)
    )


class Goal(SQLModel, table=True):
    """Index of one goal tree in the KB (rebuilt from the KB at start)."""

    goal_id: str = Field(primary_key=True, max_length=80)
    name: str
    task: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    owner: str = ""
    status: str = "active"
    sort_order: int = 0
    kb_path: str
    error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime = _stamp_now()
    updated_at: datetime = _stamp_now()

    def record(self) -> GoalRecord:
        return record_of(GoalRecord, self)


class Thread(SQLModel, table=True):
    """A conversation with a checklist; a worker's home thread names its goal and worker."""

    __table_args__ = (Index("ux_thread_home", "goal_id", "worker", unique=True),)

    id: int | None = Field(default=None, primary_key=True)
    title: str
    private: bool = False
    revision: int = 0  # the checklist revision, bumped on every todo change
    created_at: datetime = _stamp_now()
    goal_id: str | None = None  # set (with worker) on a worker's home thread only
    worker: str | None = None

    def record(self) -> ThreadRecord:
        return record_of(ThreadRecord, self)


class Todo(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    thread_id: int = Field(foreign_key="thread.id", index=True)
    text: str = Field(sa_column=Column(Text, nullable=False))
    done: bool = False
    position: int = 0
    created_at: datetime = _stamp_now()
    completed_at: datetime | None = _ts()

    def record(self) -> TodoRecord:
        return record_of(TodoRecord, self)


class Message(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    thread_id: int | None = Field(default=None, foreign_key="thread.id", index=True)
    goal_id: str | None = Field(default=None, index=True)
    role: str = "user"
    content: str = Field(sa_column=Column(Text, nullable=False))
    intent_id: int | None = None
    run_id: int | None = None
    provenance: str | None = None
    created_at: datetime = _stamp_now()

    def record(self) -> MessageRecord:
        return record_of(MessageRecord, self)


class Intent(SQLModel, table=True):
    """A persisted future wake-up."""

    __table_args__ = (
        Index("ix_intent_due", "status", "next_run_at"),
        # the minutely expiry scan reads only the rows past their expiry
        Index("ix_intent_expiry", "status", "expires_at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    thread_id: int | None = Field(default=None, foreign_key="thread.id", index=True)
    goal_id: str | None = Field(default=None, index=True)
    worker: str | None = None
    title: str
    instruction: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    kind: str
    status: str = "active"
    schedule: str | None = None  # cron expression, interval ("30m") or ISO instant
    timezone: str = "UTC"
    next_run_at: datetime | None = _ts()
    event_source: str | None = Field(default=None, index=True)
    event_filter: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    cooldown_s: int = 0
    max_fires: int | None = None
    fires: int = 0
    expires_at: datetime | None = _ts()
    checklist: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    active_hours: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    runner: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    timeout_s: int | None = None
    attempts: int = 0
    consecutive_failures: int = 0
    operation_key: str | None = Field(default=None, unique=True, max_length=200)
    lease_owner: str | None = None
    lease_until: datetime | None = _ts()
    last_error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    last_fired_at: datetime | None = _ts()
    last_alert_at: datetime | None = _ts()
    definition_hash: str | None = None
    pending_trigger: str | None = None  # run-now / retry / event / pause, consumed by the scheduler
    pending_event_id: int | None = None  # the event that made an event intent due
    on_interrupt: str | None = None  # retry | review; None: the runner's default
    created_at: datetime = _stamp_now()
    updated_at: datetime = _stamp_now(index=True)

    @classmethod
    def from_spec(cls, spec: IntentSpec, now: datetime) -> Intent:
        """The row of a validated spec (each of its fields is a column), planned from ``now``."""
        fields = {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)}
        fields.update(kind=str(spec.kind), timezone=spec.zone, next_run_at=spec.first_run(now))
        return cls(**fields, created_at=now, updated_at=now)

    def record(self) -> IntentRecord:
        return record_of(IntentRecord, self)


class IntentRun(SQLModel, table=True):
    """One attempt to execute an intent."""

    __tablename__ = "intent_run"
    __table_args__ = (Index("ix_run_intent_started", "intent_id", "started_at"),)

    id: int | None = Field(default=None, primary_key=True)
    intent_id: int = Field(foreign_key="intent.id", index=True)
    attempt: int = 1
    trigger: str = "schedule"
    status: str = "running"
    reason: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    planned_at: datetime | None = _ts()
    started_at: datetime = _stamp_now(index=True)
    finished_at: datetime | None = _ts()
    exit_code: int | None = None
    output_tail: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    output_path: str | None = None
    event_id: int | None = None
    owner: str | None = None
    dismissed: bool = False
    # the runner's process group: recovery tells a live attempt from a dead one by it
    host: str | None = None
    pgid: int | None = None
    needs_review: bool = False  # an interrupted run with side effects, held for the operator
    # usage, as the agent reported it (None means unknown, never zero)
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    model: str | None = None
    # the transcript: what the turn was given (tool calls live in ToolCall)
    prompt: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    argv: list[Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    # the agent's goalsui tool session: {"opened_at": ISO, "tools": [names] | None}
    tool_session: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))

    def record(self) -> RunRecord:
        return record_of(RunRecord, self)


def skipped_run(
    intent_id: int,
    attempt: int,
    trigger: RunTrigger | str,
    at: datetime,
    event_id: int | None = None,
) -> IntentRun:
    """A ``skipped`` run at ``at`` (started and finished at once): it overlapped a live one."""
    return IntentRun(
        intent_id=intent_id,
        attempt=attempt,
        trigger=str(trigger),
        status=RunStatus.SKIPPED,
        reason=OVERLAP,
        planned_at=at,
        started_at=at,
        finished_at=at,
        event_id=event_id,
    )


class Event(SQLModel, table=True):
    """A received event (webhook or CLI); its payload is data only."""

    __table_args__ = (UniqueConstraint("source", "delivery_id", name="uq_event_delivery"),)

    id: int | None = Field(default=None, primary_key=True)
    source: str = Field(index=True)
    delivery_id: str
    received_at: datetime = _stamp_now()
    payload: Any = Field(default=None, sa_column=Column(JSON, nullable=True))
    matched_intent_ids: list[Any] | None = Field(
        default=None, sa_column=Column(JSON, nullable=True)
    )

    def record(self) -> EventRecord:
        return record_of(EventRecord, self)


class Journal(SQLModel, table=True):
    """What the operator did and what the scheduler did, with times (the event log)."""

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = _stamp_now(index=True)
    actor: str  # operator | scheduler | cli | hooks | kb
    action: str
    subject: str = ""
    detail: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    run_id: int | None = None  # the run on whose behalf a tool wrote (tool server)
    tool: str | None = None  # the tool server's tool name, when a tool wrote


class ToolCall(SQLModel, table=True):
    """One tool call an agent made through the tool server during a run."""

    __tablename__ = "tool_call"

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(index=True)
    at: datetime = _stamp_now()
    name: str
    arguments: Any = Field(default=None, sa_column=Column(JSON, nullable=True))
    result: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    is_error: bool = False


class Meta(SQLModel, table=True):
    """Key/value facts about the database itself (e.g. the change counter)."""

    key: str = Field(primary_key=True)
    value: str = ""
