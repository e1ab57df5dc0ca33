"""The reference for ``goalsui bench console``: a bare Textual app of the console's size. It imports
only the standard library and :mod:`goalsui.tui.rss`. Run: ``python -m goalsui.bench.bare_app GOALS
WORKERS OUT_FILE [stay]``; it writes ``paint_t`` and ``paint_rss_kb`` (``VmHWM``) as JSON."""

from __future__ import annotations

import json
import sys
import time

from textual.app import App, ComposeResult
from textual.containers import Container, Horizontal, Vertical
from textual.widgets import DataTable, Footer, Static, Tree

from goalsui.tui.rss import peak_rss_kb

CSS = """
.pane { border: round $primary; }
#left { width: 42%; }
#goals-pane { height: 3fr; }
#threads-pane { height: 2fr; }
#timeline-pane { height: 2fr; }
#failed-pane { height: 1fr; }
#detail-pane { height: 3fr; }
#status { height: 1; }
"""


class BareApp(App[None]):
    CSS = CSS

    def __init__(self, goals: int, workers: int, out: str, stay: bool = False) -> None:
        super().__init__()
        self.n_goals, self.n_workers, self.out, self.stay = goals, workers, out, stay

    def compose(self) -> ComposeResult:
        yield Static("status: scheduler off | 0 running | 0 due | 0 failed", id="status")
        with Horizontal():
            with Vertical(id="left"):
                with Container(id="goals-pane", classes="pane"):
                    yield Tree("KB", id="tree")
                with Container(id="threads-pane", classes="pane"):
                    yield DataTable(id="threads")
            with Vertical():
                with Container(id="timeline-pane", classes="pane"):
                    yield DataTable(id="timeline")
                with Container(id="failed-pane", classes="pane"):
                    yield DataTable(id="failed")
                with Container(id="detail-pane", classes="pane"):
                    yield Static("\n".join(f"line {i} of the selected file" for i in range(40)))
        yield Footer()

    def on_mount(self) -> None:
        tree: Tree[None] = self.query_one(Tree)
        tree.show_root = False
        expand = self.n_goals * self.n_workers <= 40
        for g in range(self.n_goals):
            node = tree.root.add(f"Goal {g}  active  next in 1h00m", expand=expand)
            for w in range(self.n_workers):
                worker = node.add(f"● w{w}  in 1h00m  cron 0 {w} * * * Europe/Berlin")
                for box in ("inbox", "outbox", "runs"):
                    worker.add_leaf(box)
            node.add_leaf("log  3 today")
        threads = self.query_one("#threads", DataTable)
        threads.add_column("item")
        for i in range(10):
            threads.add_row(f"  ☐ todo number {i} of the checklist")
        timeline = self.query_one("#timeline", DataTable)
        timeline.add_columns("intent", "next", "axis")
        for g in range(self.n_goals):
            for w in range(self.n_workers):
                timeline.add_row(f"goal-{g}/w{w}", "in 1h00m", "─" * 60 + "◆" + "─" * 20)
        failed = self.query_one("#failed", DataTable)
        failed.add_columns("when", "status", "intent", "error")
        self.call_after_refresh(self.painted)

    def painted(self) -> None:
        with open(self.out, "w", encoding="utf-8") as fh:
            json.dump({"paint_t": time.time(), "paint_rss_kb": peak_rss_kb()}, fh)
        if not self.stay:
            self.exit()


if __name__ == "__main__":
    stay = sys.argv[4:5] == ["stay"]
    BareApp(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], stay).run()
