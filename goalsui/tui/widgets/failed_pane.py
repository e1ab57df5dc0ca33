"""The Failed runs pane (and the Failures screen's table): what needs the operator."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets.data_table import ColumnKey

from goalsui.domain.states import RunStatus
from goalsui.domain.transitions import Action, run_allows
from goalsui.tui import keys, run_actions
from goalsui.tui.app_ref import goals_app
from goalsui.tui.fmt import RUN_GLYPH, Palette, compact_time, name_cell, one_line
from goalsui.tui.widgets.keyed_table import KeyedTable, Row

if TYPE_CHECKING:
    from goalsui.domain.records import IntentRecord, RunRecord


#: the status shown for an interrupted run held for the operator's decision
NEEDS_REVIEW = "needs review"
#: the status shown for an intent the scheduler disabled after repeated failures
AUTO_DISABLED = "auto-disabled"


@dataclass(frozen=True)
class FailureItem:
    """A failed/timeout/interrupted/missed run, a run that needs review, or an
    auto-disabled intent."""

    key: str
    when: datetime
    status: str
    intent_id: int
    title: str
    error: str
    run_id: int | None = None
    run_status: str = ""  # the run's own status (a run that needs review is interrupted)
    trigger: str = ""

    @property
    def needs_review(self) -> bool:
        return self.status == NEEDS_REVIEW


def run_error(run: RunRecord) -> str:
    """The reason of a run, else the last line of its output."""
    if run.reason:
        return run.reason
    tail = (run.output_tail or "").strip().splitlines()
    return tail[-1] if tail else ""


def failure_items(
    attention: list[RunRecord], disabled: list[IntentRecord], intents: dict[int, IntentRecord]
) -> list[FailureItem]:
    """Newest first; auto-disabled intents carry their last error."""
    items: list[FailureItem] = []
    for run in attention:
        intent = intents.get(run.intent_id)
        items.append(
            FailureItem(
                key=f"run:{run.id}",
                when=run.finished_at or run.started_at,
                status=NEEDS_REVIEW if run.needs_review else run.status,
                intent_id=run.intent_id,
                title=intent.title if intent else f"intent {run.intent_id}",
                error=run_error(run),
                run_id=run.id,
                run_status=run.status,
                trigger=run.trigger,
            )
        )
    for intent in disabled:
        items.append(
            FailureItem(
                key=f"intent:{intent.id}",
                when=intent.updated_at,
                status=AUTO_DISABLED,
                intent_id=intent.id or 0,
                title=intent.title,
                error=intent.last_error or "",
            )
        )
    items.sort(key=lambda item: item.when, reverse=True)
    return items


class FailedTable(KeyedTable):
    """Columns: when, status, intent, error."""

    def __init__(self, *, read_only: bool = False, id: str | None = "failed") -> None:
        super().__init__(id=id, flex_column="error")
        keys.bind(self, keys.FAILED_SAFE, keys.FAILED_ACTIONS, read_only=read_only)
        self.filter_text = ""
        self.items: dict[str, FailureItem] = {}
        self.narrow = False
        self._last: tuple[list[FailureItem], datetime, Palette] | None = None
        self._error_width = 0

    def on_mount(self) -> None:
        self._layout(force=True)

    def on_resize(self) -> None:
        self._layout()
        super().on_resize()
        error = self.columns.get(ColumnKey("error"))
        if self._last is not None and error is not None and error.width != self._error_width:
            self.sync(*self._last)  # the error text is clipped (with "…") to its column

    def _layout(self, force: bool = False) -> None:
        """Narrow panes give the error column the room: shorter status and intent."""
        narrow = bool(self.size.width) and self.size.width < 90
        if not force and narrow == self.narrow:
            return
        self.narrow = narrow
        cursor = self.cursor_key
        self.clear(columns=True)
        self.add_column("when", key="when", width=11)
        self.add_column("status", key="status", width=10 if narrow else 15)
        self.add_column("intent", key="intent", width=14 if narrow else 24)
        self.add_column("error", key="error")
        self.fit_flex_column()
        if self._last is not None:
            self.sync(*self._last)
            if cursor:
                self.move_to_key(cursor)

    def sync(self, items: list[FailureItem], now: datetime, palette: Palette) -> None:
        self._last = (items, now, palette)
        if not self.columns:
            return
        title_width = self.columns[ColumnKey("intent")].width
        error_width = self._error_width = max(8, self.columns[ColumnKey("error")].width)
        needle = self.filter_text.lower()
        rows: list[Row] = []
        self.items = {}
        for item in items:
            if needle and needle not in f"{item.title} {item.status} {item.error}".lower():
                continue
            self.items[item.key] = item
            warn = item.status in (RunStatus.MISSED, NEEDS_REVIEW)
            colour = palette.warning if warn else palette.failed
            glyph = "?" if item.needs_review else RUN_GLYPH.get(item.status, "✗")
            status = item.status
            if self.narrow:
                status = {"auto-disabled": "disabled", NEEDS_REVIEW: "review"}.get(status, status)
            rows.append(
                (
                    item.key,
                    (
                        Text(compact_time(item.when, now), style=palette.muted),
                        Text(f"{glyph} {status}", style=f"bold {colour}"),
                        Text(name_cell(item.title, title_width)),
                        Text(one_line(item.error, error_width)),
                    ),
                )
            )
        self.sync_rows(rows)

    def selected_item(self) -> FailureItem | None:
        key = self.cursor_key
        return self.items.get(key) if key else None

    # -- the pane's action (bound only in a console that may write) ----------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action != "dismiss":
            return True
        item = self.selected_item() if goals_app(self).service_ready else None
        return bool(item and item.run_id and run_allows(item.run_status, Action.DISMISS))

    def action_dismiss(self) -> None:
        item = self.selected_item()
        if item is not None and item.run_id is not None:
            run_actions.dismiss(self, item.run_id, item.title, needs_review=item.needs_review)
