"""Events, Threads and the Event log: read-mostly screens over the service's records."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Container, Horizontal, Vertical, VerticalScroll
from textual.widgets import Input, Static

from goalsui.domain.records import (
    EventRecord,
    IntentRecord,
    JournalRecord,
    MessageRecord,
    ThreadRecord,
    TodoRecord,
    saved_id,
)
from goalsui.domain.untrusted import plain
from goalsui.domain.views import quiet_home_thread
from goalsui.tui import keys
from goalsui.tui.app_ref import goals_app
from goalsui.tui.fmt import Palette, clock_time, one_line
from goalsui.tui.notices import ConsoleNotice
from goalsui.tui.screens.base import DataScreen
from goalsui.tui.widgets.compose_box import ComposeBox
from goalsui.tui.widgets.keyed_table import KeyedTable, Row

if TYPE_CHECKING:
    from goalsui.service import Service

#: an event and the titles of the intents it fired
EventItem = tuple[EventRecord, list[str]]
#: a thread, its todos, its messages and its pending replies
ThreadItem = tuple[ThreadRecord, list[TodoRecord], list[MessageRecord], list[IntentRecord]]
#: a journal entry or one of this console's notices
LogItem = JournalRecord | ConsoleNotice


class EventsScreen(DataScreen[EventItem]):
    """Received events, newest first, and which intents each one fired."""

    COLUMNS = (
        ("received", "at", 14),
        ("source", "source", 12),
        ("delivery", "delivery", 18),
        ("fired", "fired", None),
    )
    COUNT_IN = "#events-box"

    HEADING = "Events"

    def panes(self) -> ComposeResult:
        with Horizontal(classes="split"):
            with Container(id="events-box", classes="pane") as box:
                box.border_title = "Received events (newest first)"
                yield KeyedTable(id="events-table")
            with VerticalScroll(id="events-detail", classes="pane") as box:
                box.border_title = "Payload (untrusted data)"
                yield Static("", id="events-text", markup=False)

    def fetch(self, service: Service) -> list[EventItem]:
        """The newest events, each with the titles of the intents it fired."""
        titles = {saved_id(i): i.title for i in service.intents.list()}
        return [
            (e, [titles.get(i, f"intent {i}") for i in e.matched_intent_ids or []])
            for e in service.events.list(limit=500)
        ]

    def row(self, item: EventItem, now: datetime, palette: Palette) -> Row:
        event, fired = item
        return f"event:{event.id}", (
            Text(clock_time(event.received_at, now), style=palette.muted),
            Text(one_line(event.source, 12)),
            Text(one_line(event.delivery_id, 18)),
            Text(
                ", ".join(one_line(f, 40) for f in fired) or "nothing",
                style="" if fired else palette.muted,
            ),
        )

    def describe(self) -> None:
        found = self.selected()
        if found is None:
            text = Text(
                "No events received yet. Send one with 'goalsui event emit SOURCE --data FILE'.",
                style="dim",
            )
        else:
            event, fired = found
            text = Text()
            text.append(f"{event.source} / {plain(event.delivery_id)}\n", style="bold")
            text.append("fired: " + (", ".join(plain(f) for f in fired) or "nothing") + "\n\n")
            text.append(plain(json.dumps(event.payload, indent=2, ensure_ascii=False, default=str)))
        self.query_one("#events-text", Static).update(text)


class ThreadsScreen(DataScreen[ThreadItem]):
    """Threads and their messages, with provenance; a compose box to talk in a thread."""

    COLUMNS = (("open", "open", 5), ("thread", "title", 30))

    ACTIONS = keys.THREADS_SCREEN_ACTIONS

    def __init__(self, *, read_only: bool = False, select: int | None = None) -> None:
        super().__init__(read_only=read_only)
        self.select = select  # a thread to show first (a notification's)

    HEADING = "Threads"

    def panes(self) -> ComposeResult:
        with Horizontal(classes="split"):
            with Container(id="threads-box", classes="pane") as box:
                box.border_title = "Threads"
                yield KeyedTable(id="threads-list", flex_column="title")
            with Vertical(id="threads-right"):
                with VerticalScroll(id="threads-messages", classes="pane") as box:
                    box.border_title = "Messages"
                    yield Static("", id="threads-text", markup=False)
                if not self.read_only:
                    yield ComposeBox(id="threads-compose")

    def fetch(self, service: Service) -> list[ThreadItem]:
        out = []
        for thread in service.threads.list():
            todos = service.todos.list(thread.id)
            messages = service.threads.messages(thread.id, limit=300)
            if quiet_home_thread(thread, todos, messages):
                continue  # a worker's home thread is listed once it holds something
            pending = service.threads.pending_replies(thread.id)
            out.append((thread, todos, messages, pending))
        return out

    def show(self, data: list[ThreadItem]) -> None:
        self.show_items(data)
        if self.select is not None:
            self.query_one(KeyedTable).move_to_key(f"thread:{self.select}")
            self.select = None

    def row(self, item: ThreadItem, now: datetime, palette: Palette) -> Row:
        thread, todos, _, _ = item
        title = Text(one_line(thread.title, 30))
        if thread.private:
            title.append(" (private)", style=palette.warning)
        open_items = sum(1 for t in todos if not t.done)
        return f"thread:{thread.id}", (f"{open_items}/{len(todos)}", title)

    def describe(self) -> None:
        item = self.selected()
        box = self.query_one("#threads-messages", VerticalScroll)
        if item is None:
            self.query_one("#threads-text", Static).update(Text("No threads yet.", style="dim"))
            return
        thread, _todos, messages, pending = item
        palette = goals_app(self).palette
        for compose in self.query(ComposeBox):
            compose.show_replies(pending, palette)
        now = goals_app(self).clock()
        box.border_title = f"Messages · {plain(thread.title)}"
        text = Text()
        if not messages:
            text.append("No messages in this thread.", style="dim")
        for m in messages:
            colour = palette.accent if m.role == "assistant" else palette.text
            text.append(f"{m.role}", style=f"bold {colour}")
            text.append(f"  {clock_time(m.created_at, now)}\n", style=palette.muted)
            if m.provenance:
                text.append(f"↩ {plain(m.provenance)}\n", style=f"italic {palette.running}")
            text.append(plain(m.content).rstrip() + "\n\n")
        self.query_one("#threads-text", Static).update(text)
        box.scroll_end(animate=False)

    def selected_thread_id(self) -> int | None:
        item = self.selected()
        return item[0].id if item else None

    @on(ComposeBox.Send)
    def _send(self, event: ComposeBox.Send) -> None:
        thread_id = self.selected_thread_id()
        if thread_id is None:
            self.notify("Start a thread first (goalsui thread new TITLE)", severity="warning")
            return
        threads = goals_app(self).service.threads
        self._call(threads.say, thread_id, event.text, done="Sent; the reply is on its way")

    def action_compose(self) -> None:
        for compose in self.query(ComposeBox):
            compose.query_one(Input).focus()

    def action_cancel_reply(self) -> None:
        thread_id = self.selected_thread_id()
        if thread_id is not None:
            threads = goals_app(self).service.threads
            self._call(threads.cancel_replies, thread_id, done="Reply cancelled")

    @work(name="Thread", group="thread-actions", exit_on_error=False)
    async def _call(self, call: Any, thread_id: int, *args: Any, done: str) -> None:
        result = await asyncio.to_thread(call, thread_id, *args)
        if result == []:
            self.notify("No reply is pending in this thread")
            return
        self.notify(done)
        self.reload()


class JournalScreen(DataScreen[LogItem]):
    """The event log: what the operator did and what the scheduler did, with times."""

    COLUMNS = (
        ("time", "at", 14),
        ("actor", "actor", 10),
        ("action", "action", 26),
        ("subject", "subject", 30),
        ("detail", "detail", None),
    )
    COUNT_IN = "#journal-box"

    HEADING = "Event log"

    def panes(self) -> ComposeResult:
        with Container(id="journal-box", classes="pane") as box:
            box.border_title = "Operator, scheduler and console notices (newest first)"
            yield KeyedTable(id="journal-table")

    def fetch(self, service: Service) -> list[JournalRecord]:
        return service.journal.recent(limit=1000)

    def show(self, entries: list[JournalRecord]) -> None:
        """The journal's entries and this console's notices, newest first."""
        merged: list[LogItem] = [*entries, *goals_app(self).notices]
        self.show_items(sorted(merged, key=lambda item: item.at, reverse=True))  # stable

    def row(self, item: LogItem, now: datetime, palette: Palette) -> Row:
        at = Text(clock_time(item.at, now), style=palette.muted)
        if isinstance(item, ConsoleNotice):
            style = palette.warning if item.severity != "information" else ""
            return f"n:{item.seq}", (
                at,
                Text("console", style=style),
                Text(one_line(item.title or item.severity, 26)),
                Text(""),
                Text(one_line(item.message, 300)),
            )
        return f"j:{item.id}", (
            at,
            Text(item.actor, style=palette.accent if item.actor == "operator" else palette.running),
            Text(one_line(item.action, 26)),
            Text(one_line(item.subject, 30)),
            Text(one_line(item.detail, 300)),
        )
