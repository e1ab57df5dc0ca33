"""The command runner with real subprocesses: exit codes, timeout, cancel, streaming."""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from pathlib import Path

import pytest

from goalsui.runners.command import build_env, expand_argv, run_command

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
PY = sys.executable


def alive(pid: int) -> bool:
    """A process that exists and is not a zombie waiting for its reaper."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return False
    return data[data.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")


async def wait_for_file(path: Path, limit: float = 20.0) -> str:
    """Wait (event-driven enough for a test) until ``path`` has content."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while loop.time() < deadline:
        if path.exists() and path.stat().st_size:
            return path.read_text()
        await asyncio.sleep(0.01)
    raise AssertionError(f"{path} never appeared")


async def test_ok_output_is_the_result_and_prompt_arrives_on_stdin(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    prompt = "You are worker `x`.\nline two of the prompt\n"
    result = await run_command(
        ["{python}", str(SCRIPTS / "run_echo_stdin.py")], stdin=prompt, log_path=log
    )
    assert result.status == "ok"
    assert result.exit_code == 0
    assert result.stdout == prompt
    assert result.reason is None
    assert "line two of the prompt" in log.read_text()


async def test_nonzero_exit_is_failed_with_last_stderr_line(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    result = await run_command([PY, str(SCRIPTS / "run_fail.py"), "3"], log_path=log)
    assert result.status == "failed"
    assert result.exit_code == 3
    assert result.reason == "exit 3: disk quota exceeded on /data"
    assert result.stdout == "partial result\n"
    text = log.read_text()
    assert "partial result" in text
    assert "[stderr] first problem" in text
    assert "[stderr] disk quota exceeded on /data" in text
    assert "disk quota exceeded" in result.output_tail


async def test_output_is_streamed_to_the_log_while_running(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    go = tmp_path / "go"
    task = asyncio.create_task(
        run_command([PY, str(SCRIPTS / "run_stream.py"), str(go)], log_path=log, timeout=60)
    )
    while "line one: started" not in (log.read_text() if log.exists() else ""):
        assert not task.done(), "the program ended before its first line reached the log"
        await asyncio.sleep(0.01)
    text = log.read_text()
    assert "line two" not in text
    assert not task.done()  # still running, and its first line is already on disk
    go.write_text("go")
    result = await task
    assert result.status == "ok"
    assert result.stdout == "line one: started\nline two: done\n"
    assert "line two: done" in log.read_text()


async def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pids_file = tmp_path / "pids"
    task = asyncio.create_task(
        run_command([PY, str(SCRIPTS / "run_tree.py"), str(pids_file)], timeout=1.0, grace=2.0)
    )
    leader, grandchild = (int(x) for x in (await wait_for_file(pids_file)).split())
    result = await task
    assert result.status == "timeout"
    assert result.reason == "timed out after 1s"
    assert not alive(leader)
    assert not alive(grandchild)


async def test_cancel_kills_the_whole_process_group(tmp_path: Path) -> None:
    pids_file = tmp_path / "pids"
    log = tmp_path / "run.log"
    cancel = asyncio.Event()
    task = asyncio.create_task(
        run_command(
            [PY, str(SCRIPTS / "run_tree.py"), str(pids_file)],
            timeout=60,
            cancel=cancel,
            log_path=log,
        )
    )
    leader, grandchild = (int(x) for x in (await wait_for_file(pids_file)).split())
    assert alive(leader) and alive(grandchild)
    cancel.set()
    result = await task
    assert result.status == "cancelled"
    assert result.reason == "cancelled by the operator"
    assert not alive(leader)
    assert not alive(grandchild)
    assert "cancel requested: SIGTERM to the process group" in log.read_text()


async def test_sigterm_ignored_escalates_to_sigkill(tmp_path: Path) -> None:
    pids_file = tmp_path / "pids"
    log = tmp_path / "run.log"
    cancel = asyncio.Event()
    task = asyncio.create_task(
        run_command(
            [PY, str(SCRIPTS / "run_tree.py"), str(pids_file), "ignore-term"],
            timeout=60,
            cancel=cancel,
            grace=0.3,
            log_path=log,
        )
    )
    leader, grandchild = (int(x) for x in (await wait_for_file(pids_file)).split())
    cancel.set()
    result = await task
    assert result.status == "cancelled"
    assert result.exit_code == -9
    assert not alive(leader)
    assert not alive(grandchild)
    assert "SIGKILL" in log.read_text()


async def test_cancelling_the_awaiting_task_stops_the_tree(tmp_path: Path) -> None:
    pids_file = tmp_path / "pids"
    task = asyncio.create_task(
        run_command([PY, str(SCRIPTS / "run_tree.py"), str(pids_file)], timeout=60, grace=1.0)
    )
    leader, grandchild = (int(x) for x in (await wait_for_file(pids_file)).split())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not alive(leader)
    assert not alive(grandchild)


async def test_missing_program_is_a_failed_result() -> None:
    result = await run_command(["goalsui-no-such-program-xyz", "-p"])
    assert result.status == "failed"
    assert result.reason == "cannot start 'goalsui-no-such-program-xyz': program not found"
    assert result.exit_code is None


async def test_missing_working_directory_is_a_failed_result(tmp_path: Path) -> None:
    result = await run_command([PY, "-c", "pass"], cwd=tmp_path / "gone")
    assert result.status == "failed"
    assert "working directory" in (result.reason or "")
    assert "does not exist" in (result.reason or "")


async def test_program_without_execute_permission_is_a_failed_result(tmp_path: Path) -> None:
    script = tmp_path / "tool.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    os.chmod(script, stat.S_IRUSR | stat.S_IWUSR)
    result = await run_command([str(script)])
    assert result.status == "failed"
    assert result.reason == f"cannot start '{script}': permission denied"


async def test_program_that_does_not_read_stdin_still_gets_its_result() -> None:
    big = "x" * (1024 * 1024)  # more than a pipe buffer: the writer must not hang
    result = await run_command([PY, "-c", "print('done')"], stdin=big, timeout=30)
    assert result.status == "ok"
    assert result.stdout == "done\n"


def test_python_placeholder_and_env(monkeypatch: pytest.MonkeyPatch) -> None:
    assert expand_argv(["{python}", "tick.py", "x{python}"]) == [PY, "tick.py", "x{python}"]
    monkeypatch.setenv("SECRET", "s")
    monkeypatch.setenv("A", "1")
    env = build_env({"GOALSUI_RUN_ID": "7", "SECRET": "leak"}, strip=["SECRET"])
    kept = {k: v for k, v in os.environ.items() if k != "SECRET"}
    assert env == kept | {"GOALSUI_RUN_ID": "7"} and env["A"] == "1"
