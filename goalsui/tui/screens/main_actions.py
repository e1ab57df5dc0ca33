"""The main screen's operator actions on the selection; which apply is asked of the domain's
transition table, so a key that shows is a key that works."""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Callable
from typing import Any

from textual.app import SuspendNotSupported

from goalsui.domain.states import ATTENTION_RUNS, GoalStatus, IntentStatus
from goalsui.domain.transitions import Action, intent_actions, intent_allows, run_allows
from goalsui.errors import GoalsuiError
from goalsui.tui import run_actions
from goalsui.tui.screens.main_panes import PanesScreen, SelectionKind

PAUSE_TRIGGERS = ("pause", "pause+stop")


def pause_pending(intent: Any) -> bool:
    """A pause was asked while the intent fires (it pauses after its run)."""
    return intent.status == IntentStatus.FIRING and intent.pending_trigger in PAUSE_TRIGGERS


class ActionsPart(PanesScreen):
    """``check_action`` and the ``action_*`` methods the pane bindings name."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Each action here needs the service (and the records), then its own check."""
        check = self._checks().get(action)
        return True if check is None else self.gapp.service_ready and check()

    def _checks(self) -> dict[str, Callable[[], bool]]:
        return {
            "pause": self._can_pause,
            "run_now": self._can_run_now,
            "stop_run": lambda: self._running_run() is not None,
            "end_schedule": lambda: self._intent_allows(Action.END_SCHEDULE),
            "retry": self._can_retry,
            "edit": lambda: self._edit_target() is not None,
            "open_output": self._can_open_output,
        }

    def _intent_allows(self, action: Action) -> bool:
        """The selected intent (not a goal) allows ``action`` in its state."""
        intent = self.intent()
        goal = self.selection.kind == SelectionKind.GOAL
        return intent is not None and not goal and intent_allows(intent.status, action)

    def _can_pause(self) -> bool:
        if self.selection.kind == SelectionKind.GOAL:
            return self.goal() is not None
        intent = self.intent()
        return intent is not None and bool(
            intent_actions(intent.status, pause_pending=pause_pending(intent))
            & {Action.PAUSE, Action.RESUME, Action.REINSTATE}
        )

    def _can_run_now(self) -> bool:
        if self.selection.kind == SelectionKind.GOAL:
            goal = self.goal()
            return goal is not None and any(w.status == IntentStatus.ACTIVE for w in goal.workers)
        intent = self.intent()
        return intent is not None and intent_allows(intent.status, Action.RUN_NOW)

    def _can_retry(self) -> bool:
        if not self._intent_allows(Action.RETRY):
            return False
        intent = self.intent()
        last = self.dash.last_run(intent.id) if self.dash else None
        failing = last is not None and last.status in ATTENTION_RUNS
        return intent.status == IntentStatus.FAILED or intent.consecutive_failures > 0 or failing

    def _can_open_output(self) -> bool:
        tab = self.detail.current if self.is_mounted else None
        return self.selection.run_id is not None or bool(tab and tab.run_id)

    def _running_run(self) -> Any:
        """The selected intent's run while it runs (what ``x`` stops), else None."""
        intent = self.intent()
        if intent is None or self.dash is None or self.selection.kind == SelectionKind.GOAL:
            return None
        run = self.dash.running.get(intent.id)
        return run if run is not None and run_allows(run.status, Action.STOP_RUN) else None

    def _edit_target(self) -> tuple[str, str] | None:
        tab = self.detail.current
        if tab and tab.goal_id and tab.rel and not tab.rel.endswith(("inbox", "outbox", "log")):
            return tab.goal_id, tab.rel  # a KB file (not a folder)
        sel = self.selection
        if sel.kind == SelectionKind.GOAL and sel.goal_id:
            return sel.goal_id, "protocol.md"
        if sel.goal_id and sel.worker:
            return sel.goal_id, f"workers/{sel.worker}/prompt.md"
        return None

    # -- the actions -----------------------------------------------------------------------------
    def action_pause(self) -> None:
        app = self.gapp
        if self.selection.kind == SelectionKind.GOAL:
            goal = self.goal()
            if goal is not None:
                goals, paused = app.service.goals, goal.status == GoalStatus.PAUSED
                verb, call = ("Resumed", goals.resume) if paused else ("Paused", goals.pause)
                app.act(f"{verb} goal {goal.name}", call, goal.goal_id)
            return
        intent = self.intent()
        if intent is None:
            return
        intents, status = app.service.intents, intent.status
        if status == IntentStatus.CANCELLED:
            app.act(f"Reinstated {intent.title}", intents.resume, intent.id)
        elif status in (IntentStatus.PAUSED, IntentStatus.FAILED) or pause_pending(intent):
            app.act(f"Resumed {intent.title}", intents.resume, intent.id)
        else:
            app.act(f"Paused {intent.title}", intents.pause, intent.id)

    def action_run_now(self) -> None:
        from goalsui.tui.screens.modals import ConfirmScreen  # loaded when first asked

        app = self.gapp
        if self.selection.kind != SelectionKind.GOAL:
            intent = self.intent()
            if intent is not None:
                app.act(f"Run now: {intent.title}", app.service.intents.run_now, intent.id)
            return
        goal = self.goal()
        if goal is None:
            return
        ids = [w.intent_id for w in goal.workers if w.status == IntentStatus.ACTIVE and w.intent_id]

        def run_all() -> None:
            for intent_id in ids:
                app.service.intents.run_now(intent_id)

        what = f"{len(ids)} worker{'s' if len(ids) != 1 else ''} of {goal.name}"
        ConfirmScreen.ask(
            self,
            f"Run all {what} now?",
            "Each active worker of the goal fires once, now; their schedules stay.",
            lambda: app.act(f"Run now: {what}", run_all),
            yes="Run them",
            no="Cancel",
        )

    def action_stop_run(self) -> None:
        intent, run = self.intent(), self._running_run()
        if intent is not None and run is not None:
            run_actions.stop_run(self, run.id, intent.title)

    def action_end_schedule(self) -> None:
        from goalsui.tui.screens.modals import ConfirmScreen  # loaded when first asked

        intent = self.intent()
        if intent is None:
            return
        app = self.gapp
        live = self.dash is not None and intent.id in self.dash.running
        detail = "It will not fire again until it is reinstated (p here, or goalsui intent resume)."
        if live:
            detail = "Its running process is stopped (SIGTERM, then SIGKILL). " + detail
        ConfirmScreen.ask(
            self,
            f"End the schedule of '{intent.title}'?",
            detail,
            lambda: app.act(
                f"Ended the schedule of {intent.title}", app.service.intents.cancel, intent.id
            ),
            yes="End it",
            no="Keep it",
        )

    def action_retry(self) -> None:
        intent = self.intent()
        if intent is not None:
            run_actions.retry(self, intent.id, intent.title)

    def action_edit(self) -> None:
        target = self._edit_target()
        if target is not None:
            self.edit_file(*target)

    def edit_file(self, goal_id: str, rel: str) -> None:
        """Open a KB file in $VISUAL/$EDITOR; the app suspends and resumes."""
        app = self.gapp
        if self.read_only:
            return
        try:
            path = app.service.files.path(goal_id, rel)
        except GoalsuiError as exc:
            self.notify(str(exc), severity="error")
            return
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        argv = [*shlex.split(editor), str(path)]
        try:
            with self.app.suspend():
                code = subprocess.call(argv)
        except SuspendNotSupported:
            if os.environ.get("GOALSUI_EDITOR_NO_SUSPEND") != "1":
                self.notify(
                    f"Cannot open an editor here; edit {path} in a terminal", severity="warning"
                )
                return
            code = subprocess.call(argv, stdin=subprocess.DEVNULL)
        except OSError as exc:
            self.notify(f"Cannot run {editor!r}: {exc}", severity="error")
            return
        if code != 0:
            self.notify(f"{editor} exited with {code}", severity="warning")
        app.service.journal.record("file edited", f"{goal_id}/{rel}", actor="operator")
        if rel.endswith("definition.yaml"):
            app.runtime.sync_goals([goal_id])
        self.load_detail()
        app.feed.request_refresh(0)

    def action_open_output(self) -> None:
        tab = self.detail.current
        run_id = self.selection.run_id
        if self.pane == "detail" and tab is not None and tab.run_id:
            run_id = tab.run_id
        if run_id is None:
            self.notify("No run to show here yet", severity="warning")
            return
        intent = self.intent()
        self.gapp.open_output(run_id, intent.title if intent else "")

    def action_copy_id(self) -> None:
        sel = self.selection
        value = {
            "goal": sel.goal_id,
            "worker": f"{sel.goal_id}/{sel.worker}",
            "intent": str(sel.intent_id),
            "run": str(sel.run_id),
            "thread": str(sel.thread_id),
            "todo": str(sel.todo_id),
        }.get(sel.kind)
        if value:
            self.gapp.copy_id(value)
