"""A hook secret never shows up: not in logs, answers, CLI output (text or --json), the
journal, any database row, run logs, runner environments, or any file goalsui wrote."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
from pathlib import Path

import pytest

from goalsui.hooks import signing
from goalsui.scheduler.loop import Scheduler
from goalsui.service import Service
from tests.base_kit import clean_environ, cli_argv
from tests.hooks_kit import (
    CI_ENV,
    GITHUB_ENV,
    ThreadedListener,
    db_text,
    post,
    signed,
)

# Distinctive values, so any copy anywhere is found.
CI_SECRET = "ci-secret-Zq81-never-print-me-4b7e"
GH_SECRET = "gh-secret-Wx55-never-print-me-9c1d"
LEAKS = (CI_SECRET, GH_SECRET)
# A runner that tries hard to reveal secrets: its environment, and the variables by name.
SNOOP = ["sh", "-c", f'cat; env; echo "ci=${CI_ENV} gh=${GITHUB_ENV}"']


def cli_all(kb: Path, state: Path, *commands: tuple[str, ...]) -> list[tuple[int, str, str]]:
    """Run several goalsui commands at once (real processes); (exit code, stdout, stderr)."""
    env = clean_environ()
    env.update({CI_ENV: CI_SECRET, GITHUB_ENV: GH_SECRET})
    procs = [
        subprocess.Popen(
            cli_argv(*args, kb=kb, state=state),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for args in commands
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        results.append((proc.returncode, out, err))
    return results


def files_containing(root: Path, needle: bytes) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink() and needle in path.read_bytes():
            found.append(str(path))
    return found


async def run_due(service: Service) -> list[int]:
    scheduler = Scheduler(service)
    try:
        started = await scheduler.tick()
        await scheduler.drain(timeout=60)
    finally:
        await scheduler.stop()
    return started


def test_secrets_appear_nowhere(
    sample_kb: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv(CI_ENV, CI_SECRET)
    monkeypatch.setenv(GITHUB_ENV, GH_SECRET)
    state = tmp_path / "state"
    service = Service.open(sample_kb, None, state, actor="operator")
    ci = service.intents.create(
        title="snoop ci",
        instruction="Report.",
        kind="event",
        event_source="ci",
        runner={"command": SNOOP},
    )
    gh = service.intents.create(
        title="snoop gh",
        instruction="Report.",
        kind="event",
        event_source="github",
        runner={"command": SNOOP},
    )
    data = tmp_path / "payload.json"
    data.write_text('{"ref": "main"}')
    outputs: list[str] = []

    with ThreadedListener(service) as server:
        body = b'{"ref": "main"}'
        answers = [
            post(server.port, "/hooks/ci", body, signed(body, "good", secret=CI_SECRET)),
            post(server.port, "/hooks/ci", body, signed(body, "bad", secret="wrong")),
            # An attacker who sends the secret itself as the signature learns nothing.
            post(
                server.port,
                "/hooks/ci",
                body,
                {**signed(body, "x", secret=CI_SECRET), signing.SIGNATURE: CI_SECRET},
            ),
            post(
                server.port,
                "/hooks/github",
                body,
                signed(body, "gh-good", secret=GH_SECRET, style="github"),
            ),
            post(
                server.port,
                "/hooks/github",
                body,
                signed(body, "gh-bad", secret=CI_SECRET, style="github"),
            ),
        ]
        assert [status for status, _ in answers] == [202, 401, 401, 202, 401]
        outputs += [json.dumps(answer) for _, answer in answers]
        port = str(server.port)
        emits = cli_all(
            sample_kb,
            state,
            ("event", "emit", "ci", "--data", str(data), "--port", port, "--json"),
            ("event", "emit", "ci", "--data", str(data), "--port", port, "--delivery", "good"),
            ("event", "emit", "ci", "--data", str(data), "--port", "1"),  # nobody listens there
        )
        assert [code for code, _, _ in emits] == [0, 1, 1]  # "good" is a duplicate
        outputs += [out + err for _, out, err in emits]

    assert len(asyncio.run(run_due(service))) == 2
    runs = service.runs.list(limit=100)
    assert {r.intent_id for r in runs} == {ci.id, gh.id}
    assert all(r.status == "ok" for r in runs), [(r.status, r.reason) for r in runs]
    for run in runs:
        log = service.runs.output(run.id)
        assert "Report." in log and "ci= gh=" in log  # the runner ran, and saw no secret
        outputs.append(log)

    listings = cli_all(
        sample_kb,
        state,
        ("events", "--json"),
        ("doctor", "--json"),
        ("runs", "--json"),
        ("event", "emit", "ci", "--data", str(data), "--local", "--json"),
    )
    assert all(code in (0, 1) for code, _, _ in listings), listings
    outputs += [out + err for _, out, err in listings]
    journal = service.journal.recent(1000)
    outputs.append("\n".join(f"{j.actor} {j.action} {j.subject} {j.detail}" for j in journal))
    outputs.append(db_text(service))
    outputs.append(caplog.text)
    everything = "\n".join(outputs)
    assert "hook ci: refused 401" in caplog.text  # the listener did log its refusals
    for secret in LEAKS:
        assert secret not in everything
        assert files_containing(state, secret.encode()) == []
        assert files_containing(sample_kb, secret.encode()) == []
    service.close()
