"""``goalsui plan``: predicted fires and the rule behind each, with an injected clock."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from subprocess import CompletedProcess

import pytest

from goalsui.cli import main
from goalsui.domain.planned import PlannedFire, parse_until
from goalsui.errors import ValidationError
from goalsui.kb.layout import WorkerSeed
from goalsui.scheduler.plan import plan as service_plan
from goalsui.service import Service
from goalsui.service.quick import sqlite_file
from goalsui.service.quick_plan import read_plan
from goalsui.store.models import Intent, IntentRun
from tests.base_kit import run_cli


@pytest.fixture
def svc(empty_kb: Path, make_service, clock) -> Service:
    return make_service(empty_kb, clock=clock)


def plan(
    svc: Service, now: datetime, until: datetime, goal_id: str | None = None
) -> list[PlannedFire]:
    """The service's plan, checked against the console's standard-library read of it."""
    items = service_plan(svc, now, until, goal_id)
    db = sqlite_file(svc.kb.root, svc.db_url, None)
    assert db is not None
    quick = read_plan(db, svc.kb.root, now, until)
    assert quick is not None
    assert [f for f in quick if goal_id is None or f.goal_id == goal_id] == items
    return items


def update(service: Service, intent_id: int, **values: object) -> None:
    with service.store.write() as s:
        row = s.get(Intent, intent_id)
        assert row is not None
        for key, value in values.items():
            setattr(row, key, value)
        s.add(row)


def cron(service: Service, expr: str, tz: str, title: str = "job", **kw: object) -> Intent:
    return service.intents.create(
        title=title, instruction="x", kind="cron", schedule=expr, timezone=tz, **kw
    )


def fires(items: list[PlannedFire], intent_id: int | None = None) -> list[PlannedFire]:
    return [
        f for f in items if f.kind == "fire" and (intent_id is None or f.intent_id == intent_id)
    ]


def lines(items: list[PlannedFire]) -> list[str]:
    return [f.line() for f in items]


# -- cron and DST ---------------------------------------------------------------------------
def test_berlin_spring_forward_daily_in_the_gap(svc: Service, clock) -> None:
    clock.set(datetime(2026, 3, 28, 12, 0, tzinfo=UTC))
    intent = cron(svc, "30 2 * * *", "Europe/Berlin", "gap job")
    items = fires(plan(svc, clock.now, clock.now + timedelta(days=2)), intent.id)
    assert [f.local() for f in items] == ["2026-03-29 03:00 +02:00", "2026-03-30 02:30 +02:00"]
    assert (
        items[0]
        .line()
        .startswith(
            "2026-03-29 03:00 +02:00  intent 1 (gap job)  cron 30 2 * * * (Europe/Berlin); DST gap"
        )
    )
    assert "DST" not in items[1].rule


def test_berlin_fall_back_daily_fires_once_hourly_twice(svc: Service, clock) -> None:
    clock.set(datetime(2026, 10, 24, 12, 0, tzinfo=UTC))
    daily = cron(svc, "30 2 * * *", "Europe/Berlin", "daily")
    hourly = cron(svc, "0 * * * *", "Europe/Berlin", "hourly")
    items = plan(svc, clock.now, datetime(2026, 10, 26, 2, 0, tzinfo=UTC))
    assert [f.local() for f in fires(items, daily.id)] == [
        "2026-10-25 02:30 +02:00",
        "2026-10-26 02:30 +01:00",
    ]
    assert "first occurrence only" in fires(items, daily.id)[0].rule
    around = [
        f.local()
        for f in fires(items, hourly.id)
        if "2026-10-25 01:00" <= f.local()[:16] <= "2026-10-25 03:00"
    ]
    assert around == [
        "2026-10-25 01:00 +02:00",
        "2026-10-25 02:00 +02:00",
        "2026-10-25 02:00 +01:00",
        "2026-10-25 03:00 +01:00",
    ]


def test_new_york_and_sydney_transitions(svc: Service, clock) -> None:
    clock.set(datetime(2026, 3, 7, 12, 0, tzinfo=UTC))
    ny = cron(svc, "30 2 * * *", "America/New_York", "ny")
    items = fires(plan(svc, clock.now, clock.now + timedelta(days=2)), ny.id)
    assert [f.local() for f in items] == ["2026-03-08 03:00 -04:00", "2026-03-09 02:30 -04:00"]
    clock.set(datetime(2026, 4, 4, 0, 0, tzinfo=UTC))
    syd = cron(svc, "30 2 * * *", "Australia/Sydney", "syd")
    items = fires(plan(svc, clock.now, clock.now + timedelta(days=2)), syd.id)
    assert [f.local() for f in items] == ["2026-04-05 02:30 +11:00", "2026-04-06 02:30 +10:00"]
    assert "first occurrence only" in items[0].rule


# -- lifecycle rules ----------------------------------------------------------------------------
def test_paused_and_auto_disabled_say_so_once_and_fire_nothing(svc: Service, clock) -> None:
    paused = cron(svc, "*/5 * * * *", "UTC", "paused one")
    svc.intents.pause(paused.id)
    failed = cron(svc, "*/5 * * * *", "UTC", "broken one")
    update(
        svc,
        failed.id,
        status="failed",
        consecutive_failures=5,
        last_error="exit 1: boom",
        next_run_at=None,
    )
    done = cron(svc, "*/5 * * * *", "UTC", "cancelled one")
    svc.intents.cancel(done.id)
    items = plan(svc, clock.now, clock.now + timedelta(hours=24))
    assert fires(items) == []
    notes = [f for f in items if f.kind == "note"]
    assert len([n for n in notes if n.intent_id == paused.id]) == 1
    assert "paused: nothing fires until it is resumed" in next(
        n.rule for n in notes if n.intent_id == paused.id
    )
    failed_note = next(n.rule for n in notes if n.intent_id == failed.id)
    assert "auto-disabled after 5 consecutive failures: nothing fires" in failed_note
    assert "exit 1: boom" in failed_note
    assert not any(n.intent_id == done.id for n in items)


def test_quiet_hours_skip_and_collapse(svc: Service, clock) -> None:
    thread = svc.threads.create("Inbox")
    hb = svc.intents.create(
        title="hb",
        instruction="look",
        kind="heartbeat",
        schedule="1h",
        thread_id=thread.id,
        checklist="- [ ] consulate email?",
        timezone="Europe/Berlin",
        active_hours={"start": "08:00", "end": "22:00", "timezone": "Europe/Berlin"},
    )
    items = [
        f for f in plan(svc, clock.now, clock.now + timedelta(hours=24)) if f.intent_id == hb.id
    ]
    fired = [f.local()[11:16] for f in items if f.kind == "fire"]
    assert fired[:8] == ["14:00", "15:00", "16:00", "17:00", "18:00", "19:00", "20:00", "21:00"]
    assert fired[8:] == ["08:00", "09:00", "10:00", "11:00", "12:00", "13:00"]
    skips = [f for f in items if f.kind == "skip"]
    assert len(skips) == 1 and skips[0].count == 10
    assert skips[0].rule == "skipped: quiet-hours (active 08:00-22:00 Europe/Berlin)"
    assert skips[0].line().endswith("(10 ticks until 07:00)")


def test_empty_checklist_heartbeat_costs_nothing(svc: Service, clock) -> None:
    thread = svc.threads.create("Inbox")
    hb = svc.intents.create(
        title="hb",
        instruction="look",
        kind="heartbeat",
        schedule="30m",
        thread_id=thread.id,
        checklist="# Inbox heartbeat\n\n- [ ]\n",
    )
    items = [
        f for f in plan(svc, clock.now, clock.now + timedelta(hours=3)) if f.intent_id == hb.id
    ]
    assert [f.kind for f in items] == ["skip"]
    assert items[0].count == 6 and items[0].rule == "skipped: empty-checklist (zero runner calls)"


def test_max_fires_and_expiry(svc: Service, clock) -> None:
    limited = cron(svc, "0 * * * *", "UTC", "three times", max_fires=3)
    expiring = cron(svc, "0 * * * *", "UTC", "expiring", expires_at=clock.now + timedelta(hours=5))
    items = plan(svc, clock.now, clock.now + timedelta(hours=24))
    limited_fires = fires(items, limited.id)
    assert len(limited_fires) == 3
    assert limited_fires[-1].rule.endswith("max_fires 3 reached: then done")
    assert [f.local()[11:16] for f in fires(items, expiring.id)] == [
        "13:00",
        "14:00",
        "15:00",
        "16:00",
    ]
    assert any(
        f.intent_id == expiring.id and f.kind == "note" and "expires at" in f.rule for f in items
    )
    update(svc, limited.id, fires=3)
    again = plan(svc, clock.now, clock.now + timedelta(hours=24))
    assert fires(again, limited.id) == []
    assert "max_fires 3 reached" in next(f.rule for f in again if f.intent_id == limited.id)


def test_pending_retry_run_now_and_catch_up(svc: Service, clock) -> None:
    retrying = cron(svc, "0 20 * * *", "UTC", "retrying")
    update(
        svc,
        retrying.id,
        consecutive_failures=2,
        next_run_at=clock.now + timedelta(seconds=4),
        pending_trigger="retry",
    )
    items = fires(plan(svc, clock.now, clock.now + timedelta(hours=12)), retrying.id)
    assert items[0].at == clock.now + timedelta(seconds=4)
    assert items[0].rule == "retry after 2 consecutive failures (backoff 4s)"
    assert items[1].rule == "cron 0 20 * * * (UTC)" and items[1].local()[11:16] == "20:00"

    now_one = cron(svc, "0 20 * * *", "UTC", "run me")
    svc.intents.run_now(now_one.id)
    items = fires(plan(svc, clock.now, clock.now + timedelta(hours=12)), now_one.id)
    assert items[0].at == clock.now and items[0].rule == "run-now pending"
    assert items[1].local()[11:16] == "20:00"

    late = cron(svc, "0 20 * * *", "UTC", "late")
    update(svc, late.id, next_run_at=clock.now - timedelta(hours=2))
    items = fires(plan(svc, clock.now, clock.now + timedelta(hours=12)), late.id)
    assert items[0].at == clock.now and items[0].rule.startswith("overdue since")
    very_late = cron(svc, "0 20 * * *", "UTC", "very late")
    update(svc, very_late.id, next_run_at=clock.now - timedelta(hours=30))
    items = [
        f
        for f in plan(svc, clock.now, clock.now + timedelta(hours=12))
        if f.intent_id == very_late.id
    ]
    assert items[0].kind == "skip" and items[0].rule.startswith("missed:")
    assert fires(items)[0].local()[11:16] == "20:00"


def test_event_intent_cooldown_note(svc: Service, clock) -> None:
    ev = svc.intents.create(
        title="ci", instruction="x", kind="event", event_source="ci", cooldown="10m"
    )
    update(svc, ev.id, last_fired_at=clock.now - timedelta(minutes=2))
    items = [
        f for f in plan(svc, clock.now, clock.now + timedelta(hours=1)) if f.intent_id == ev.id
    ]
    assert len(items) == 1 and items[0].kind == "note"
    assert (
        "waits for events from 'ci', cooldown 10m (events before 2026-12-02 12:08 +00:00 fire nothing)"
        in items[0].rule
    )


# -- overlaps ----------------------------------------------------------------------------------
def goal_with_two_workers(svc: Service) -> tuple[str, Intent, Intent]:
    def seed(name: str, expr: str) -> WorkerSeed:
        return WorkerSeed(
            name,
            {
                "schedule": {"cron": expr, "timezone": "Europe/Berlin"},
                "runner": {"command": ["true"]},
                "timeout": "10m",
            },
        )

    view = svc.goals.create(
        "Nightshift", "t", [seed("scout", "0 20 * * *"), seed("auditor", "5 20 * * *")]
    )
    return (
        view.goal_id,
        svc.workers.intent(view.goal_id, "scout"),
        svc.workers.intent(view.goal_id, "auditor"),
    )


def add_runs(svc: Service, intent_id: int, seconds: list[float], clock) -> None:
    with svc.store.write() as s:
        for n, length in enumerate(seconds, start=1):
            start = clock.now - timedelta(hours=n)
            s.add(
                IntentRun(
                    intent_id=intent_id,
                    status="ok",
                    started_at=start,
                    finished_at=start + timedelta(seconds=length),
                )
            )


def test_two_workers_starting_close_together_are_not_a_conflict(svc: Service, clock) -> None:
    goal, scout, auditor = goal_with_two_workers(svc)
    items = fires(plan(svc, clock.now, clock.now + timedelta(hours=12), goal))
    assert [f.line()[:45] for f in items] == [
        "2026-12-02 20:00 +01:00  nightshift/scout  cr",
        "2026-12-02 20:05 +01:00  nightshift/auditor  ",
    ]
    assert all(f.warning is None for f in items)
    assert items[1].length_basis == "timeout 10m"


def test_an_intent_overlapping_itself_uses_timeout_then_p95(svc: Service, clock) -> None:
    thread = svc.threads.create("Inbox")
    hb = svc.intents.create(
        title="poll",
        instruction="look",
        kind="heartbeat",
        schedule="5m",
        thread_id=thread.id,
        timeout="12m",
    )
    items = fires(plan(svc, clock.now, clock.now + timedelta(minutes=30)), hb.id)
    flagged = [f for f in items if f.warning]
    # a 12 min timeout: of fires every 5 min, the two after each kept one collide with it
    assert len(items) == 6 and len(flagged) == 4
    assert [items.index(f) for f in flagged] == [1, 2, 4, 5]
    assert "conflict" in (flagged[0].warning or "") and "timeout 12m" in (flagged[0].warning or "")
    assert flagged[0].overlaps_with == hb.id
    # Observed runs decide once there are some: p95 of 19 short runs and one of 6 min.
    add_runs(svc, hb.id, [30.0] * 19 + [360.0], clock)
    items = fires(plan(svc, clock.now, clock.now + timedelta(minutes=30)), hb.id)
    assert items[0].length_basis == "p95 30.0s of 20 runs"
    assert all(f.warning is None for f in items)


def test_a_live_run_of_the_same_intent_conflicts_only_with_itself(svc: Service, clock) -> None:
    goal, scout, auditor = goal_with_two_workers(svc)
    clock.set(datetime(2026, 12, 2, 19, 2, tzinfo=UTC))  # 20:02 Berlin: scout started at 20:00
    update(svc, scout.id, status="firing")
    with svc.store.write() as s:
        s.add(
            IntentRun(
                intent_id=scout.id, status="running", started_at=clock.now - timedelta(minutes=2)
            )
        )
    items = plan(svc, clock.now, clock.now + timedelta(hours=1), goal)
    assert any(
        f.kind == "note" and f.intent_id == scout.id and "running now" in f.rule for f in items
    )
    assert fires(items, auditor.id)[0].warning is None


# -- --until and the command line -----------------------------------------------------------------
def test_parse_until(clock) -> None:
    now = clock.now  # 2026-12-02 12:00 UTC = 13:00 Berlin
    assert parse_until("8h", now) == now + timedelta(hours=8)
    assert parse_until("1h30m", now) == now + timedelta(minutes=90)
    assert parse_until("07:30", now, "Europe/Berlin") == datetime(2026, 12, 3, 6, 30, tzinfo=UTC)
    assert parse_until("14:00", now, "Europe/Berlin") == datetime(2026, 12, 2, 13, 0, tzinfo=UTC)
    assert parse_until("2026-12-03T07:30", now, "Europe/Berlin") == datetime(
        2026, 12, 3, 6, 30, tzinfo=UTC
    )
    assert parse_until("2026-12-03T07:30:00Z", now) == datetime(2026, 12, 3, 7, 30, tzinfo=UTC)
    for bad in ("soon", "25:00", ""):
        with pytest.raises(ValidationError):
            parse_until(bad, now, "UTC")


def test_plan_window_is_checked(svc: Service, clock) -> None:
    with pytest.raises(ValidationError):
        plan(svc, clock.now, clock.now - timedelta(hours=1))
    with pytest.raises(ValidationError):
        plan(svc, clock.now, clock.now + timedelta(days=40))


def plan_cli(kb: Path, state: Path, *args: str, tz: str = "UTC") -> CompletedProcess[str]:
    """``goalsui plan ARGS`` in a process of its own, in ``tz`` on a 160-column screen."""
    return run_cli("plan", *args, kb=kb, state=state, extra_env={"TZ": tz, "COLUMNS": "160"})


def test_plan_cli_summary_fits_one_screen(sample_kb: Path, tmp_path: Path) -> None:
    state = tmp_path / "cli-state"
    done = plan_cli(sample_kb, state, tz="America/New_York")
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert len(out) <= 48 and max(len(line) for line in out) <= 160
    # one timezone for every time shown: local (TZ) by default
    assert out[0].startswith("Plan from ") and out[0].count("-05:00") == 2
    # the headline counts the rows' fires: two heartbeats capped at 500, six daily crons, and
    # the weekly ones that fall in this 24 h (it depends on the day: at most two do)
    total = sum(int(row.split()[1].rstrip("+")) for row in out[2:-1])
    assert f"at least {total} fires" in out[0] and "conflict" not in out[0]
    assert 1006 <= total <= 1008
    for worker, first in (("commander", "14:00"), ("reporter", "01:30")):
        row = next(line for line in out if line.startswith(f"nightshift/{worker} "))
        assert f"{first}  [cron " in row and row.split()[1] == "1"
    pulse = next(line for line in out if line.startswith("demo-pulse/pulse "))
    assert pulse.split()[1] == "500+" and "[heartbeat every 1m]" in pulse
    assert out[-1] == "(--full lists every fire)"
    berlin = plan_cli(sample_kb, state, "--tz", "Europe/Berlin", "--goal", "nightshift-979afc6e")
    assert berlin.returncode == 0, berlin.stderr
    assert "(Europe/Berlin): 6 fires" in berlin.stdout.splitlines()[0]
    assert "nightshift/commander" in berlin.stdout and "20:00  [cron 0 20" in berlin.stdout


def test_plan_cli_full_and_json(sample_kb: Path, tmp_path: Path, capsys) -> None:
    base = ["--kb", str(sample_kb), "--state-dir", str(tmp_path / "cli-state")]
    assert main([*base, "plan", "--until", "24h", "--goal", "nightshift-979afc6e", "--full"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("Plan for goal nightshift-979afc6e from ") and out[0].endswith(
        ": 6 fires"
    )
    body = [line for line in out[1:] if line.strip()]
    assert len(body) == 6
    for worker, expr in (
        ("commander", "0 20"),
        ("scout", "30 20"),
        ("librarian", "0 23"),
        ("auditor", "30 2"),
        ("gardener", "0 5"),
        ("reporter", "30 7"),
    ):
        assert any(
            f"  nightshift/{worker}  cron {expr} * * * (Europe/Berlin)" in line for line in body
        )
    assert main([*base, "plan", "--until", "2h", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"from", "until", "fires", "skipped", "notes", "warnings"}
    assert all({"at", "intent_id", "label", "rule", "warning"} <= set(f) for f in data["fires"])
    assert any(f["label"] == "demo-pulse/pulse" for f in data["fires"])
    assert main([*base, "plan", "--until", "soon"]) == 1
    assert "invalid --until" in capsys.readouterr().err
    assert main([*base, "plan", "--goal", "no-such-goal"]) == 1
