"""The stdio tool server answers every request, with a reason (issue 29, red team 3).

Before: tool arguments of 2^63 or more got "Error executing tool X" with no reason, and
a request holding a lone surrogate escape or a 5,000-digit number got no reply at all
(the SDK logged its parse error and the client waited forever). Raw JSON-RPC over the
pipes of a real ``goalsui mcp`` process, each reply read with a deadline.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from collections.abc import Iterator

import pytest

from goalsui.mcp.guard import LineProblem, check_line
from goalsui.service import Service
from tests.mcp_kit import server_params


class Wire:
    def __init__(self, service: Service, goal: str) -> None:
        params = server_params(service, "--goal", goal)
        self.proc = subprocess.Popen(
            [params.command, *params.args],
            env=params.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
        )
        self.pending = b""

    def send(self, raw: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw.encode("utf-8") + b"\n")

    def reply(self, timeout: float = 20) -> dict | None:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                return None
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                return None
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def wire(service: Service) -> Iterator[Wire]:
    goal = service.goals.list()[0].goal_id
    w = Wire(service, goal)
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "red-team", "version": "1"},
    }
    w.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}))
    assert (w.reply(60) or {}).get("id") == 1
    w.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    yield w
    w.close()


def _call(rid: int, name: str, arguments: str) -> str:
    return (
        f'{{"jsonrpc":"2.0","id":{rid},"method":"tools/call",'
        f'"params":{{"name":"{name}","arguments":{arguments}}}}}'
    )


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (_call(7, "cancel_intent", '{"intent_id": 9223372036854775808}'), "out of range"),
        (_call(7, "cancel_intent", '{"intent_id": -9223372036854775809}'), "out of range"),
        (_call(7, "goal_kb_read", '{"path": "\\ud800"}'), "surrogate"),
        (_call(7, "goal_kb_read", '{"path": ' + "9" * 5000 + "}"), "5000 digits"),
        (_call(7, "goal_kb_read", '{"path": 1e400}'), "out of range"),
    ],
    ids=["2^63", "-2^63-1", "lone-surrogate", "5000-digits", "1e400"],
)
def test_every_request_gets_a_reply_with_a_reason(wire: Wire, raw: str, words: str) -> None:
    wire.send(raw)
    answer = wire.reply()
    assert answer is not None, "no reply at all"
    assert answer["id"] == 7 and words in answer["error"]["message"], answer
    # the session goes on: the next request is served
    wire.send(json.dumps({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}))
    assert (wire.reply() or {}).get("id") == 8


def test_a_line_that_is_not_json_is_a_parse_error_with_a_null_id(wire: Wire) -> None:
    wire.send('{"jsonrpc": "2.0", "id": 3, "method": ')
    answer = wire.reply()
    assert answer is not None and answer["id"] is None
    assert answer["error"]["code"] == -32700


def test_check_line_bounds() -> None:
    check_line('{"a": 9007199254740991, "b": -1.5e300, "c": "ok \\u00e9"}')
    for bad in ['{"a": 9007199254740992}', '{"a": NaN}', '["\\udc00"]', "[" + "1" * 200 + "]"]:
        with pytest.raises(LineProblem):
            check_line(bad)
