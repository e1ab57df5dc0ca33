"""Failures: failed, timed-out, interrupted and missed runs, and auto-disabled intents,
with replay, retry, dismiss and resume (none bound in a read-only console)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Container, VerticalScroll
from textual.widgets import Static

from goalsui.domain.interrupts import CONFIG
from goalsui.domain.records import saved_id
from goalsui.domain.states import IntentStatus, RunStatus
from goalsui.domain.transitions import Action, intent_allows, run_allows
from goalsui.domain.untrusted import plain
from goalsui.tui import keys, run_actions
from goalsui.tui.app_ref import goals_app
from goalsui.tui.fmt import clock_time
from goalsui.tui.screens.base import DataScreen
from goalsui.tui.widgets.failed_pane import AUTO_DISABLED, FailedTable, FailureItem, failure_items

if TYPE_CHECKING:
    from goalsui.service import Service


def allows(item: FailureItem, action: Action) -> bool:
    """What the domain's transitions table says of ``action`` on this row: an
    auto-disabled intent is an intent in ``failed``; a run held for review is an
    interrupted run."""
    if item.run_id is None:
        return intent_allows(IntentStatus.FAILED, action)
    if action == Action.RESUME:
        return False  # resuming is an intent's action; a run row offers retry or dismiss
    return run_allows(RunStatus.INTERRUPTED if item.needs_review else item.status, action)


class FailuresScreen(DataScreen[FailureItem]):
    """The whole list, with the selected item's error and output below."""

    ACTIONS = keys.FAILURES_ACTIONS

    HEADING = "Failures"

    def panes(self) -> ComposeResult:
        with Container(id="failures-box", classes="pane") as box:
            box.border_title = "Runs and intents that need you (newest first)"
            yield FailedTable(read_only=True, id="failures-table")
        with VerticalScroll(id="failures-detail", classes="pane") as box:
            box.border_title = "Selected"
            yield Static("", id="failures-text", markup=False)

    @property
    def table(self) -> FailedTable:
        return self.query_one(FailedTable)

    def fetch(self, service: Service) -> list[FailureItem]:
        attention = [r.record() for r in service.runs.list(failed=True, limit=1000)]
        intents = {saved_id(i): i.record() for i in service.intents.list()}
        disabled = [i for i in intents.values() if i.status == IntentStatus.FAILED]
        return failure_items(attention, disabled, intents)

    def show(self, items: list[FailureItem]) -> None:
        app = goals_app(self)
        self.table.sync(items, app.clock(), app.palette)
        self.query_one(
            "#failures-box"
        ).border_subtitle = f"{len(items)} item{'s' if len(items) != 1 else ''}"
        self.describe()

    def describe(self) -> None:
        item = self.table.selected_item()
        text = Text()
        if item is None:
            text.append(
                "Nothing needs you. Failed, missed and interrupted runs show up here.", style="dim"
            )
        else:
            text.append(f"{item.status}", style="bold")
            text.append(f"  {plain(item.title)}  ")
            text.append(f"at {clock_time(item.when, goals_app(self).clock())}", style="dim")
            if item.run_id:
                text.append(f"  run {item.run_id} ({item.trigger})", style="dim")
            text.append("\n\n")
            text.append(plain(item.error) or "(no error text)")
            text.append("\n\n")
            hint = "R retry now   d dismiss   o full output"
            if self.read_only:
                hint = "read-only console: no actions"
            elif item.status == RunStatus.MISSED:
                hint = "r replay this occurrence now   d dismiss"
            elif item.needs_review and item.error.startswith(CONFIG):
                hint = (
                    "The run could not start: fix the configuration (goalsui config set runner "
                    "..., or the worker's runner:), then\n"
                    "R retry it now   d dismiss: resume the schedule from now"
                )
            elif item.needs_review:
                hint = (
                    "The run was interrupted and may have had side effects: check them, then\n"
                    "R retry: start it again now   d dismiss: resume the schedule from now "
                    "without re-running it   o full output"
                )
            elif item.status == AUTO_DISABLED:
                hint = "p resume the intent (planned from now)   R retry at once"
            text.append(hint, style="dim")
        self.query_one("#failures-text", Static).update(text)

    # -- actions ------------------------------------------------------------------------------
    def _item(self) -> FailureItem | None:
        item = self.table.selected_item()
        if item is None:
            self.notify("Nothing selected", severity="warning")
        return item

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        item = self.table.selected_item() if self.is_mounted and self.query(FailedTable) else None
        if action == "replay":
            return item is not None and item.run_id is not None and item.status == RunStatus.MISSED
        if action in ("dismiss", "resume", "retry"):
            return item is not None and allows(item, Action(action))
        return True

    def action_replay(self) -> None:
        item, app = self._item(), goals_app(self)
        if item and item.run_id:
            app.act(f"Replaying missed run {item.run_id}", app.service.runs.replay, item.run_id)

    def action_retry(self) -> None:
        item = self._item()
        if item:
            review = item.run_id if item.needs_review else None
            run_actions.retry(self, item.intent_id, item.title, review)

    def action_dismiss(self) -> None:  # type: ignore[override]  # the 'dismiss run' key
        item = self._item()
        if item and item.run_id:
            run_actions.dismiss(self, item.run_id, item.title, needs_review=item.needs_review)

    def action_resume(self) -> None:
        item, app = self._item(), goals_app(self)
        if item:
            app.act(f"Resumed {item.title}", app.service.intents.resume, item.intent_id)

    def action_open_output(self) -> None:
        item = self._item()
        if item and item.run_id:
            goals_app(self).open_output(item.run_id, item.title)

    def action_copy_id(self) -> None:
        item = self._item()
        if item:
            goals_app(self).copy_id(item.key)
