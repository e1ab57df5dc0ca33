"""A run's full output, following its tail while the run is live."""

from __future__ import annotations

import asyncio

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import RichLog, Static

from goalsui.domain.records import RunRecord
from goalsui.domain.states import RunStatus
from goalsui.domain.transcript import TOOL_LINE
from goalsui.domain.untrusted import plain
from goalsui.tui import keys
from goalsui.tui.app_ref import goals_app
from goalsui.tui.fmt import clock_time, duration, elapsed
from goalsui.tui.notices import WorkerFailures
from goalsui.tui.widgets.footer import Footer


def _line(line: str) -> Text:
    """One log line; a tool call the agent made (``[tool] …``) stands out."""
    return Text(line, style="bold italic" if line.startswith(TOOL_LINE) else "")


class OutputScreen(WorkerFailures, Screen[None]):
    """Follows the bottom by default; scrolling up stops following, ``f``/``end`` resumes."""

    POLL_S = 0.5

    def __init__(self, run_id: int, title: str = "") -> None:
        super().__init__()
        keys.bind(self, [keys.BACK, *keys.OUTPUT_SCREEN])
        self.run_id = run_id
        self.title_text = title
        self.text = ""
        self.written = 0  # characters of self.text already in the log (whole lines only)
        self.live = True
        self.follow = True

    def compose(self) -> ComposeResult:
        yield Static("", id="output-title", markup=False)
        yield RichLog(id="output-log", markup=False, highlight=False, wrap=False, auto_scroll=True)
        yield Footer()

    @property
    def log_widget(self) -> RichLog:
        return self.query_one(RichLog)

    def on_mount(self) -> None:
        self.load()
        self.poll_timer = self.set_interval(self.POLL_S, self.load)

    @work(name="Reading the output", exclusive=True, group="output", exit_on_error=False)
    async def load(self) -> None:
        self.apply(*await asyncio.to_thread(self._read))

    def _read(self) -> tuple[RunRecord, str]:
        service = goals_app(self).service
        run = service.runs.get(self.run_id).record()
        return run, service.runs.output(self.run_id, tail_bytes=4 * 1024 * 1024)

    def apply(self, run: RunRecord, text: str) -> None:
        now = goals_app(self).clock()
        live = run.status == RunStatus.RUNNING
        header = Text()
        header.append(f" run {run.id} ", style="bold reverse")
        header.append(f"  {plain(self.title_text)}  ", style="bold")
        header.append(f"{run.status}", style="bold")
        header.append(f"  trigger {run.trigger}  started {clock_time(run.started_at, now)}")
        if live:
            header.append(f"  running {elapsed(run.started_at, now)}")
        else:
            header.append(f"  took {duration(run.started_at, run.finished_at)}")
            if run.exit_code is not None:
                header.append(f"  exit {run.exit_code}")
        header.append("   following" if self.follow else "   paused (f: follow)", style="italic")
        self.query_one("#output-title", Static).update(header)
        text = plain(text)
        log = self.log_widget
        if not text.startswith(self.text[: self.written]):
            log.clear()
            self.written = 0
        self.text = text
        end = len(text) if not live else text.rfind("\n") + 1
        if end > self.written:
            if self.follow:
                self.follow = log.is_vertical_scroll_end or log.max_scroll_y == 0
            log.auto_scroll = self.follow
            for line in text[self.written : end].splitlines():
                log.write(_line(line))
            self.written = end
        if not live and self.live:
            self.live = False
            self.poll_timer.stop()
            if not text.strip():
                log.write(Text("(no output)", style="dim"))

    def action_follow(self) -> None:
        self.follow = True
        self.log_widget.auto_scroll = True
        self.log_widget.scroll_end(animate=False)

    def action_wrap(self) -> None:
        log = self.log_widget
        log.wrap = not log.wrap
        log.clear()
        for line in self.text[: self.written].splitlines():
            log.write(_line(line))
        self.notify("wrap on" if log.wrap else "wrap off")

    def action_back(self) -> None:
        self.dismiss(None)
