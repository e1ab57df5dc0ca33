"""Red-team round three (issue 29): each test reproduces an attack that worked before.

- ``@FILE`` and ``-`` inputs were read without a bound: ``@/dev/zero`` ran the machine
  out of memory.
- A usage line with a huge token count lost the run's output, prompt, argv and usage
  (a 32-bit column on PostgreSQL).
- ``{"a": 1e400}`` was read as infinity: ``event emit --local`` exited 2 on PostgreSQL.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from goalsui.cli.inputs import MAX_INPUT_BYTES
from goalsui.kb.layout import WorkerSeed
from goalsui.runners.base import MAX_TOKENS, Usage
from goalsui.runners.usage import parse_output
from goalsui.scheduler import Scheduler
from goalsui.service import Service
from tests.base_kit import clean_environ, cli_argv, run_cli
from tests.cost_kit import AGENT


def one_line_error(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 1, (done.returncode, done.stderr[-500:])
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    for word in words:
        assert word in lines[0], lines[0]


# -- @FILE and stdin inputs are bounded ------------------------------------------------


def _memory_limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


@pytest.mark.parametrize(
    "args",
    [
        ("thread", "say", "1", "@/dev/zero", "--no-wait"),
        ("intent", "add", "--title", "t", "--instruction", "@/dev/zero", "--every", "1h"),
        ("todo", "import", "1", "@/dev/zero"),
        ("event", "emit", "ci", "--data", "/dev/zero", "--local"),
    ],
    ids=["thread-say", "intent-instruction", "todo-import", "event-data"],
)
def test_a_device_as_file_input_is_one_line_and_no_read(
    args: tuple[str, ...], empty_kb: Path, tmp_path: Path
) -> None:
    done = subprocess.run(
        cli_argv(*args, kb=empty_kb, state=tmp_path / "state"),
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_environ(),
        preexec_fn=_memory_limit,  # an unbounded read is a MemoryError, not a dead machine
    )
    one_line_error(done, "/dev/zero")


def test_an_oversized_file_and_stdin_are_refused_with_their_size(
    empty_kb: Path, tmp_path: Path
) -> None:
    big = tmp_path / "big.md"
    big.write_bytes(b"x" * (MAX_INPUT_BYTES + 1))
    state = tmp_path / "state"
    created = run_cli("thread", "new", "t", "--json", kb=empty_kb, state=state, timeout=60)
    assert created.returncode == 0, created.stderr
    thread = str(json.loads(created.stdout)["id"])
    done = run_cli("thread", "say", thread, f"@{big}", "--no-wait", kb=empty_kb, state=state)
    one_line_error(done, str(big), "larger than 2 MiB")
    piped = run_cli(
        "thread",
        "say",
        thread,
        "-",
        "--no-wait",
        kb=empty_kb,
        state=state,
        input="y" * (MAX_INPUT_BYTES + 10),
    )
    one_line_error(piped, "stdin", "larger than 2 MiB")
    folder = run_cli("thread", "say", thread, f"@{tmp_path}", "--no-wait", kb=empty_kb, state=state)
    one_line_error(folder, "folder")
    fine = run_cli("thread", "say", thread, "-", "--no-reply", kb=empty_kb, state=state, input="hi")
    assert fine.returncode == 0, fine.stderr


# -- usage numbers are bounded -------------------------------------------------------------


def test_out_of_range_usage_is_unknown_with_a_note() -> None:
    usage = Usage(MAX_TOKENS + 1, 5, float("inf"), "m" * 1000)
    assert (usage.tokens_in, usage.tokens_out, usage.cost_usd) == (None, 5, None)
    assert usage.model == "m" * 200 and "out of range" in (usage.note or "")
    assert Usage(MAX_TOKENS, 0, 0.5, "x").note is None
    line = json.dumps({"goalsui_usage": {"tokens_in": 10**30, "tokens_out": 7, "cost_usd": 1e300}})
    parsed = parse_output(f"done\n{line}\n")
    assert parsed.text == "done\n"
    assert parsed.usage is not None and parsed.usage.tokens_out == 7
    assert parsed.usage.tokens_in is None and parsed.usage.cost_usd is None


async def test_a_huge_token_count_never_loses_the_transcript(
    db_url: str, empty_kb: Path, make_service, clock
) -> None:
    svc: Service = make_service(empty_kb, db_url, clock=clock)
    thread = svc.threads.create("results")
    huge = str(10**12)  # more than the 32-bit column holds
    intent = svc.intents.create(
        title="count a lot",
        instruction="report",
        kind="at",
        schedule=clock.now.isoformat(),
        thread_id=thread.id,
        runner={"command": [sys.executable, AGENT, "generic", "0.5", huge, "42", "big-model"]},
    )
    sched = Scheduler(svc, clock=clock, grace_seconds=1)
    try:
        (run_id,) = await sched.tick()
        await sched.drain(timeout=60)
    finally:
        await sched.stop(grace=1)
    run = svc.runs.get(run_id)
    assert run.status == "ok", (run.status, run.reason)
    assert (run.tokens_in, run.tokens_out, run.cost_usd, run.model) == (None, 42, 0.5, "big-model")
    assert run.prompt and "report" in run.prompt
    assert run.argv and run.argv[-1] == "big-model"
    assert "done with big-model" in (run.output_tail or "")
    assert svc.intents.get(intent.id).status == "done"


# -- non-finite numbers ----------------------------------------------------------------


@pytest.mark.parametrize("body", ['{"a":1e400}', "[-1E999]", '{"a": NaN}'])
def test_a_non_finite_number_in_a_local_event_is_one_line_exit_1(
    body: str, db_url: str, empty_kb: Path, tmp_path: Path
) -> None:
    data = tmp_path / "payload.json"
    data.write_text(body)
    done = run_cli(
        "event",
        "emit",
        "ci",
        "--data",
        str(data),
        "--local",
        kb=empty_kb,
        state=tmp_path / "state",
        db=db_url,
        env=clean_environ(),
        timeout=60,
    )
    one_line_error(done, "not valid JSON")


# -- a result that cannot be delivered -----------------------------------------------------


async def test_a_turn_whose_result_cannot_be_delivered_is_ok_with_a_problem_never_rerun(
    empty_kb: Path, make_service, clock
) -> None:
    svc: Service = make_service(empty_kb, clock=clock)
    # the turn does its work, and on the way the goal's outbox stops being writable (a
    # file where the folder was: even root cannot write into it)
    breaks = "rm -rf workers/coder/outbox && echo x > workers/coder/outbox && echo the result"
    definition = {
        "schedule": {"cron": "30 20 * * *", "timezone": "UTC"},
        "runner": {"command": ["sh", "-c", breaks]},
        "timeout": "30s",
    }
    view = svc.goals.create("Deliver", "t", [WorkerSeed("coder", definition, prompt="# w\n")])
    intent = svc.workers.intent(view.goal_id, "coder")
    sched = Scheduler(svc, clock=clock, grace_seconds=1)
    try:
        svc.intents.run_now(intent.id)
        (run_id,) = await sched.tick()
        await sched.drain(timeout=60)
        clock.advance(600)  # a failed run would be retried by now
        again = await sched.tick()
        await sched.drain(timeout=60)
    finally:
        await sched.stop(grace=1)
    run = svc.runs.get(run_id)
    assert run.status == "ok", (run.status, run.reason)
    assert (run.reason or "").startswith("delivery problem:")
    assert "the result" in (run.output_tail or "")
    assert again == [] and len(svc.runs.list(intent_id=intent.id)) == 1  # never re-run
    got = svc.intents.get(intent.id)
    assert got.consecutive_failures == 0 and got.status == "active"
    alerts = [
        j for j in svc.journal.recent() if j.action == "alert" and "delivery problem" in j.detail
    ]
    assert alerts, "the operator is not told"


# -- goalsui mcp trusts no socket named by its environment -----------------------------------
def test_goalsui_mcp_hands_nothing_to_a_socket_named_in_its_environment(
    sample_kb: Path, tmp_path: Path
) -> None:
    """``GOALSUI_MCP_HOST`` once made ``goalsui mcp`` pass its environment (API keys
    included) and its stdin/stdout to whatever socket sat at that path. The fork-based
    host is gone (a scheduler serves its turns over HTTP): the variable is ignored, the
    process serves its session itself and nothing connects to the socket."""
    import socket
    import threading

    path = tmp_path / "host.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(4)
    listener.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            received.append(conn.recv(65536))
            conn.close()

    thread = threading.Thread(target=accept)
    thread.start()
    initialize = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}},
    }  # fmt: skip
    try:
        env = {**clean_environ(), "GOALSUI_MCP_HOST": str(path), "SECRET_API_KEY": "sk-leak"}
        indexed = run_cli("goal", "list", kb=sample_kb, state=tmp_path / "s", env=env, input="")
        assert indexed.returncode == 0, indexed.stderr
        proc = subprocess.Popen(
            cli_argv("mcp", "--goal", "demo-pulse-05c0f5ca", kb=sample_kb, state=tmp_path / "s"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
        )
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(initialize) + "\n")
        proc.stdin.flush()
        first = proc.stdout.readline()
        proc.stdin.close()
        proc.wait(timeout=60)
    finally:
        stop.set()
        thread.join()
        listener.close()
    assert received == []  # nothing reached the socket, no environment, no descriptors
    reply = json.loads(first)
    assert reply["id"] == 1 and reply["result"]["serverInfo"]["name"] == "goalsui"
