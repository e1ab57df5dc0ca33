"""The warm tool-server host: ``goalsui mcp`` handed to a forked, pre-imported child.

Real processes throughout: the host a scheduler would start, the SDK's stdio client,
``kill -9`` on the caller, and the host's own starter killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from base_kit import cli_argv, run_cli
from mcp_kit import mcp_session, server_params

from goalsui.runners.mcp_host import McpHost
from goalsui.runners.presets import McpLaunch
from goalsui.service import Service

GOAL = "nightshift-979afc6e"


def children(pid: int) -> set[int]:
    """The live child processes of ``pid`` (from /proc)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_for(predicate: Callable[[], bool], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(scope="module")
def host() -> Iterator[McpHost]:
    """One warm host for the module (sessions open whatever KB their command names)."""
    started = McpHost()
    assert started.ensure() is not None
    assert started.ready(timeout=60), "the host never opened its socket"
    yield started
    started.stop()


def hosted_env(service: Service, host: McpHost) -> dict[str, str]:
    return {
        "GOALSUI_DB": service.db_url,
        "PATH": os.environ.get("PATH", ""),
        "GOALSUI_MCP_HOST": str(host.socket),
    }


async def test_a_session_runs_in_a_child_of_the_host(service: Service, host: McpHost) -> None:
    assert host.pid is not None
    assert children(host.pid) == set()
    params = server_params(service, "--goal", GOAL).model_copy(
        update={"env": hosted_env(service, host)}
    )
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(params, errlog=quiet) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            assert {"goal_kb_read", "goal_kb_write", "schedule_intent"} <= names
            assert len(children(host.pid)) == 1  # served by a forked child, not cold
            res = await session.call_tool("goal_kb_read", {"path": "protocol.md"})
            assert not res.is_error
    assert wait_for(lambda: not children(host.pid)), "the child outlived its session"


def test_errors_and_exit_codes_come_back_through_the_host(service: Service, host: McpHost) -> None:
    done = run_cli(
        "mcp",
        "--run",
        "424242",
        kb=service.kb.root,
        state=service.state_dir,
        env=hosted_env(service, host),
        input="",
    )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "424242" in lines[0], done.stderr
    assert "Traceback" not in done.stderr


def test_killing_the_caller_ends_its_child(service: Service, host: McpHost) -> None:
    assert host.pid is not None
    caller = subprocess.Popen(
        cli_argv("mcp", "--goal", GOAL, kb=service.kb.root, state=service.state_dir),
        env=hosted_env(service, host),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_for(lambda: len(children(host.pid)) == 1), "no child was forked"
        (child,) = children(host.pid)
        caller.send_signal(signal.SIGKILL)
        caller.wait(timeout=10)
        assert wait_for(lambda: not alive(child)), "the child outlived its killed caller"
        assert alive(host.pid)  # the host goes on serving others
    finally:
        caller.kill()
        caller.wait()


async def test_an_unusable_host_means_a_cold_start(service: Service, tmp_path: Path) -> None:
    os.environ["GOALSUI_MCP_HOST"] = str(tmp_path / "nothing-here.sock")
    try:
        async with mcp_session(service, "--goal", GOAL) as session:
            assert "goal_kb_read" in {t.name for t in (await session.list_tools()).tools}
    finally:
        del os.environ["GOALSUI_MCP_HOST"]


def test_the_host_dies_with_whoever_started_it(service: Service, tmp_path: Path) -> None:
    starter = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
                import sys, time
                from goalsui.runners.mcp_host import McpHost
                host = McpHost()
                host.ensure()
                print(host.pid, host.socket.parent, flush=True)
                time.sleep(600)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert starter.stdout is not None
        pid_text, folder = starter.stdout.readline().split()
        pid = int(pid_text)
        assert alive(pid)
        starter.kill()
        starter.wait(timeout=10)
        assert wait_for(lambda: not alive(pid)), "the host outlived its starter"
    finally:
        starter.kill()
        starter.wait()
    assert Path(folder).is_dir()  # a killed starter cannot clean up; the folder is 0700
    assert (Path(folder).stat().st_mode & 0o777) == 0o700


def test_a_run_launch_warms_the_host_on_its_kb_and_stop_ends_it(service: Service) -> None:
    launch = McpLaunch.for_run(service.kb.root, service.state_dir, service.db_url, 1)
    host = McpHost()
    try:
        socket = host.ensure(launch)
        assert socket is not None and host.ready(timeout=60)
        pid = host.pid
        assert pid is not None
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        assert argv[-5:-1] == ["--kb", str(service.kb.root), "--state-dir", str(service.state_dir)]
    finally:
        host.stop()
    assert not alive(pid)
    assert not socket.parent.exists()


def test_a_run_launch_names_the_host() -> None:
    launch = McpLaunch.for_run(Path("/kb"), Path("/state"), "sqlite:///x", 7)
    assert "GOALSUI_MCP_HOST" not in launch.env
    hosted = launch.hosted(Path("/tmp/goalsui-mcp-x/host.sock"))
    assert hosted.env["GOALSUI_MCP_HOST"] == "/tmp/goalsui-mcp-x/host.sock"
    assert hosted.env["GOALSUI_DB"] == "sqlite:///x" and hosted.args == launch.args
    assert launch.hosted(None) is launch
