"""``goalsui bench mcp``: the default path's figures beside the reference servers'."""

from __future__ import annotations

import json

import pytest

from tests.base_kit import run_cli

pytestmark = pytest.mark.slow


def test_bench_mcp_reports_the_default_path_beside_the_references() -> None:
    done = run_cli("bench", "mcp", "--repeat", "1", "--json", input="", timeout=300)
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert figures["tools"] >= 20 and figures["tools_bytes"] > 0
    assert 0 < figures["http_tools_listed_s"]["median"] < 30
    assert 0 < figures["stdio_cold_s"]["median"] < 60
    refs = figures["references"]
    assert set(refs) == {"mcp-server-time", "mcp-server-git", "mcp-server-fetch"}
    assert refs["mcp-server-time"]["cold_start_s"]["median"] > 0
    assert all(entry["tools"] >= 1 and entry["tools_bytes"] > 0 for entry in refs.values())
    assert figures["stdio_cold_vs_time_server"] > 0
