"""The Timeline pane: recent runs and upcoming fires of every intent on a time axis."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import groupby
from typing import TYPE_CHECKING

from rich.text import Text
from textual.message import Message

from goalsui.domain.states import TERMINAL_INTENT, IntentStatus
from goalsui.tui import keys
from goalsui.tui.fmt import (
    INTENT_GLYPH,
    RUN_GLYPH,
    RUN_LOOK,
    Palette,
    countdown,
    elapsed,
    name_cell,
)
from goalsui.tui.model import Dashboard, PlanView
from goalsui.tui.widgets.keyed_table import KeyedTable, Row

if TYPE_CHECKING:
    from goalsui.domain.records import IntentRecord, RunRecord

ZOOM_HOURS = (1, 3, 6, 12, 24, 72)
#: the window shown at start: the last and the next 24 hours
DEFAULT_SPAN = timedelta(hours=24)
EMPTY = "─"
NOW = "┃"
FIRE = "◆"
OVERLAP = "▲"
#: a run status's severity: the worst of the runs in one cell shows
RANK = {status: look[2] for status, look in RUN_LOOK.items()}


def axis_header(width: int, span: timedelta) -> Text:
    """Tick labels for an axis of ``width`` cells over ``[now - span, now + span]``."""
    cells = [" "] * width
    hours = span.total_seconds() / 3600
    unit = "h" if hours >= 1 else "m"
    value = hours if hours >= 1 else hours * 60

    def put(pos: int, label: str) -> None:
        pos = max(0, min(width - len(label), pos))
        for i, ch in enumerate(label):
            cells[pos + i] = ch

    half = width // 2
    put(0, f"-{value:g}{unit}")
    put(half - 1, "now")
    put(width, f"+{value:g}{unit}")
    if width >= 48:  # room for the half-way ticks without touching the others
        put(half // 2 - 2, f"-{value / 2:g}{unit}")
        put(half + half // 2 - 1, f"+{value / 2:g}{unit}")
    return Text("".join(cells))


def render_axis(
    *,
    now: datetime,
    span: timedelta,
    width: int,
    runs: list[RunRecord],
    fires: list[datetime],
    overlaps: list[datetime],
    palette: Palette,
) -> Text:
    """One intent's lane: past runs by status (worst per cell), future fires, overlaps."""
    start = now - span
    step = (2 * span) / max(1, width)
    half = width // 2

    def index(when: datetime) -> int | None:
        i = int((when - start) / step)
        return i if 0 <= i < width else None

    past: dict[int, str] = {}  # a run's status; up to now
    for run in runs:
        i = index(run.started_at)
        if i is None:
            continue
        i = min(i, half)
        old = past.get(i)
        if old is None or RANK.get(run.status, 99) < RANK.get(old, 99):
            past[i] = run.status
    future: dict[int, str] = {}  # a fire or an overlap; after now
    for when in fires:
        i = index(when)
        if i is not None and when >= now:
            future.setdefault(max(i, half + 1), FIRE)
    for when in overlaps:
        i = index(when)
        if i is not None:
            future[max(i, half + 1)] = OVERLAP
    # One string for the lane, styled in a few spans: thousands of lanes stay cheap.
    chars = [EMPTY] * width
    marks: dict[int, str] = {}
    if 0 <= half < width:
        chars[half] = NOW
        marks[half] = f"bold {palette.accent}"
    for i, mark in future.items():
        chars[i] = mark
        marks[i] = f"bold {palette.warning}" if mark == OVERLAP else palette.running
    for i, status in past.items():
        chars[i] = RUN_GLYPH.get(status, "?")
        marks[i] = f"bold {palette.run(status)}"
    text = Text("".join(chars), style=palette.muted)
    # neighbouring cells of one style (their index less their rank is the same) share a span
    cells = enumerate(sorted(marks.items()))
    for (_, style), same in groupby(cells, key=lambda cell: (cell[1][0] - cell[0], cell[1][1])):
        indexes = [i for _, (i, _) in same]
        text.stylize(style, indexes[0], indexes[-1] + 1)
    return text


class TimelineTable(KeyedTable):
    """One row per intent: title, what comes next, and the lane on the time axis."""

    @dataclass
    class Zoomed(Message):
        """The window changed (``+``/``-``): the plan must cover the new ``span``."""

        span: timedelta

    def __init__(self, *, read_only: bool = False, id: str | None = "timeline") -> None:
        super().__init__(id=id)
        keys.bind(self, keys.TIMELINE_SAFE, keys.TIMELINE_ACTIONS, read_only=read_only)
        self.span = DEFAULT_SPAN
        self.filter_text = ""
        self.axis_width = 0
        self.label_width = 26
        self._dash: Dashboard | None = None
        self._plan = PlanView()
        self._palette = Palette()
        self._now: datetime | None = None

    def on_mount(self) -> None:
        self._layout_columns(force=True)

    def on_resize(self) -> None:
        self._layout_columns()

    def _layout_columns(self, force: bool = False) -> None:
        width = self.size.width or 100
        label = 30 if width >= 120 else 24 if width >= 84 else 18
        # 3 columns x 2 cells of padding, and room for a vertical scrollbar.
        axis = max(16, width - label - 11 - 6 - 2)
        if not force and (label, axis) == (self.label_width, self.axis_width):
            return
        self.label_width, self.axis_width = label, axis
        cursor = self.cursor_key
        self.clear(columns=True)
        self.add_column("intent", key="intent", width=label)
        self.add_column("next", key="next", width=11)
        self.add_column(axis_header(axis, self.span), key="axis", width=axis)
        if self._dash is not None and self._now is not None:
            self.sync(self._dash, self._plan, self._now, self._palette)
            if cursor:
                self.move_to_key(cursor)

    def action_zoom(self, delta: int) -> None:
        hours = self.span.total_seconds() / 3600
        position = min(range(len(ZOOM_HOURS)), key=lambda i: abs(ZOOM_HOURS[i] - hours))
        position = max(0, min(len(ZOOM_HOURS) - 1, position + delta))
        self.span = timedelta(hours=ZOOM_HOURS[position])
        self._layout_columns(force=True)
        self.post_message(self.Zoomed(self.span))  # the console plans the new window
        self.notify(f"Timeline: the last and the next {ZOOM_HOURS[position]} h")

    def shown_intents(self, dash: Dashboard, *, filtered: bool = True) -> list[IntentRecord]:
        needle = self.filter_text.lower() if filtered else ""
        out = [  # an ended intent shows while it has recent runs
            i
            for i in dash.intents.values()
            if (i.status not in TERMINAL_INTENT or dash.recent.get(i.id or -1))
            and (not needle or needle in i.title.lower() or needle in (i.goal_id or ""))
        ]
        out.sort(
            key=lambda i: (
                i.goal_id is None,
                i.goal_id or "",
                i.worker or "",
                i.title.lower(),
                i.id or 0,
            )
        )
        return out

    def sync(self, dash: Dashboard, plan: PlanView, now: datetime, palette: Palette) -> None:
        self._dash, self._plan, self._now, self._palette = dash, plan, now, palette
        if not self.columns:
            return
        self.sync_rows([self._row(intent, dash, plan, now) for intent in self.shown_intents(dash)])

    def _row(self, intent: IntentRecord, dash: Dashboard, plan: PlanView, now: datetime) -> Row:
        """An intent's row: its title, what comes next, its lane."""
        iid = intent.id or 0
        return f"intent:{iid}", (
            self._title_cell(intent, dash),
            self._next(intent, dash, now),
            render_axis(
                now=now,
                span=self.span,
                width=self.axis_width,
                runs=dash.recent.get(iid, []),
                fires=plan.fires.get(iid, []),
                overlaps=plan.overlaps.get(iid, []),
                palette=self._palette,
            ),
        )

    def tick(self, now: datetime) -> None:
        """Countdowns every second; the lanes move when the data refreshes."""
        dash = self._dash
        if dash is None:
            return
        self._now = now
        for key in self.row_keys():
            intent = dash.intents.get(int(key.split(":")[1]))
            if intent is None:
                continue
            value = self._next(intent, dash, now)
            if self.get_cell(key, "next") != value:
                self.set_cell_in_place(key, "next", value)

    def _title_cell(self, intent: IntentRecord, dash: Dashboard) -> Text:
        status = "firing" if intent.id in dash.running else intent.status
        text = Text(INTENT_GLYPH.get(status, "?") + " ", style=self._palette.intent(status))
        title = intent.title  # a goal-level intent too (its goal's rows sort beside it)
        if intent.goal_id and intent.worker:
            title = f"{intent.goal_id.rsplit('-', 1)[0]}/{intent.worker}"
        text.append(name_cell(title, self.label_width - 2))
        text.truncate(self.label_width, overflow="ellipsis")
        return text

    def _next(self, intent: IntentRecord, dash: Dashboard, now: datetime) -> Text:
        p = self._palette
        run = dash.running.get(intent.id or -1)
        if run is not None:
            return Text(f"▶ {elapsed(run.started_at, now)}", style=f"bold {p.running}")
        if intent.status == IntentStatus.ACTIVE:
            if intent.kind == "event" and intent.next_run_at is None:
                return Text("on event", style=p.muted)
            return Text(countdown(intent.next_run_at, now), style=p.accent)
        if intent.status == IntentStatus.FAILED:
            return Text("disabled", style=f"bold {p.failed}")
        return Text(
            intent.status, style=p.warning if intent.status == IntentStatus.PAUSED else p.muted
        )

    def selected_intent(self) -> int | None:
        key = self.cursor_key
        return int(key.split(":")[1]) if key else None
