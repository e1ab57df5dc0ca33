"""Events, Threads and the Event log: read-mostly screens over the service's records."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Container, Horizontal, Vertical, VerticalScroll
from textual.widgets import Input, Static

from goalsui.domain.goal_views import quiet_home_thread
from goalsui.domain.records import saved_id
from goalsui.domain.untrusted import plain
from goalsui.tui import keys
from goalsui.tui.app_ref import goals_app
from goalsui.tui.fmt import clock_time, one_line
from goalsui.tui.screens.base import DataScreen, title_bar
from goalsui.tui.widgets.compose_box import ComposeBox
from goalsui.tui.widgets.footer import Footer
from goalsui.tui.widgets.keyed_table import KeyedTable

if TYPE_CHECKING:
    from goalsui.service import Service


class EventsScreen(DataScreen):
    """Received events, newest first, and which intents each one fired."""

    COLUMNS = (
        ("received", "at", 14),
        ("source", "source", 12),
        ("delivery", "delivery", 18),
        ("fired", "fired", None),
    )

    def compose(self) -> ComposeResult:
        yield title_bar("Events")
        with Horizontal(classes="split"):
            with Container(id="events-box", classes="pane") as box:
                box.border_title = "Received events (newest first)"
                yield KeyedTable(id="events-table")
            with VerticalScroll(id="events-detail", classes="pane") as box:
                box.border_title = "Payload (untrusted data)"
                yield Static("", id="events-text", markup=False)
        yield Footer()

    def fetch(self, service: Service) -> tuple[list[Any], dict[int, str]]:
        events = service.events.list(limit=500)
        titles = {saved_id(i): i.title for i in service.intents.list()}
        return events, titles

    def show(self, data: tuple[list[Any], dict[int, str]]) -> None:
        events, titles = data
        self.events: dict[str, tuple[Any, list[str]]] = {}
        now = goals_app(self).clock()
        palette = goals_app(self).palette
        rows = []
        for e in events:
            fired = [titles.get(i, f"intent {i}") for i in (e.matched_intent_ids or [])]
            self.events[f"event:{e.id}"] = (e, fired)
            rows.append(
                (
                    f"event:{e.id}",
                    (
                        Text(clock_time(e.received_at, now), style=palette.muted),
                        Text(one_line(e.source, 12)),
                        Text(one_line(e.delivery_id, 18)),
                        Text(
                            ", ".join(one_line(f, 40) for f in fired) or "nothing",
                            style="" if fired else palette.muted,
                        ),
                    ),
                )
            )
        self.query_one(KeyedTable).sync_rows(rows)
        self.query_one("#events-box").border_subtitle = str(len(rows))
        self.describe()

    def describe(self) -> None:
        key = self.query_one(KeyedTable).cursor_key
        found = getattr(self, "events", {}).get(key) if key else None
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


class ThreadsScreen(DataScreen):
    """Threads and their messages, with provenance; a compose box to talk in a thread."""

    COLUMNS = (("open", "open", 5), ("thread", "title", 30))

    ACTIONS = keys.THREADS_SCREEN_ACTIONS

    def __init__(self, *, read_only: bool = False, select: int | None = None) -> None:
        super().__init__(read_only=read_only)
        self.select = select  # a thread to show first (a notification's)

    def compose(self) -> ComposeResult:
        yield title_bar("Threads")
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
        yield Footer()

    def fetch(self, service: Service) -> list[tuple[Any, list[Any], list[Any], list[Any]]]:
        out = []
        for thread in service.threads.list():
            todos = service.todos.list(saved_id(thread))
            messages = service.threads.messages(thread.id, limit=300)
            if quiet_home_thread(thread, todos, messages):
                continue  # a worker's home thread is listed once it holds something
            out.append((thread, todos, messages, service.threads.pending_replies(saved_id(thread))))
        return out

    def show(self, data: list[tuple[Any, list[Any], list[Any], list[Any]]]) -> None:
        self.thread_data = {f"thread:{row[0].id}": row for row in data}
        palette = goals_app(self).palette
        rows = []
        for thread, todos, _, _ in data:
            title = Text(one_line(thread.title, 30))
            if thread.private:
                title.append(" (private)", style=palette.warning)
            open_items = sum(1 for t in todos if not t.done)
            rows.append((f"thread:{thread.id}", (f"{open_items}/{len(todos)}", title)))
        table = self.query_one(KeyedTable)
        table.sync_rows(rows)
        if self.select is not None:
            table.move_to_key(f"thread:{self.select}")
            self.select = None
        self.describe()

    def describe(self) -> None:
        key = self.query_one(KeyedTable).cursor_key
        item = getattr(self, "thread_data", {}).get(key) if key else None
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
        key = self.query_one(KeyedTable).cursor_key
        item = getattr(self, "thread_data", {}).get(key) if key else None
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


class JournalScreen(DataScreen):
    """The event log: what the operator did and what the scheduler did, with times."""

    COLUMNS = (
        ("time", "at", 14),
        ("actor", "actor", 10),
        ("action", "action", 26),
        ("subject", "subject", 30),
        ("detail", "detail", None),
    )

    def compose(self) -> ComposeResult:
        yield title_bar("Event log")
        with Container(id="journal-box", classes="pane") as box:
            box.border_title = "Operator, scheduler and console notices (newest first)"
            yield KeyedTable(id="journal-table")
        yield Footer()

    def fetch(self, service: Service) -> list[Any]:
        return list(service.journal.recent(limit=1000))

    def show(self, entries: list[Any]) -> None:
        now = goals_app(self).clock()
        palette = goals_app(self).palette
        rows = [
            (
                f"j:{e.id}",
                (
                    Text(clock_time(e.at, now), style=palette.muted),
                    Text(
                        e.actor, style=palette.accent if e.actor == "operator" else palette.running
                    ),
                    Text(one_line(e.action, 26)),
                    Text(one_line(e.subject, 30)),
                    Text(one_line(e.detail, 300)),
                ),
            )
            for e in entries
        ]
        notices = list(getattr(self.app, "notices", ()))
        rows += [
            (
                f"n:{n.seq}",
                (
                    Text(clock_time(n.at, now), style=palette.muted),
                    Text("console", style=palette.warning if n.severity != "information" else ""),
                    Text(one_line(n.title or n.severity, 26)),
                    Text(""),
                    Text(one_line(n.message, 300)),
                ),
            )
            for n in notices
        ]
        times = {f"j:{e.id}": e.at for e in entries} | {f"n:{n.seq}": n.at for n in notices}
        rows.sort(key=lambda row: times[row[0]], reverse=True)  # newest first, stable
        self.query_one(KeyedTable).sync_rows(rows)
        self.query_one("#journal-box").border_subtitle = str(len(rows))
