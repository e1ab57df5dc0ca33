"""Validated shapes of the KB's YAML files: ``goalsui.yaml`` and the definitions."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

from goalsui.domain.agents import AGENTS
from goalsui.domain.backoff import RetryPolicy
from goalsui.domain.budget import Budget
from goalsui.domain.capabilities import CAPABILITIES
from goalsui.domain.cron import validate_cron
from goalsui.domain.durations import parse_duration
from goalsui.domain.names import check_name
from goalsui.domain.states import GoalStatus
from goalsui.domain.timeutil import load_zone, parse_instant
from goalsui.errors import GoalsuiError, KBError, ValidationError
from goalsui.kb.yamlio import line_of_key

T = TypeVar("T")

BUILTIN_RUNNERS = ("report",)
_HH_MM = re.compile(r"(\d+):(\d+)")
GOAL_STATUSES = tuple(GoalStatus)
#: The default bound of a goal's ``state.yaml`` (``state_max_bytes`` in goalsui.yaml).
STATE_MAX_BYTES = 64 * 1024
#: What a turn says when neither the worker, the intent nor goalsui.yaml names a runner.
NO_RUNNER = (
    "no runner configured: set runner: in goalsui.yaml or the worker's definition.yaml "
    "(see docs/agents.md)"
)


@dataclass(frozen=True)
class RunnerSpec:
    """How an isolated turn runs: an argv command or a builtin."""

    command: tuple[str, ...] | None = None
    builtin: str | None = None
    agent: str | None = None  # a preset of goalsui.runners.presets
    model: str | None = None  # a model name for the agent (``{model}`` in a command's argv)
    args: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()  # tools the agent may use besides goalsui's

    def as_dict(self) -> dict[str, Any]:
        if self.builtin:
            return {"builtin": self.builtin}
        head = {"agent": self.agent} if self.agent else {"command": list(self.command or ())}
        extra = {"model": self.model, "args": list(self.args), "tools": list(self.tools)}
        return head | {key: value for key, value in extra.items() if value}  # args: agents only


@dataclass(frozen=True)
class AlertPolicy:
    after: int = 2
    cooldown: timedelta = timedelta(hours=1)
    command: tuple[str, ...] | None = None


@dataclass(frozen=True)
class HookSource:
    name: str
    secret_env: str
    style: str = "goalsui"  # or "github"


@dataclass(frozen=True)
class KBConfig:
    runner: RunnerSpec | None = None  # unset: a turn without its own runner fails (NO_RUNNER)
    timeout: timedelta = timedelta(minutes=10)
    silent_token: str = "NOTHING_TO_REPORT"
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    catch_up_limit: timedelta = timedelta(hours=24)
    alerts: AlertPolicy = field(default_factory=AlertPolicy)
    hooks: dict[str, HookSource] = field(default_factory=dict)
    budget: Budget | None = None
    state_max_bytes: int = STATE_MAX_BYTES
    notify: tuple[str, ...] | None = None  # argv receiving each notification as JSON on stdin


@dataclass(frozen=True)
class ScheduleSpec:
    """A worker's schedule: ``cron`` + timezone, ``every`` interval, or one ``at`` instant."""

    kind: str  # cron | every | at
    expr: str  # cron expression, interval text, or ISO instant
    timezone: str = "UTC"
    every: timedelta | None = None
    at: datetime | None = None

    @property
    def intent_kind(self) -> str:
        return {"cron": "cron", "every": "heartbeat", "at": "at"}[self.kind]


@dataclass(frozen=True)
class WorkerDef:
    name: str
    schedule: ScheduleSpec
    runner: RunnerSpec | None = None
    timeout: timedelta | None = None
    capabilities: tuple[str, ...] = ()
    active_hours: dict[str, Any] | None = None
    budget: Budget | None = None


@dataclass(frozen=True)
class GoalDef:
    goal_id: str
    name: str
    task: str = ""
    owner: str = ""
    status: str = "active"
    sort_order: int = 0
    created_at: datetime | None = None
    budget: Budget | None = None


class _Checker:
    """Collects the file and text so every error carries file, line and reason."""

    def __init__(self, display: str, text: str) -> None:
        self.display = display
        self.text = text

    def fail(self, key: str | None, reason: str) -> KBError:
        line = line_of_key(self.text, key) if key else None
        return KBError(self.display, reason, line)

    def only(self, data: dict[Any, Any], allowed: tuple[str, ...], where: str = "") -> None:
        for key in data:
            if key not in allowed:
                raise self.fail(
                    str(key), f"unknown field '{where}{key}' (allowed: {', '.join(allowed)})"
                )

    def mapping(self, value: Any, key: str) -> dict[Any, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(key, f"'{key}' must be a mapping, found {type(value).__name__}")
        return value

    def text_field(
        self, value: Any, key: str, *, required: bool = False, limit: int = 10_000
    ) -> str:
        if value is None:
            if required:
                raise self.fail(None, f"missing required field '{key}'")
            return ""
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise self.fail(key, f"'{key}' must be text, found {type(value).__name__}")
        text = str(value)
        if len(text) > limit:
            raise self.fail(key, f"'{key}' is too long ({len(text)} characters)")
        return text

    def check(self, key: str, check: Callable[..., T], *args: Any) -> T:
        """``check(*args)``; its GoalsuiError becomes this file's error at ``key``."""
        try:
            return check(*args)
        except GoalsuiError as exc:
            raise self.fail(key, str(exc)) from None

    def zone(self, value: Any, key: str = "timezone") -> str:
        tz = self.text_field(value, key, limit=100)
        self.check(key, load_zone, tz)
        return tz

    def whole(self, value: Any, key: str, *, minimum: int = 0) -> int:
        return int(self.number(value, key, minimum=minimum, integer=True))

    def duration(self, value: Any, key: str) -> timedelta:
        return self.check(key, parse_duration, value)

    def number(self, value: Any, key: str, *, minimum: float = 0, integer: bool = False) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(key, f"'{key}' must be a number")
        if integer and not isinstance(value, int):
            raise self.fail(key, f"'{key}' must be a whole number")
        if value < minimum:
            raise self.fail(key, f"'{key}' must be at least {minimum}")
        return value

    def argv(self, value: Any, key: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not value:
            raise self.fail(key, f"'{key}' must be a non-empty list of arguments")
        for item in value:
            if isinstance(item, bool) or not isinstance(item, str | int | float):
                raise self.fail(key, f"'{key}' arguments must be text")
            if "\x00" in str(item):
                raise self.fail(key, f"'{key}' argument contains a NUL byte")
        return tuple(str(item) for item in value)

    def runner(self, value: Any) -> RunnerSpec:
        data = self.mapping(value, "runner")
        self.only(data, RUNNER_KEYS, "runner.")
        if len([k for k in ("command", "builtin", "agent") if k in data]) > 1:
            raise self.fail(
                "builtin", "'runner' takes one of 'command', 'builtin' or 'agent' (not both)"
            )
        if "agent" in data:
            return self.agent_runner(data)
        if any(k in data for k in ("args", "tools")):
            raise self.fail("runner", "'runner': args and tools go with 'agent'")
        if "builtin" in data:
            name = data["builtin"]
            if name not in BUILTIN_RUNNERS:
                known = ", ".join(BUILTIN_RUNNERS)
                raise self.fail("builtin", f"unknown builtin runner {name!r} (known: {known})")
            return RunnerSpec(builtin=name)
        model = self.text_field(data.get("model"), "model", limit=200).strip() or None
        if "command" in data:
            return RunnerSpec(command=self.argv(data["command"], "command"), model=model)
        raise self.fail(
            "runner", "'runner' needs 'command: [argv...]', 'agent: NAME' or 'builtin: report'"
        )

    def agent_runner(self, data: dict[Any, Any]) -> RunnerSpec:
        name = data["agent"]
        if name not in AGENTS:
            raise self.fail("agent", f"unknown agent {name!r} (known: {', '.join(AGENTS)})")
        model = self.text_field(data.get("model"), "model", limit=200) or None
        args = self.argv(data["args"], "args") if data.get("args") else ()
        tools = self.argv(data["tools"], "tools") if data.get("tools") else ()
        return RunnerSpec(agent=name, model=model, args=args, tools=tools)


#: the top-level keys of goalsui.yaml
KB_CONFIG_KEYS = (
    "runner",
    "silent_token",
    "retry",
    "catch_up_limit",
    "alerts",
    "hooks",
    "keymap",
    "theme",
    "budget",
    "state_max_bytes",
    "notify",
)
GOAL_KEYS = (
    "goal_id",
    "name",
    "task",
    "owner",
    "status",
    "sort_order",
    "created_at",
    "updated_at",
    "budget",
)
RUNNER_KEYS = ("command", "builtin", "agent", "model", "args", "tools", "timeout")


def parse_kb_config(data: dict[Any, Any], text: str, display: str) -> KBConfig:
    """Validate ``<kb>/goalsui.yaml``."""
    c = _Checker(display, text)
    c.only(data, KB_CONFIG_KEYS)
    runner_data = c.mapping(data.get("runner"), "runner")
    token = data.get("silent_token", "NOTHING_TO_REPORT")
    return KBConfig(  # checked in this order: of several problems, the first is reported
        runner=c.runner(runner_data) if set(runner_data) - {"timeout"} else None,
        timeout=c.duration(runner_data.get("timeout", "10m"), "timeout"),
        silent_token=c.text_field(token, "silent_token", limit=200),
        retry=_retry_policy(data, c),
        catch_up_limit=c.duration(data.get("catch_up_limit", "24h"), "catch_up_limit"),
        alerts=_alert_policy(data, c),
        state_max_bytes=c.whole(
            data.get("state_max_bytes", STATE_MAX_BYTES), "state_max_bytes", minimum=1
        ),
        hooks=_hook_sources(data, c),
        notify=c.argv(data["notify"], "notify") if data.get("notify") is not None else None,
        budget=parse_budget(data.get("budget"), c),
    )


def _retry_policy(data: dict[Any, Any], c: _Checker) -> RetryPolicy:
    """``retry`` of goalsui.yaml: the backoff and the failures before auto-disable."""
    retry_data = c.mapping(data.get("retry"), "retry")
    c.only(retry_data, ("base_seconds", "cap_seconds", "max_consecutive_failures"), "retry.")
    return RetryPolicy(
        base_seconds=c.number(retry_data.get("base_seconds", 2), "base_seconds", minimum=1),
        cap_seconds=c.number(retry_data.get("cap_seconds", 300), "cap_seconds", minimum=1),
        max_consecutive_failures=c.whole(
            retry_data.get("max_consecutive_failures", 5), "max_consecutive_failures", minimum=1
        ),
    )


def _alert_policy(data: dict[Any, Any], c: _Checker) -> AlertPolicy:
    """``alerts`` of goalsui.yaml: after how many failures, how often, and the command."""
    alerts_data = c.mapping(data.get("alerts"), "alerts")
    c.only(alerts_data, ("after", "cooldown", "command"), "alerts.")
    return AlertPolicy(
        after=c.whole(alerts_data.get("after", 2), "after", minimum=1),
        cooldown=c.duration(alerts_data.get("cooldown", "1h"), "cooldown"),
        command=c.argv(alerts_data["command"], "command") if "command" in alerts_data else None,
    )


def _hook_sources(data: dict[Any, Any], c: _Checker) -> dict[str, HookSource]:
    """``hooks.sources`` of goalsui.yaml: each source's secret variable and style."""
    hooks_data = c.mapping(data.get("hooks"), "hooks")
    c.only(hooks_data, ("sources",), "hooks.")
    sources: dict[str, HookSource] = {}
    for name, spec in c.mapping(hooks_data.get("sources"), "sources").items():
        c.check(str(name), check_name, str(name), "hook source")
        spec = c.mapping(spec, str(name))
        c.only(spec, ("secret_env", "style"), f"hooks.sources.{name}.")
        env = c.text_field(spec.get("secret_env"), "secret_env", required=True, limit=200)
        style = c.text_field(spec.get("style", "goalsui"), "style")
        if style not in ("goalsui", "github"):
            raise c.fail("style", f"unknown hook style {style!r} (goalsui or github)")
        sources[str(name)] = HookSource(name=str(name), secret_env=env, style=style)
    return sources


def parse_schedule(data: Any, c: _Checker) -> ScheduleSpec:
    sched = c.mapping(data, "schedule")
    if not sched:
        raise c.fail("schedule", "missing 'schedule' (cron + timezone, every, or at)")
    c.only(sched, ("cron", "timezone", "every", "at"), "schedule.")
    forms = [k for k in ("cron", "every", "at") if k in sched]
    if len(forms) != 1:
        raise c.fail("schedule", "'schedule' needs exactly one of 'cron', 'every' or 'at'")
    tz = c.zone(sched.get("timezone", "UTC"))
    form = forms[0]
    value = sched[form]
    if form == "cron":
        expr = c.check("cron", validate_cron, c.text_field(value, "cron", limit=200))
        return ScheduleSpec(kind="cron", expr=expr, timezone=tz)
    if form == "every":
        every = c.duration(value, "every")
        if every.total_seconds() < 10:
            raise c.fail("every", "'every' must be at least 10s")
        return ScheduleSpec(kind="every", expr=str(value), timezone=tz, every=every)
    if isinstance(value, datetime):
        value = value.isoformat()
    text = c.text_field(value, "at", limit=100)
    at = c.check("at", parse_instant, text, tz)
    return ScheduleSpec(kind="at", expr=text, timezone=tz, at=at)


def parse_worker(name: str, data: dict[Any, Any], text: str, display: str) -> WorkerDef:
    """Validate ``workers/<name>/definition.yaml``."""
    c = _Checker(display, text)
    c.only(
        data,
        ("schedule", "runner", "timeout", "capabilities", "active_hours", "description", "budget"),
    )
    schedule = parse_schedule(data.get("schedule"), c)
    runner = c.runner(data["runner"]) if data.get("runner") is not None else None
    timeout = c.duration(data["timeout"], "timeout") if data.get("timeout") is not None else None
    caps = data.get("capabilities") or []
    if not isinstance(caps, list) or not all(isinstance(x, str) for x in caps):
        raise c.fail("capabilities", "'capabilities' must be a list of names")
    if unknown := [name for name in caps if name not in CAPABILITIES]:
        known = ", ".join(CAPABILITIES)
        raise c.fail("capabilities", f"unknown capability {unknown[0]!r} (known: {known})")
    hours = data.get("active_hours")
    return WorkerDef(
        name=name,
        schedule=schedule,
        runner=runner,
        timeout=timeout,
        capabilities=tuple(caps),
        active_hours=parse_active_hours(hours, c) if hours is not None else None,
        budget=parse_budget(data.get("budget"), c),
    )


def parse_budget(value: Any, c: _Checker) -> Budget | None:
    """``budget: {usd_per_day, usd_per_night, tokens_per_day, timezone}`` (all optional)."""
    if value is None:
        return None
    data = c.mapping(value, "budget")
    c.only(data, ("usd_per_day", "usd_per_night", "tokens_per_day", "timezone"), "budget.")
    money = {}
    for key in ("usd_per_day", "usd_per_night"):
        if data.get(key) is not None:
            amount = c.number(data[key], key, minimum=0)
            if amount != amount or amount == float("inf"):
                raise c.fail(key, f"'{key}' must be a finite number of dollars")
            money[key] = float(amount)
    tokens = data.get("tokens_per_day")
    tz = data.get("timezone")
    return Budget(
        usd_per_day=money.get("usd_per_day"),
        usd_per_night=money.get("usd_per_night"),
        tokens_per_day=c.whole(tokens, "tokens_per_day") if tokens is not None else None,
        timezone=c.zone(tz) if tz is not None else None,
    )


def parse_active_hours(value: Any, c: _Checker) -> dict[str, Any]:
    data = c.mapping(value, "active_hours")
    c.only(data, ("start", "end", "timezone"), "active_hours.")
    out = {}
    for key in ("start", "end"):
        match = _HH_MM.fullmatch(c.text_field(data.get(key), key, required=True, limit=5))
        if not match or int(match[1]) > 24 or int(match[2]) > 59:
            raise c.fail(key, f"'{key}' must be a time like 08:00")
        out[key] = f"{int(match[1]):02d}:{int(match[2]):02d}"
    out["timezone"] = c.zone(data.get("timezone", "UTC"))
    return out


def active_hours_from_range(value: str, tz: str) -> dict[str, Any]:
    """``"08:00-22:00"`` in ``tz`` as validated active hours (the worker-file rule)."""
    start, sep, end = value.partition("-")
    if not sep:
        raise ValidationError(f"invalid active hours {value!r}: use HH:MM-HH:MM, e.g. 08:00-22:00")
    try:
        return parse_active_hours(
            {"start": start, "end": end, "timezone": tz}, _Checker("active hours", "")
        )
    except KBError as exc:
        raise ValidationError(f"invalid active hours {value!r}: {exc.reason}") from None


def parse_goal(data: dict[Any, Any], text: str, display: str, folder_name: str) -> GoalDef:
    """Validate ``<goal>/definition.yaml``; its ``goal_id`` must match the folder."""
    c = _Checker(display, text)
    c.only(data, GOAL_KEYS)
    goal_id = c.text_field(data.get("goal_id"), "goal_id", required=True, limit=64)
    c.check("goal_id", check_name, goal_id, "goal id")
    if goal_id != folder_name:
        raise c.fail("goal_id", f"goal_id '{goal_id}' does not match its folder '{folder_name}'")
    status = c.text_field(data.get("status", "active"), "status")
    if status not in GOAL_STATUSES:
        raise c.fail("status", f"unknown status {status!r} (one of {', '.join(GOAL_STATUSES)})")
    sort_order = data.get("sort_order", 0)
    if isinstance(sort_order, bool) or not isinstance(sort_order, int):
        raise c.fail("sort_order", "'sort_order' must be a whole number")
    created = data.get("created_at")
    if isinstance(created, datetime):
        created = created.isoformat()
    created_at = (
        c.check("created_at", parse_instant, str(created), "UTC") if created is not None else None
    )
    return GoalDef(
        goal_id=goal_id,
        name=c.text_field(data.get("name"), "name", required=True, limit=200),
        task=c.text_field(data.get("task"), "task"),
        owner=c.text_field(data.get("owner"), "owner", limit=200),
        status=status,
        sort_order=sort_order,
        created_at=created_at,
        budget=parse_budget(data.get("budget"), c),
    )
