"""What the console shows, read off the UI thread through the service (no Textual): the
dashboard, the plan of the next fires; and from a goal's tree of files, its box counts."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from goalsui.domain.records import IntentRecord, RunRecord, ThreadRecord, TodoRecord
from goalsui.domain.states import IntentStatus
from goalsui.domain.views import quiet_home_thread
from goalsui.errors import GoalsuiError

if TYPE_CHECKING:
    from goalsui.domain.budget import Spend
    from goalsui.domain.planned import PlannedFire
    from goalsui.domain.views import GoalView
    from goalsui.kb.confined import ConfinedTree
    from goalsui.service import Service
    from goalsui.service.quick_costs import BudgetLine

#: how far back the dashboard reads runs (the panes' sparklines and last runs)
RECENT_SPAN = timedelta(hours=24)


@dataclass(frozen=True, slots=True)
class ThreadView:
    thread: ThreadRecord
    todos: list[TodoRecord]

    @property
    def open_count(self) -> int:
        return sum(1 for t in self.todos if not t.done)


@dataclass
class Dashboard:
    """One refresh worth of records for the main screen."""

    at: datetime
    goals: list[GoalView]
    intents: dict[int, IntentRecord] = field(default_factory=dict)
    running: dict[int, RunRecord] = field(default_factory=dict)
    recent: dict[int, list[RunRecord]] = field(default_factory=dict)
    attention: list[RunRecord] = field(default_factory=list)
    disabled: list[IntentRecord] = field(default_factory=list)
    threads: list[ThreadView] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    token: tuple[Any, ...] = ()
    #: True for the quick KB read painted before the records are loaded.
    preview: bool = False
    #: True for records read before the service opened (:mod:`goalsui.service.quick`):
    #: shown like any records; budget lines come with the service's first read.
    early: bool = False
    #: what today's runs reported (None: not loaded) and each goal's budget lines
    spend_today: Spend | None = None
    budgets: dict[str, list[BudgetLine]] = field(default_factory=dict)

    def goal(self, goal_id: str | None) -> GoalView | None:
        return next((g for g in self.goals if g.goal_id == goal_id), None)

    def intent_of(self, goal_id: str, worker: str) -> IntentRecord | None:
        found = (i for i in self.intents.values() if i.goal_id == goal_id and i.worker == worker)
        return next(found, None)

    def last_run(self, intent_id: int | None) -> RunRecord | None:
        runs = self.recent.get(intent_id or -1)  # ids start at 1
        return runs[-1] if runs else None


@dataclass
class PlanView:
    """Predicted fires per intent in the window, and where two runs would overlap."""

    fires: dict[int, list[datetime]] = field(default_factory=dict)
    overlaps: dict[int, list[datetime]] = field(default_factory=dict)


@dataclass
class BoxCounts:
    inbox: int = 0
    outbox: int = 0
    newest_outbox: float = 0.0  # mtime, for "new since you looked"


def load_dashboard(service: Service, now: datetime) -> Dashboard:
    """Everything the main screen needs, in a handful of reads."""
    token = service.overview.change_token()
    goals, intent_rows = service.goals.with_intents()
    intents = {i.id: i for i in (row.record() for row in intent_rows)}
    running = {r.intent_id: r.record() for r in service.runs.running()}
    recent: dict[int, list[RunRecord]] = defaultdict(list)
    for run in service.runs.list(since=now - RECENT_SPAN, limit=20_000):
        recent[run.intent_id].append(run.record())
    for runs in recent.values():
        runs.sort(key=lambda r: (r.started_at, r.id))
    threads = [
        ThreadView(t, todos)
        for t in service.threads.list()
        if not quiet_home_thread(t, todos := service.todos.list(t.id))
    ]
    spend_today, budgets = load_costs(service, goals)
    return Dashboard(
        at=now,
        goals=goals,
        intents=intents,
        running=running,
        recent=dict(recent),
        attention=[r.record() for r in service.runs.list(failed=True, limit=300)],
        disabled=[i for i in intents.values() if i.status == IntentStatus.FAILED],
        threads=threads,
        summary=service.overview.summary(),
        token=token,
        spend_today=spend_today,
        budgets=budgets,
    )


def load_costs(
    service: Service, goals: list[GoalView]
) -> tuple[Spend | None, dict[str, list[BudgetLine]]]:
    """Today's spend (local midnight) and the budget lines of goals that have a budget."""
    try:
        return service.costs.day_total(), service.costs.goal_lines(goals)
    except GoalsuiError:
        return None, {}


def load_plan(service: Service, now: datetime, until: datetime) -> PlanView:
    """Predicted fires until ``until`` with overlap marks, by ``goalsui plan``'s rules."""
    from goalsui.scheduler.plan import plan

    return plan_view(plan(service, now, until))


def plan_view(fires: Iterable[PlannedFire]) -> PlanView:
    """The timeline's marks from a plan: each intent's fires and predicted overlaps."""
    view = PlanView()
    for fire in fires:
        if fire.at is None or fire.kind != "fire":
            continue
        view.fires.setdefault(fire.intent_id, []).append(fire.at)
        if fire.warning:
            view.overlaps.setdefault(fire.intent_id, []).append(fire.at)
    return view


def visible_files(tree: ConfinedTree, rel: str) -> list[dict[str, Any]]:
    """The files of a KB folder, not its folders or hidden files."""
    return [e for e in tree.list(rel) if not e["dir"] and not e["name"].startswith(".")]


def load_boxes(tree_of: Callable[[str], ConfinedTree], goal: GoalView) -> dict[str, BoxCounts]:
    """Inbox/outbox file counts for each worker of an (expanded) goal."""
    out: dict[str, BoxCounts] = {}
    for worker in goal.workers:
        counts = out[worker.name] = BoxCounts()
        for box in ("inbox", "outbox"):
            try:
                entries = visible_files(tree_of(goal.goal_id), f"workers/{worker.name}/{box}")
            except GoalsuiError:
                entries = []
            setattr(counts, box, len(entries))
            if box == "outbox" and entries:
                counts.newest_outbox = max(e["modified"].timestamp() for e in entries)
    return out


def goal_log_count(tree_of: Callable[[str], ConfinedTree], goal_id: str) -> int:
    """The number of entries in a goal's newest log file."""
    try:
        tree = tree_of(goal_id)
        logs = sorted(e["path"] for e in tree.list("log") if e["name"].endswith(".md"))
        text = tree.read(logs[-1]) if logs else ""
    except GoalsuiError:
        return 0
    return sum(1 for line in text.splitlines() if line.startswith("- "))


def list_reports(service: Service) -> list[tuple[str, str, str]]:
    """Every morning report as ``(night, goal_id, rel)``, newest night first. A report is
    listed under its night's start date, also an old one named by its morning."""
    from goalsui.runners.report import list_reports as goal_reports

    found: list[tuple[str, str, str]] = []
    for goal in service.goals.list():
        try:
            reports = goal_reports(service, goal.goal_id)
        except (GoalsuiError, OSError):
            continue
        found += [(r.night.isoformat(), goal.goal_id, f"reports/{r.path.name}") for r in reports]
    found.sort(key=lambda item: (item[0], item[1]), reverse=True)
    return found
