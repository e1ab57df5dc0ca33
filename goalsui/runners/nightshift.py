"""A nightshift task worker's turn: its planned tasks, each on its own branch and worktree. goalsui
never pushes, fetches or checks out the base branch; the worktree is removed, never the branch."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from goalsui.domain import nightshift as rules
from goalsui.domain.records import saved_id
from goalsui.domain.states import RunStatus
from goalsui.domain.untrusted import plain
from goalsui.errors import GoalsuiError
from goalsui.kb import nightshift as files
from goalsui.kb.repo import Commit, Repo
from goalsui.runners.base import Prepared, Turn, TurnOutcome
from goalsui.runners.command import CommandResult, run_command
from goalsui.runners.deliver import deliver_result, headline
from goalsui.runners.nightshift_strays import Stray, check_strays, committer_env, committer_mark
from goalsui.runners.nightshift_tools import TASK, apply_agent_options, nightshift_agent_options
from goalsui.service.nightshift_templates import ROLES

if TYPE_CHECKING:
    from goalsui.kb.nightshift import Binding
    from goalsui.service import Service
    from goalsui.store.models import Intent

CHECK_TIMEOUT_S = 600.0


def task_turn_context(service: Service, intent: Intent) -> tuple[Binding, Repo, str] | None:
    """(binding, repo, zone) of a nightshift task worker, else None; GoalsuiError if unusable."""
    if not intent.goal_id or not intent.worker:
        return None
    # the operator's binding: a nightshift.yaml changed since is not obeyed (doctor says so)
    binding = service.nightshift.binding_of(intent.goal_id)
    if binding is None:
        return None
    repo = files.checked_repo(binding)
    return binding, repo, service.nightshift.timezone(intent.goal_id)


def _task_prompt(base_prompt: str, item: rules.PlanItem, branch: str, binding: Binding) -> str:
    return (
        f"{base_prompt.rstrip()}\n\n## Tonight's task\n\n{item.task}\n\n"
        f"Your working directory is a git worktree of {binding.repo} on branch {branch}, "
        f"made from {binding.base}. Commit your change on this branch. Do not push, do not "
        f"switch branches, do not touch {binding.base}.\n"
    )


async def run_nightshift_turn(
    turn: Turn, argv: list[str], prepared: Prepared
) -> TurnOutcome | None:
    """Run the worker's planned tasks; None when this is no nightshift task worker."""
    service, intent, run = turn.service, turn.intent, turn.run
    try:
        context = await asyncio.to_thread(task_turn_context, service, intent)
    except GoalsuiError as exc:
        return TurnOutcome("failed", reason=f"cannot start: {exc}")
    if context is None:
        return None
    binding, repo, tz = context
    assert intent.goal_id and intent.worker
    night = service.nightshift.current_night(tz)
    # the night this turn works for, on the scheduler's clock (a replay's, too): the
    # commander's ``nightshift plan add`` takes it as its default
    prepared.env["GOALSUI_NIGHT"] = night.isoformat()
    prepared.env["GOALSUI_STATE_DIR"] = str(service.state_dir)
    if intent.worker in ROLES:
        return None
    plan = await asyncio.to_thread(service.nightshift.plan, intent.goal_id, night)
    items = rules.items_for(plan, night, intent.worker)
    if not items:
        reason = f"nothing planned for the night of {night}"
        return TurnOutcome("skipped", reason=reason, skipped=True)
    summaries: list[str] = []
    failure: TurnOutcome | None = None
    for item in items:
        done, outcome = await _run_item(turn, argv, prepared, item, binding, repo)
        summaries.append(_summary_line(done))
        failure = failure or outcome
    text = "\n".join(summaries) + "\n"
    if failure is not None:
        return replace(failure, output_path=prepared.log_path)
    delivery = await asyncio.to_thread(deliver_result, service, intent, run, text)
    return TurnOutcome(
        "ok",
        output_tail=text[-4000:],
        output_path=prepared.log_path,
        outbox_path=delivery.outbox_path,
    )


def _summary_line(item: rules.PlanItem) -> str:
    check = f", check {item.check}" if item.check else ""
    what = f" ({item.summary})" if item.summary else ""
    return (
        f"- {item.task}: {item.status}, branch {item.branch}, "
        f"{item.commits or 0} commit(s){check}{what}"
    )


async def _run_item(
    turn: Turn,
    argv: list[str],
    prepared: Prepared,
    item: rules.PlanItem,
    binding: Binding,
    repo: Repo,
) -> tuple[rules.PlanItem, TurnOutcome | None]:
    """One task in its own worktree; returns the recorded item and a failure, if any."""
    service, intent, run = turn.service, turn.intent, turn.run
    assert intent.goal_id and intent.worker
    branch = rules.branch_name(item.night, intent.worker, item.task)
    folder = f"run-{run.id}-{rules.slug(item.task, 20)}"
    worktree = service.state_dir / "worktrees" / intent.goal_id / folder
    running = replace(item, status=rules.RUNNING, branch=branch, run_id=run.id)
    await asyncio.to_thread(service.nightshift.set_item, intent.goal_id, running)
    before = await asyncio.to_thread(repo.refs)
    try:
        await asyncio.to_thread(repo.add_worktree, worktree, branch, binding.base)
    except GoalsuiError as exc:
        failed = replace(running, status=rules.FAILED, reason=f"worktree: {exc}")
        await asyncio.to_thread(service.nightshift.set_item, intent.goal_id, failed)
        return failed, TurnOutcome("failed", reason=f"cannot start the task: {exc}")
    # recorded at once (a crash mid-task leaves a branch goalsui still knows it made)
    await asyncio.to_thread(_record_tip, turn, repo, branch)
    task = prepared._replace(
        prompt=_task_prompt(prepared.prompt, item, branch, binding),
        env={**prepared.env, **committer_env(saved_id(run), intent.worker)},
    )
    done = await _work_in_worktree(turn, argv, task, item, worktree, branch, binding, repo)
    mark = committer_mark(saved_id(run), intent.worker)
    judge = partial(check_strays, repo, before, task_branch=branch, night=item.night)
    strays = await asyncio.to_thread(judge, worker=intent.worker, mark=mark)
    await asyncio.to_thread(_record_tip, turn, repo, branch, strays)
    # the base branch moved during the task and was not put back by goalsui
    moved = any(s.ref == f"refs/heads/{binding.base}" and s.flagged_only for s in strays)
    recorded, failure = _recorded(running, done, moved)
    if strays:
        recorded = replace(recorded, stray="; ".join(s.note for s in strays))
    await asyncio.to_thread(service.nightshift.set_item, intent.goal_id, recorded)
    return recorded, failure


def _record_tip(turn: Turn, repo: Repo, branch: str, strays: Sequence[Stray] = ()) -> None:
    """Record that goalsui made ``branch`` and where it points now (what is reviewed), and
    the review branches ``strays`` were moved to."""
    assert turn.intent.goal_id  # a task worker's turn
    record = partial(turn.service.nightshift.record_branch, turn.intent.goal_id, run_id=turn.run.id)
    for stray in strays:
        if stray.moved_to:
            record(stray.moved_to, stray.new or "")
    if repo.branch_exists(branch):
        record(branch, repo.head_of(branch))


#: what a task's runner did in its worktree: its result, its commits and the check's verdict
_Done = tuple[CommandResult, list[Commit], str | None]


async def _work_in_worktree(
    turn: Turn,
    argv: list[str],
    task: Prepared,
    item: rules.PlanItem,
    worktree: Path,
    branch: str,
    binding: Binding,
    repo: Repo,
) -> _Done:
    """Run the task confined to its worktree (no git transports), count commits, check, and
    remove the worktree."""
    agent = str((turn.intent.runner or {}).get("agent") or "")
    options = nightshift_agent_options(agent, TASK, worktree)
    env = {**task.env, **options.env, "GOALSUI_BRANCH": branch, "GOALSUI_WORKTREE": str(worktree)}
    try:
        result = await run_command(
            apply_agent_options(argv, agent, options) if agent else argv,
            stdin=task.prompt,
            cwd=options.cwd,
            env=env,
            timeout=turn.timeout,
            cancel=turn.cancel,
            log_path=task.log_path,
            grace=turn.grace,
            log_header=f"[goalsui] run {turn.run.id}: task {plain(item.task, limit=80)} on {branch}\n",
        )
        if result.status == RunStatus.OK:
            subject = item.task.strip().split("\n", 1)[0][:200] or "the task"
            await asyncio.to_thread(_commit_leftovers, repo, worktree, env, subject)
        commits = await asyncio.to_thread(repo.commits, binding.base, branch)
        check = None
        if result.status == RunStatus.OK and binding.check:
            check = await _run_check(binding.check, worktree, turn, task.env)
    finally:
        with contextlib.suppress(GoalsuiError, OSError):
            await asyncio.to_thread(repo.remove_worktree, worktree)
    return result, commits, check


def _recorded(
    running: rules.PlanItem, done: _Done, moved: bool
) -> tuple[rules.PlanItem, TurnOutcome | None]:
    """The plan item as the task left it, and the turn's failure if it failed."""
    result, commits, check = done
    ok = result.status == RunStatus.OK and not moved
    status = (rules.DONE if commits else rules.NO_COMMITS) if ok else rules.FAILED
    reason = result.reason or ("the base branch moved during the turn" if moved else None)
    recorded = replace(
        running,
        status=status,
        commits=len(commits),
        check=check,
        summary=plain(headline(result.stdout) or "", limit=200) or None,
        reason=reason,
    )
    if status != rules.FAILED:
        return recorded, None
    return recorded, TurnOutcome(
        result.status if result.status != RunStatus.OK else "failed",
        reason=reason,
        exit_code=result.exit_code,
        output_tail=result.output_tail or None,
    )


def _commit_leftovers(repo: Repo, worktree: Path, env: dict[str, str], task: str) -> None:
    """Commit what an ok task left uncommitted (a sandboxed agent cannot; goalsui does)."""
    if repo.is_clean(worktree):
        return
    repo.git("add", "-A", cwd=worktree)
    name = env.get("GIT_COMMITTER_NAME", "goalsui nightshift")
    email = env.get("GIT_COMMITTER_EMAIL", "nightshift@goalsui.invalid")
    identity = ("-c", f"user.name={name}", "-c", f"user.email={email}")
    why = "Committed by goalsui: the task left these changes uncommitted."
    message = f"nightshift: {task}\n\n{why}"
    repo.git(*identity, "commit", "-q", "--no-verify", "-m", message, cwd=worktree)


async def _run_check(argv: tuple[str, ...], worktree: Path, turn: Turn, env: dict[str, str]) -> str:
    result = await run_command(
        argv, cwd=worktree, env=env, timeout=CHECK_TIMEOUT_S, cancel=turn.cancel, grace=turn.grace
    )
    if result.status == RunStatus.OK:
        return "passed"
    return f"failed ({result.reason or result.status})"
