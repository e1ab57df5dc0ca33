"""Helpers for the tool-server tests: a real ``goalsui mcp`` subprocess and the SDK client."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult
from sqlmodel import select

from goalsui.service import Service
from goalsui.store.models import Intent, IntentRun, Journal, Message, Thread, Todo, ToolCall
from tests.base_kit import cli_argv

SCRIPTS = Path(__file__).resolve().parent / "scripts"


def server_params(service: Service, *args: str) -> StdioServerParameters:
    """``python -m goalsui --kb KB --state-dir STATE mcp ARGS`` on the service's database."""
    python, *argv = cli_argv("mcp", *args, kb=service.kb.root, state=service.state_dir)
    env = {"GOALSUI_DB": service.db_url, "PATH": os.environ.get("PATH", "")}
    return StdioServerParameters(command=python, args=argv, env=env)


@contextlib.asynccontextmanager
async def mcp_session(service: Service, *args: str) -> AsyncIterator[ClientSession]:
    """An initialised client session on a fresh ``goalsui mcp`` process."""
    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(server_params(service, *args), errlog=quiet) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


async def tool_names(session: ClientSession) -> set[str]:
    return {t.name for t in (await session.list_tools()).tools}


def text_of(res: CallToolResult) -> str:
    """The text blocks of a tool's answer, joined."""
    return "\n".join(getattr(c, "text", "") for c in res.content)


async def ok(session: ClientSession, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call a tool that must succeed; returns its structured result."""
    res = await session.call_tool(name, arguments)
    text = text_of(res)
    assert not res.is_error, f"{name}({arguments}) failed: {text}"
    assert res.structured_content is not None
    return res.structured_content


async def error(session: ClientSession, name: str, arguments: dict[str, Any]) -> str:
    """Call a tool that must fail; returns its one-line message."""
    res = await session.call_tool(name, arguments)
    text = text_of(res)
    assert res.is_error, f"{name}({arguments}) should have failed: {text}"
    assert "\n" not in text.strip(), f"not one line: {text!r}"
    return text


def start_run(service: Service, intent: Intent, *, status: str = "running") -> IntentRun:
    """What the scheduler does before a turn: a ``running`` run record of ``intent``."""
    now = service.now()
    with service.store.write() as s:
        run = IntentRun(intent_id=intent.id, status=status, planned_at=now, started_at=now)
        s.add(run)
        s.flush()
    return run


def end_run(service: Service, run_id: int, status: str = "ok") -> None:
    with service.store.write() as s:
        run = s.get(IntentRun, run_id)
        assert run is not None
        run.status = status
        run.finished_at = service.now()
        s.add(run)


def counts(service: Service) -> dict[str, Any]:
    """Every record count and every checklist revision: equal before and after means unchanged."""
    with service.store.read() as s:
        out: dict[str, Any] = {
            model.__name__: len(s.exec(select(model)).all())
            for model in (Intent, Todo, Message, Thread, Journal)
        }
        out["revisions"] = [t.revision for t in s.exec(select(Thread)).all()]
        out["todos_done"] = [t.done for t in s.exec(select(Todo)).all()]
        out["intent_status"] = [i.status for i in s.exec(select(Intent)).all()]
    return out


def tool_calls(service: Service, run_id: int) -> list[ToolCall]:
    return service.agents.tool_calls(run_id)


def tree(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` with its bytes (None for folders and links)."""
    return {
        str(p.relative_to(root)): (None if p.is_dir() or p.is_symlink() else p.read_bytes())
        for p in sorted(root.rglob("*"))
    }
