"""One isolated turn: pick the runner, assemble the prompt, run it, deliver the result. It never
raises for a runner problem (every ending is a TurnOutcome); blocking work runs in threads."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goalsui.domain.capabilities import speaks_mcp
from goalsui.domain.records import MessageRecord, TodoRecord, saved_id
from goalsui.domain.redact import redact_argv
from goalsui.domain.replies import is_reply
from goalsui.domain.states import GoalStatus, RunStatus
from goalsui.domain.untrusted import plain
from goalsui.errors import GoalsuiError
from goalsui.kb.authoring import enforce_state_bound, state_snapshot
from goalsui.kb.config import NO_RUNNER
from goalsui.runners.base import Prepared, Turn, TurnOutcome
from goalsui.runners.budget_gate import budget_outcome
from goalsui.runners.command import DEFAULT_GRACE, build_env, format_timeout, run_command
from goalsui.runners.deliver import deliver_result, delivery_problem, log_failure
from goalsui.runners.nightshift import run_nightshift_turn
from goalsui.runners.nightshift_tools import (
    COMMANDER,
    AgentOptions,
    apply_agent_options,
    nightshift_agent_options,
)
from goalsui.runners.presets import (
    MCP_STDIO_CONFIG,
    TurnTools,
    expand_placeholders,
    mcp_documents,
    preset_env,
    runner_argv,
    write_mcp_config,
)
from goalsui.runners.prompt import (
    MAX_CONTEXT_MESSAGES,
    TurnContext,
    WorkerContext,
    build_messages,
    event_block,
    render_prompt,
    worker_instructions,
    worker_prompt_with_data,
    worker_shim,
)
from goalsui.runners.tool_access import no_tools_reason, turn_tools
from goalsui.runners.usage import parse_output
from goalsui.store.models import Event, Intent, IntentRun

if TYPE_CHECKING:
    from goalsui.service import Service


log = logging.getLogger("goalsui.runners")


def resolve_runner(service: Service, intent: Intent) -> dict[str, Any]:
    """The intent's runner, else its home worker's (a follow-up), else the KB default ({})."""
    if intent.runner:
        return dict(intent.runner)
    owner = _home_worker(service, intent)
    if owner is not None:
        return owner
    default = service.config().runner
    return default.as_dict() if default is not None else {}


def _home_worker(service: Service, intent: Intent) -> dict[str, Any] | None:
    """The runner of the worker whose home thread ``intent`` lives in, if it has one."""
    if intent.worker or intent.thread_id is None:
        return None
    with contextlib.suppress(GoalsuiError):
        thread = service.threads.get(intent.thread_id)
        if thread.goal_id and thread.worker:
            wdef = service.kb.load_goal(thread.goal_id).workers.get(thread.worker)
            if wdef is not None and wdef.runner is not None:
                return dict(wdef.runner.as_dict())
    return None


def resolve_timeout(service: Service, intent: Intent) -> float:
    """Seconds: the intent's ``timeout_s``, else the KB default."""
    return float(intent.timeout_s) if intent.timeout_s else service.config().timeout.total_seconds()


def assemble_prompt(
    service: Service, intent: Intent, event: Event | None, run: IntentRun | None = None
) -> str:
    """The runner's stdin text (blocking: database and, for a plain tick, the KB files)."""
    config = service.config()
    kb_root = str(service.kb.root)
    data = event_block(event.source, event.delivery_id, event.payload) if event else None
    if intent.goal_id and intent.worker:
        if speaks_mcp(resolve_runner(service, intent)):  # its agent reads the files
            shim = worker_shim(
                intent.goal_id, intent.worker, kb_root, silent_token=config.silent_token
            )
            return worker_prompt_with_data(shim, checklist=intent.checklist, event=data)

        def read(rel: str) -> str | None:
            try:
                return service.files.read(intent.goal_id or "", rel)
            except GoalsuiError:
                return None

        goal_name = None
        with contextlib.suppress(GoalsuiError):
            goal_name = service.goals.get(intent.goal_id).name
        worker_ctx = WorkerContext(
            goal_id=intent.goal_id,
            worker=intent.worker,
            kb_root=kb_root,
            goal_name=goal_name,
            run_id=run.id if run is not None else None,
            now=service.now(),
            timezone=intent.timezone,
            prompt=read(f"workers/{intent.worker}/prompt.md"),
            protocol=read("protocol.md"),
            silent_token=config.silent_token,
        )
        rendered = worker_instructions(worker_ctx, checklist=intent.checklist, event=data)
        return render_prompt(rendered)
    todos: list[TodoRecord] = []
    messages: list[MessageRecord] = []
    thread_title = None
    if intent.thread_id is not None:  # build_messages shows at most 10 todos and goals
        thread_title = service.threads.get(intent.thread_id).title
        todos = service.todos.list(intent.thread_id, include_done=False)
        messages = service.threads.messages(intent.thread_id, limit=MAX_CONTEXT_MESSAGES)
    goals = [g for g in service.goals.list() if g.status == GoalStatus.ACTIVE]
    goal_dir = None
    if intent.goal_id:
        with contextlib.suppress(GoalsuiError):
            goal_dir = str(service.kb.goal_dir(intent.goal_id))
    ctx = TurnContext(
        intent_id=intent.id,
        title=intent.title,
        instruction=intent.instruction or "",
        kind=intent.kind,
        schedule=intent.schedule,
        timezone=intent.timezone,
        silent_token=config.silent_token,
        kb_root=kb_root,
        thread_id=intent.thread_id,
        thread_title=thread_title,
        goal_id=intent.goal_id,
        goal_dir=goal_dir,
        todos=todos,
        goals=goals,
        messages=messages,
        checklist=intent.checklist,
        event=data,
        reply=is_reply(intent.operation_key),
    )
    return render_prompt(build_messages(ctx))


def prepare_turn(service: Service, intent: Intent, run: IntentRun, event: Event | None) -> Prepared:
    """Blocking preparation: prompt, cwd, the log path, and the environment: goalsui's
    variables added, every hook secret removed."""
    cwd = service.kb.goal_dir(intent.goal_id) if intent.goal_id else service.kb.root
    outbox = (
        service.kb.outbox_dir(intent.goal_id, intent.worker)
        if intent.goal_id and intent.worker
        else None
    )
    secrets = [h.secret_env for h in service.config().hooks.values() if h.secret_env]
    extra: Mapping[str, str] = {
        "GOALSUI_GOAL": intent.goal_id or "",
        "GOALSUI_WORKER": intent.worker or "",
        "GOALSUI_RUN_ID": str(run.id),
        "GOALSUI_INTENT_ID": str(intent.id),
        "GOALSUI_THREAD": str(intent.thread_id) if intent.thread_id is not None else "",
        "GOALSUI_KB": str(service.kb.root),
        "GOALSUI_OUTBOX": str(outbox) if outbox else "",
    }
    prompt = assemble_prompt(service, intent, event, run)
    env = build_env(extra, strip=secrets)
    return Prepared(prompt, cwd, env, service.runs.log_path(saved_id(run)))


def _header(intent: Intent, run: IntentRun, argv: list[str], cwd: Path) -> str:
    who = f"{intent.goal_id}/{intent.worker}" if intent.worker else f"intent {intent.id}"
    return (
        f"[goalsui] run {run.id} of {who} ({plain(intent.title, limit=80)}), trigger {run.trigger}, "
        f"attempt {run.attempt}\n[goalsui] cwd {cwd}\n[goalsui] $ {' '.join(argv)}\n"
    )


async def run_turn(
    service: Service,
    intent: Intent,
    run: IntentRun,
    *,
    event: Event | None = None,
    cancel: asyncio.Event,
    grace: float = DEFAULT_GRACE,
    on_spawn: Callable[[int], None] | None = None,
) -> TurnOutcome:
    """Run one isolated turn for a claimed intent; fd exhaustion: ``infrastructure=True``."""
    try:
        turn = Turn(service, intent, run, resolve_timeout(service, intent), cancel, grace, on_spawn)
        outcome = await _run_turn(turn, event)
    except Exception as exc:  # a turn never crashes its host (a cancellation is no Exception)
        # the machine's problem, not the intent's: retried, never counted toward auto-disable
        # (a full disk must not disable every intent for good)
        problem = _INFRASTRUCTURE.get(exc.errno or 0) if isinstance(exc, OSError) else None
        if problem is not None:
            return _infrastructure(problem, str(exc))
        log.exception("run %s of intent %s: internal error", run.id, intent.id)
        reason = (
            f"internal error: {type(exc).__name__}: {plain(' '.join(str(exc).split()), limit=200)}"
        )
        return TurnOutcome("failed", reason=reason)
    # exit_code None: goalsui's own failure to start it, not text the program printed
    reason = outcome.reason or ""
    out_of_files = any(os.strerror(code) in reason for code in (errno.EMFILE, errno.ENFILE))
    if outcome.status == RunStatus.FAILED and outcome.exit_code is None and out_of_files:
        return _infrastructure(_INFRASTRUCTURE[errno.EMFILE], reason)
    return outcome


_INFRASTRUCTURE = dict.fromkeys((errno.EMFILE, errno.ENFILE), "no file descriptors left")
_INFRASTRUCTURE |= dict.fromkeys((errno.ENOSPC, errno.EDQUOT), "no space left")


def _infrastructure(problem: str, detail: str) -> TurnOutcome:
    reason = f"infrastructure: {problem} ({plain(detail, limit=160)})"
    return TurnOutcome("failed", reason=reason, infrastructure=True)


async def _run_turn(turn: Turn, event: Event | None) -> TurnOutcome:
    if turn.cancel.is_set():
        return TurnOutcome("cancelled", reason="cancelled before it started")
    spec = resolve_runner(turn.service, turn.intent)
    if spec.get("builtin"):
        if spec["builtin"] == "report":
            return await _run_report(turn)
        return TurnOutcome(
            "failed",
            reason=f"cannot start: unknown builtin runner {spec['builtin']!r}",
            config_error=True,
        )
    skipped = await budget_outcome(turn.service, turn.intent, turn.run)
    return skipped or await _run_program(turn, spec, event)


async def _run_program(turn: Turn, spec: dict[str, Any], event: Event | None) -> TurnOutcome:
    """Build the runner's call and run the turn (inside its tools when it speaks MCP)."""
    service, intent, run = turn.service, turn.intent, turn.run
    run_id = saved_id(run)  # the scheduler inserted the run before the turn
    if not spec.get("agent") and not spec.get("command"):
        await _log_failure(service, intent, run, "failed", NO_RUNNER)
        return TurnOutcome("failed", reason=NO_RUNNER, config_error=True)
    event_id = run.event_id or intent.pending_event_id
    if event is None and event_id is not None:
        with contextlib.suppress(GoalsuiError):  # an event deleted meanwhile: none
            event = await asyncio.to_thread(service.get, Event, event_id, "event")
    try:
        prepared = await asyncio.to_thread(prepare_turn, service, intent, run, event)
    except GoalsuiError as exc:
        program = str(spec.get("agent") or (spec.get("command") or ["runner"])[0])
        reason = f"cannot start '{plain(program, limit=80)}': {exc}"
        await _log_failure(service, intent, run, "failed", reason)
        return TurnOutcome("failed", reason=reason)
    mcp = speaks_mcp(spec)
    # goose reaches its tools only over stdio; everyone else through the scheduler
    http = mcp and spec.get("agent") != "goose"
    async with turn_tools(service, run_id, http=http) as tools:
        outcome = await _run_with_tools(turn, spec, tools, prepared)
    if mcp and outcome.status == RunStatus.OK:
        session = await asyncio.to_thread(service.agents.tool_session, run_id)
        missing = no_tools_reason(session)
        if missing is not None:
            await _log_failure(service, intent, run, "failed", missing)
            outcome = replace(outcome, status="failed", reason=missing)
    return outcome


def _commander_options(
    service: Service, intent: Intent, spec: dict[str, Any]
) -> AgentOptions | None:
    """A nightshift commander's read access to its repository (an agent preset only)."""
    if not spec.get("agent") or intent.worker != COMMANDER or not intent.goal_id:
        return None
    with contextlib.suppress(GoalsuiError):
        binding = service.nightshift.binding_of(intent.goal_id)
        if binding is not None:
            return nightshift_agent_options(str(spec["agent"]), COMMANDER, Path(binding.repo))
    return None


async def _run_with_tools(
    turn: Turn, spec: dict[str, Any], tools: TurnTools, prepared: Prepared
) -> TurnOutcome:
    """Build the argv (its config files written for the run, removed after), then run."""
    service, run = turn.service, turn.run
    run_id = saved_id(run)
    model = str(spec["model"]) if spec.get("model") else ""
    argv = [model if x == "{model}" else x for x in runner_argv(spec, tools)]
    prepared.env["GOALSUI_MODEL"] = model
    prepared.env.update(preset_env(spec.get("agent"), tools))
    commander = await asyncio.to_thread(_commander_options, service, turn.intent, spec)
    if commander is not None:  # a nightshift's commander reads the repository
        argv = apply_agent_options(argv, str(spec["agent"]), commander)
        prepared.env.update(commander.env)
    configs: dict[str, str] = {}
    try:
        for placeholder, document in mcp_documents(argv, tools, spec.get("agent")).items():
            name = f"{run_id}{'.stdio' if placeholder == MCP_STDIO_CONFIG else ''}"
            written = await asyncio.to_thread(write_mcp_config, service.runs_dir, name, document)
            configs[placeholder] = str(written)
        argv = expand_placeholders(argv, configs=configs, run_id=run_id)
        await asyncio.to_thread(service.agents.set_run_inputs, run_id, prepared.prompt, argv)
        # a nightshift task worker's tasks, else the program once
        outcome = await run_nightshift_turn(turn, argv, prepared) or await _run_argv(
            turn, argv, prepared
        )
    finally:
        for config in configs.values():
            await asyncio.to_thread(Path(config).unlink, missing_ok=True)
    return replace(outcome, prompt=prepared.prompt, argv=tuple(redact_argv(argv)))


async def _run_argv(turn: Turn, argv: list[str], prepared: Prepared) -> TurnOutcome:
    """Run the program and deliver its result (an agent preset's answer is parsed)."""
    service, intent, run = turn.service, turn.intent, turn.run
    prompt, cwd, env, log_path = prepared
    state_limit = service.config().state_max_bytes
    # a goal's turn runs in its goal directory
    before = await asyncio.to_thread(state_snapshot, cwd, state_limit) if intent.goal_id else None
    result = await run_command(
        argv,
        stdin=prompt,
        cwd=cwd,
        env=env,
        timeout=turn.timeout,
        cancel=turn.cancel,
        log_path=log_path,
        grace=turn.grace,
        log_header=_header(intent, run, redact_argv(argv), cwd),
        on_spawn=turn.on_spawn,
    )
    parsed = parse_output(result.stdout)
    ended = partial(
        TurnOutcome,
        exit_code=result.exit_code,
        output_tail=result.output_tail or None,
        output_path=log_path,
        usage=parsed.usage,
    )
    if result.status != RunStatus.OK:
        await _log_failure(service, intent, run, result.status, result.reason)
        return ended(result.status, reason=result.reason, config_error=result.config_error)
    if over := await asyncio.to_thread(_state_after, cwd, intent, before, state_limit):
        await _log_failure(service, intent, run, "failed", over)
        return ended("failed", reason=over)
    output = parsed.text
    if result.truncated:
        output += f"\n\n… (output cut at 1 MiB; the whole output is in {log_path})\n"
    try:
        delivery = await asyncio.to_thread(deliver_result, service, intent, run, output)
    except (GoalsuiError, OSError) as exc:  # the turn did its work: ok, never re-run
        problem = await asyncio.to_thread(delivery_problem, service, intent, run, exc)
        return ended("ok", reason=problem)
    return ended(delivery.status, reason=None, outbox_path=delivery.outbox_path)


def _state_after(goal_dir: Path, intent: Intent, before: bytes | None, limit: int) -> str | None:
    """The bound on ``state.yaml``: a turn that grew it over ``state_max_bytes`` fails."""
    if not intent.goal_id:
        return None
    try:
        return enforce_state_bound(goal_dir, intent.goal_id, before, limit)
    except (GoalsuiError, OSError):
        return None


async def _log_failure(
    service: Service, intent: Intent, run: IntentRun, status: str, reason: str | None
) -> None:
    try:
        await asyncio.to_thread(log_failure, service, intent, run, status, reason)
    except (GoalsuiError, OSError):
        log.warning("run %s: could not append the failure to the goal log", run.id)


def _report_blocking(
    service: Service, intent: Intent, run: IntentRun, log_path: Path
) -> tuple[str, str | None]:
    """Compile the report and log what was done; returns (summary, error)."""
    from goalsui.runners.report import compile_report

    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("a", encoding="utf-8") as fh:
        fh.write(f"[goalsui] run {run.id} of {intent.goal_id}/{intent.worker}: builtin report\n")
        fh.flush()
        if not intent.goal_id:
            fh.write("[goalsui] failed: the report runner needs a goal\n")
            return "", "the report runner needs a goal (it reports on a goal's workers)"
        try:
            report = compile_report(
                service, intent.goal_id, tz=intent.timezone, exclude_run_id=run.id
            )
        except (GoalsuiError, OSError) as exc:
            fh.write(f"[goalsui] failed: {exc}\n")
            return "", f"report failed: {plain(str(exc), limit=200)}"
        fh.write(report.summary)
        fh.write(f"[goalsui] wrote {report.path}\n")
        return report.summary, None


async def _run_report(turn: Turn) -> TurnOutcome:
    service, intent, run, timeout = turn.service, turn.intent, turn.run, turn.timeout
    log_path = await asyncio.to_thread(service.runs.log_path, saved_id(run))
    work = asyncio.ensure_future(
        asyncio.to_thread(_report_blocking, service, intent, run, log_path)
    )
    stop = asyncio.ensure_future(turn.cancel.wait())
    done, _ = await asyncio.wait({work, stop}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    stop.cancel()
    ended = partial(TurnOutcome, output_path=log_path)
    if work not in done:
        # The thread finishes on its own (it only reads and writes files); the turn ends now.
        if stop in done:
            return ended("cancelled", reason="cancelled by the operator")
        return ended("timeout", reason=f"timed out after {format_timeout(timeout)}")
    summary, error = work.result()
    if error:
        await _log_failure(service, intent, run, "failed", error)
        return ended("failed", reason=error)
    delivery = await asyncio.to_thread(deliver_result, service, intent, run, summary)
    tail = summary[-4096:]
    return ended(delivery.status, output_tail=tail, outbox_path=delivery.outbox_path, exit_code=0)
