"""Operator actions on one run, shared by the main screen, the failed pane and the Runs
and Failures screens; each goes through the app to the service in a worker."""

from __future__ import annotations

from textual.dom import DOMNode

from goalsui.tui.app_ref import goals_app


def stop_run(node: DOMNode, run_id: int, title: str) -> None:
    """Ask, then stop the run; its schedule goes on."""
    from goalsui.tui.screens.modals import ConfirmScreen  # loaded when first asked

    app = goals_app(node)
    ConfirmScreen.ask(
        node,
        f"Stop run {run_id} of '{title}'?",
        f"Run {run_id} is stopped (SIGTERM, then SIGKILL) and recorded cancelled. "
        "The schedule goes on: the next run fires as planned.",
        lambda: app.act(f"Stopping run {run_id} of {title}", app.service.runs.stop, run_id),
        yes="Stop it",
        no="Keep it running",
    )


def retry(node: DOMNode, intent_id: int, title: str, review_run: int | None = None) -> None:
    """Fire the intent again at once; ``review_run``: start that run held for review again."""
    app = goals_app(node)
    if review_run is not None:
        app.act(f"Retrying reviewed run {review_run}", app.service.runs.review_retry, review_run)
    else:
        app.act(f"Retrying {title}", app.service.intents.retry, intent_id)


def dismiss(node: DOMNode, run_id: int, title: str, *, needs_review: bool) -> None:
    """Take the run off the failures (one held for review: its intent resumes from now)."""
    app = goals_app(node)
    done = f"Dismissed run {run_id}" + (f"; {title} resumes from now" if needs_review else "")
    app.act(done, app.service.runs.dismiss, run_id)
