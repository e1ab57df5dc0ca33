"""The nightshift branches of one goal, with keys to read, approve or reject each."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from goalsui.domain.untrusted import plain
from goalsui.errors import GoalsuiError
from goalsui.tui.app_ref import goals_app
from goalsui.tui.notices import WorkerFailures
from goalsui.tui.screens.modals import ConfirmScreen
from goalsui.tui.widgets.keyed_table import KeyedTable

#: A diff longer than this is cut in the viewer (the CLI prints it whole).
MAX_DIFF_CHARS = 200_000


class DiffScreen(ModalScreen[None]):
    """A branch's diff against its base, read-only."""

    BINDINGS = [Binding("escape,q,v", "dismiss", "Close", id="diff.close")]

    def __init__(self, branch: str, diff: str) -> None:
        super().__init__()
        self.branch, self.diff = branch, diff

    def compose(self) -> ComposeResult:
        with Vertical(id="diff-box", classes="modal-box"):
            yield Label(Text(f"Diff of {plain(self.branch)}", style="bold"))
            with VerticalScroll(id="diff-scroll"):
                text = plain(self.diff[:MAX_DIFF_CHARS]) or "(no changes)"
                yield Static(Text(text), id="diff-text")
            yield Label(Text("escape / q: close", style="dim"))


class BranchesPane(WorkerFailures, Container):
    """Branches the nightshift produced for the goal whose report is open."""

    DEFAULT_CSS = """
    BranchesPane #branches-empty { display: none; }
    BranchesPane.-no-branches #branches-empty { display: block; }
    BranchesPane.-no-branches KeyedTable { display: none; }
    """

    BINDINGS = [
        Binding("v", "view_diff", "Diff", id="branches.diff"),
        Binding("a", "approve", "Approve…", id="branches.approve"),
        Binding("d", "reject", "Reject…", id="branches.reject"),
    ]

    goal_id: str | None = None

    @dataclass
    class Counted(Message):
        """The branches of the open goal were read: how many (None: not a nightshift goal)."""

        count: int | None

    def compose(self) -> ComposeResult:
        yield KeyedTable(id="branches-table", flex_column="branch")
        yield Static(
            Text("Not a nightshift goal: no branches to review.", style="dim"),
            id="branches-empty",
            classes="empty-hint",
        )

    def on_mount(self) -> None:
        self.border_title = "Branches to review"
        table = self.query_one(KeyedTable)
        for label, key, width in (
            ("branch", "branch", 40),
            ("commits", "commits", 7),
            ("status", "status", 9),
            ("check", "check", 8),
        ):
            table.add_column(label, key=key, width=width)

    @property
    def service(self) -> Any:
        return goals_app(self).service

    def show_goal(self, goal_id: str) -> None:
        self.goal_id = goal_id
        self.load()

    @work(name="Reading the branches", exclusive=True, group="branches", exit_on_error=False)
    async def load(self) -> None:
        goal_id = self.goal_id
        if goal_id is not None:
            self.show_rows(goal_id, await asyncio.to_thread(self._branches, goal_id))

    def _branches(self, goal_id: str) -> list[Any] | None:
        """The goal's nightshift branches; None: not a nightshift goal."""
        nightshift = self.service.nightshift
        try:
            nightshift.goal(goal_id)
        except GoalsuiError:
            return None
        return list(nightshift.branches(goal_id))

    def show_rows(self, goal_id: str, views: list[Any] | None) -> None:
        if goal_id != self.goal_id:
            return
        self.set_class(views is None, "-no-branches")  # not a nightshift goal
        rows = [
            (
                view.branch,
                (
                    Text(plain(view.branch.removeprefix("nightshift/"))),
                    str(view.commits),
                    view.item.status if view.item else "-",
                    (view.item.check or "-") if view.item else "-",
                ),
            )
            for view in views or []
        ]
        self.query_one(KeyedTable).sync_rows(rows)
        self.border_subtitle = f"{len(rows)}"
        self.post_message(self.Counted(None if views is None else len(rows)))

    def _selected(self) -> str | None:
        key = self.query_one(KeyedTable).cursor_key
        if key is None:
            self.notify("No branch selected", severity="warning")
        return key

    def action_view_diff(self) -> None:
        branch = self._selected()
        if branch is not None:
            self._load_diff(branch)

    @work(name="Reading the diff", exclusive=True, group="branch-diff", exit_on_error=False)
    async def _load_diff(self, branch: str) -> None:
        diff = await asyncio.to_thread(self.service.nightshift.diff, self.goal_id or "", branch)
        self.app.push_screen(DiffScreen(branch, diff))

    def action_approve(self) -> None:
        self._decide("approve", "Merge into the base branch with a merge commit?")

    def action_reject(self) -> None:
        self._decide("reject", "Delete this branch? Its commits are lost.")

    def _decide(self, verb: str, detail: str) -> None:
        branch = self._selected()
        if branch is not None:
            question = f"{verb.capitalize()} {branch}?"
            ConfirmScreen.ask(
                self, question, detail, lambda: self._apply(verb, branch), yes=verb.capitalize()
            )

    @work(name="Deciding the branch", exclusive=True, group="branch-decide", exit_on_error=False)
    async def _apply(self, verb: str, branch: str) -> None:
        nightshift = self.service.nightshift
        action = nightshift.approve if verb == "approve" else nightshift.reject
        self.notify(await asyncio.to_thread(action, self.goal_id or "", branch))
        self.load()
