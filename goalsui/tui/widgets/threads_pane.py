"""The Threads pane: each thread's checklist, open items first; ``a`` adds a todo,
``space`` (or enter) ticks one off."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from goalsui.tui import keys
from goalsui.tui.app_ref import goals_app
from goalsui.tui.fmt import Palette, one_line
from goalsui.tui.model import ThreadView
from goalsui.tui.widgets.keyed_table import KeyedTable, Row


class ThreadsTable(KeyedTable):
    """Rows ``thread:<id>`` (a heading) and ``todo:<id>`` (a checklist item)."""

    def __init__(self, *, read_only: bool = False, id: str | None = "threads") -> None:
        super().__init__(id=id, show_header=False, flex_column="item")
        keys.bind(self, keys.THREADS_SAFE, keys.THREADS_ACTIONS, read_only=read_only)
        self.read_only = read_only
        self.filter_text = ""
        self.todo_thread: dict[int, int] = {}
        self._last: tuple[list[ThreadView], Palette] | None = None

    def on_mount(self) -> None:
        self.add_column("item", key="item")
        self.fit_flex_column()

    def on_resize(self) -> None:
        super().on_resize()
        if self._last is not None:
            self.sync(*self._last)

    def sync(self, threads: list[ThreadView], palette: Palette) -> None:
        self._last = (threads, palette)
        item_column = ColumnKey("item")
        width = max(10, self.columns[item_column].width) if item_column in self.columns else 200
        needle = self.filter_text.lower()
        rows: list[Row] = []
        self.todo_thread.clear()
        for view in threads:
            t = view.thread
            todos = sorted(view.todos, key=lambda x: (x.done, x.position, x.id or 0))
            if needle:
                todos = [x for x in todos if needle in x.text.lower()]
                if not todos and needle not in t.title.lower():
                    continue
            counts = f"  {view.open_count} open / {len(view.todos)}"
            head = Text.assemble((one_line(t.title, 80), "bold"), (counts, palette.muted))
            if t.private:
                head.append("  private", style=palette.warning)
            head.truncate(width, overflow="ellipsis")
            rows.append((f"thread:{t.id}", (head,)))
            for todo in todos:
                self.todo_thread[todo.id or 0] = t.id or 0
                item = Text("  ")
                if todo.done:
                    item.append("☑ ", style=palette.ok)
                    item.append(one_line(todo.text, 300), style=f"strike {palette.muted}")
                else:
                    item.append("☐ ", style=palette.accent)
                    item.append(one_line(todo.text, 300))
                item.truncate(width, overflow="ellipsis")
                rows.append((f"todo:{todo.id}", (item,)))
        self.sync_rows(rows)

    def selected(self) -> tuple[str, int, int | None] | None:
        """``("thread", thread_id, None)`` or ``("todo", thread_id, todo_id)``."""
        key = self.cursor_key
        if key is None:
            return None
        kind, _, raw = key.partition(":")
        number = int(raw)
        if kind == "thread":
            return "thread", number, None
        return "todo", self.todo_thread.get(number, 0), number

    # -- the pane's actions (bound only in a console that may write) --------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action not in ("add_todo", "toggle_todo"):
            return True
        picked = self.selected() if goals_app(self).service_ready else None
        return picked is not None and (action == "add_todo" or picked[0] == "todo")

    def action_add_todo(self) -> None:
        from goalsui.tui.screens.modals import TextInputScreen

        picked = self.selected()
        if picked is None:
            return
        thread_id, app = picked[1], goals_app(self)

        def added(text: str | None) -> None:
            if text:
                app.act(f"Added: {text}", app.service.todos.add, thread_id, text)

        self.app.push_screen(
            TextInputScreen(f"New todo in thread {thread_id}", "what needs doing?"), added
        )

    def action_toggle_todo(self) -> None:
        picked = self.selected()
        if picked is None or picked[2] is None or self._last is None:
            return
        _, thread_id, todo_id = picked
        todo = next((t for v in self._last[0] for t in v.todos if t.id == todo_id), None)
        if todo is None:
            return
        todos = goals_app(self).service.todos
        if todo.done:
            goals_app(self).act(f"Reopened: {todo.text}", todos.reopen, thread_id, todo_id)
        else:
            goals_app(self).act(f"Done: {todo.text}", todos.complete, thread_id, todo_id)

    @on(DataTable.RowSelected)
    def _row_selected(self) -> None:
        """Enter on a todo ticks it off (or opens it again)."""
        if not self.read_only:
            self.action_toggle_todo()
