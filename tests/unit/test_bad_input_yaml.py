"""Hostile KB YAML (goalsui.yaml, goal and worker definition.yaml): every bad file is a
KBError naming the file, the line where there is one, and the reason; nothing crashes,
nothing is rewritten, the database keeps its rows and the last good schedule runs on."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goalsui.errors import GoalsuiError, KBError
from goalsui.kb.config import parse_goal, parse_kb_config, parse_worker
from goalsui.kb.layout import KB
from goalsui.kb.yamlio import load_yaml_mapping
from goalsui.service import Service
from tests.hooks_kit import row_counts, tree_snapshot

GOAL = "nightshift-979afc6e"
WORKER = "scout"
FILES = {
    "config": "goalsui.yaml",
    "goal": f"{GOAL}/definition.yaml",
    "worker": f"{GOAL}/workers/{WORKER}/definition.yaml",
}
BILLION_LAUGHS = (
    "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    + "".join(
        f"{chr(99 + i)}: &{chr(99 + i)} [{', '.join([f'*{chr(98 + i)}'] * 9)}]\n" for i in range(7)
    )
)

# (name, bytes of the file, a fragment of the reason, the line or None)
ANY_FILE: list[tuple[str, bytes, str, int | None]] = [
    ("broken flow", b"retry: [1, 2\nalerts: x\n", "", 2),
    ("tab indentation", b"runner:\n\tcommand: [cat]\n", "", 2),
    ("alias bomb", BILLION_LAUGHS.encode(), "aliases (*name) are not allowed", 2),
    ("merge key alias", b"base: &b {x: 1}\nother:\n  <<: *b\n", "aliases", 3),
    ("deep nesting", b"x: " + b"[" * 100 + b"]" * 100 + b"\n", "nested deeper than 32", 1),
    (
        "deep block nesting",
        "".join(f"{'  ' * i}k{i}:\n" for i in range(60)).encode(),
        "nested deeper",
        None,
    ),
    ("huge", b"# " + b"x" * (300 * 1024) + b"\n", "file is too large", None),
    ("not UTF-8", b"name: ok\nnote: caf\xe9\n", "not valid UTF-8", 2),
    ("UTF-16", "name: x\n".encode("utf-16"), "not valid UTF-8", 1),
    ("NUL byte", b"name: a\nnote: a\x00b\n", "NUL byte", 2),
    (
        "python tag",
        b"x: !!python/object/apply:os.system ['touch /tmp/goalsui-pwned']\n",
        "constructor",
        1,
    ),
    ("binary tag", b"x: !!binary aGVsbG8=\n", "", None),
    ("top-level list", b"- a\n- b\n", "expected a mapping at the top", 1),
    ("top-level scalar", b"just text\n", "expected a mapping at the top", 1),
    ("unknown field", b"surprise: 1\n", "unknown field 'surprise'", 1),
]

PER_FILE: dict[str, list[tuple[str, bytes, str, int | None]]] = {
    "config": [
        ("runner as text", b"runner: cat\n", "'runner' must be a mapping", 1),
        ("runner command as text", b"runner:\n  command: cat file\n", "non-empty list", 2),
        ("empty command", b"runner:\n  command: []\n", "non-empty list", 2),
        ("unknown builtin", b"runner:\n  builtin: rm\n", "unknown builtin runner", 2),
        ("retry text", b"retry:\n  base_seconds: fast\n", "must be a number", 2),
        ("retry bool", b"retry:\n  max_consecutive_failures: yes\n", "must be a number", 2),
        ("retry float count", b"retry:\n  max_consecutive_failures: 2.5\n", "whole number", 2),
        ("negative cap", b"retry:\n  cap_seconds: -1\n", "at least", 2),
        ("bad duration", b"catch_up_limit: forever\n", "duration", 1),
        ("alert command NUL", b'alerts:\n  command: ["a\\0b"]\n', "NUL", 2),
        (
            "hook bad name",
            b"hooks:\n  sources:\n    ../evil:\n      secret_env: X\n",
            "invalid hook source",
            3,
        ),
        (
            "hook look-alike name",
            "hooks:\n  sources:\n    ci\u2215x:\n      secret_env: X\n".encode(),
            "invalid hook source",
            3,
        ),
        (
            "hook without secret",
            b"hooks:\n  sources:\n    ci: {style: github}\n",
            "secret_env",
            None,
        ),
        ("hook secret list", b"hooks:\n  sources:\n    ci: {secret_env: [a]}\n", "must be text", 3),
        (
            "hook bad style",
            b"hooks:\n  sources:\n    ci: {secret_env: X, style: gitlab}\n",
            "unknown hook style",
            3,
        ),
        (
            "hook unknown key",
            b"hooks:\n  sources:\n    ci: {secret_env: X, secret: hunter2}\n",
            "unknown field",
            None,
        ),
    ],
    "goal": [
        (
            "goal_id mismatch",
            b"goal_id: other-1234\nname: x\n",
            "does not match its folder",
            1,
        ),
        ("goal_id traversal", b"goal_id: ../../etc\nname: x\n", "invalid goal id", 1),
        ("goal_id fullwidth", "goal_id: a\uff0fb\nname: x\n".encode(), "invalid goal id", 1),
        ("name missing", f"goal_id: {GOAL}\n".encode(), "missing required field 'name'", None),
        ("name list", f"goal_id: {GOAL}\nname: [1, 2]\n".encode(), "must be text", 2),
        ("status no", f"goal_id: {GOAL}\nname: x\nstatus: no\n".encode(), "must be text", 3),
        (
            "status unknown",
            f"goal_id: {GOAL}\nname: x\nstatus: deleted\n".encode(),
            "unknown status",
            3,
        ),
        (
            "sort_order float",
            f"goal_id: {GOAL}\nname: x\nsort_order: 1.5\n".encode(),
            "whole number",
            3,
        ),
        (
            "created_at garbage",
            f"goal_id: {GOAL}\nname: x\ncreated_at: last tuesday\n".encode(),
            "invalid timestamp",
            3,
        ),
        (
            "created_at overflow",
            f"goal_id: {GOAL}\nname: x\ncreated_at: '9999-12-31T23:59:59-23:59'\n".encode(),
            "",
            3,
        ),
        ("name too long", f"goal_id: {GOAL}\nname: {'n' * 300}\n".encode(), "too long", 2),
    ],
    "worker": [
        ("no schedule", b"runner: {builtin: report}\n", "schedule", None),
        ("two schedules", b"schedule: {cron: '* * * * *', every: 10m}\n", "exactly one", 1),
        ("cron 61", b"schedule:\n  cron: '61 * * * *'\n", "invalid cron", 2),
        ("cron words", b"schedule:\n  cron: 'every day at noon'\n", "invalid cron", 2),
        ("cron never", b"schedule:\n  cron: '0 0 31 2 *'\n", "never", 2),
        ("cron control char", b'schedule:\n  cron: "0 0 * * *\\x1b"\n', "control", 2),
        ("cron list", b"schedule:\n  cron: [0, 0]\n", "must be text", 2),
        (
            "zone unknown",
            b"schedule:\n  cron: '0 9 * * *'\n  timezone: Mars/Olympus\n",
            "unknown timezone",
            3,
        ),
        (
            "zone traversal",
            b"schedule:\n  cron: '0 9 * * *'\n  timezone: ../../etc/passwd\n",
            "unknown timezone",
            3,
        ),
        (
            "zone absolute",
            b"schedule:\n  cron: '0 9 * * *'\n  timezone: /etc/localtime\n",
            "unknown timezone",
            3,
        ),
        ("every zero", b"schedule:\n  every: 0s\n", "greater than zero", 2),
        ("every tiny", b"schedule:\n  every: 5s\n", "at least 10s", 2),
        ("every huge", b"schedule:\n  every: 9999d\n", "366 days", 2),
        ("every bool", b"schedule:\n  every: true\n", "duration", 2),
        ("at garbage", b"schedule:\n  at: tomorrow-ish\n", "invalid timestamp", 2),
        ("timeout negative", b"schedule: {every: 10m}\ntimeout: -5m\n", "greater than zero", 2),
        (
            "runner string",
            b"schedule: {every: 10m}\nrunner: {command: 'rm -rf /'}\n",
            "non-empty list",
            2,
        ),
        (
            "runner both",
            b"schedule: {every: 10m}\nrunner: {command: [a], builtin: report}\n",
            "not both",
            2,
        ),
        ("capabilities text", b"schedule: {every: 10m}\ncapabilities: all\n", "list of names", 2),
        (
            "active hours 25:00",
            b"schedule: {every: 10m}\nactive_hours: {start: '25:00', end: '06:00'}\n",
            "time like",
            None,
        ),
    ],
}


def _cases() -> list:
    out = []
    for kind in FILES:
        for name, data, reason, line in ANY_FILE + PER_FILE[kind]:
            out.append(pytest.param(kind, data, reason, line, id=f"{kind}: {name}"))
    return out


def load(kb: KB, kind: str) -> None:
    """Read one file the way goalsui does; raises KBError when it is bad."""
    if kind == "config":
        kb.config()
        return
    loaded = kb.load_goal(GOAL)
    problems = [p for p in loaded.problems if p.path == FILES[kind]]
    if problems:
        raise problems[0]
    assert not loaded.problems, loaded.problems


@pytest.fixture(scope="module")
def live(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Service, dict[str, int], dict]]:
    """One synced service on a copy of the sample KB, its row counts and schedules.

    Each case breaks one file, checks, then puts the original back and syncs again.
    """
    root = tmp_path_factory.mktemp("yaml")
    shutil.copytree(Path(__file__).parent.parent.parent / "sample_kb", root / "kb")
    service = Service.open(root / "kb", None, root / "state")
    yield service, row_counts(service), schedules_of(service)
    service.close()


def schedules_of(service: Service) -> dict:
    return {(i.goal_id, i.worker): (i.schedule, i.status) for i in service.intents.list()}


@pytest.mark.parametrize(("kind", "data", "reason", "line"), _cases())
def test_bad_kb_yaml_is_a_clear_error_and_changes_nothing(
    live: tuple[Service, dict[str, int], dict],
    kind: str,
    data: bytes,
    reason: str,
    line: int | None,
) -> None:
    service, counts, schedules = live
    target = service.kb.root / FILES[kind]
    original = target.read_bytes()
    scope = [] if kind == "config" else [GOAL]  # the config is re-read by every sync
    target.write_bytes(data)
    try:
        tree = tree_snapshot(service.kb.root)
        with pytest.raises(KBError) as caught:
            load(KB(service.kb.root), kind)
        err = caught.value
        assert err.path == FILES[kind]
        assert reason in err.reason
        if line is not None:
            assert err.line == line, str(err)
            assert str(err).startswith(f"{FILES[kind]}:{line}: ")
        assert "\n" not in str(err) and len(str(err)) < 400

        # Through the service: a problem is reported, the last good schedule keeps running.
        problems = service.index.sync(scope)
        assert any(p.path == FILES[kind] for p in problems), problems
        assert any(p.path == FILES[kind] for p in service.index.doctor())
        assert row_counts(service) == counts
        assert schedules_of(service) == schedules
        if kind == "goal":
            with pytest.raises(GoalsuiError):
                service.goals.pause(GOAL)  # a broken definition is never rewritten
        if kind == "worker":
            with pytest.raises(GoalsuiError):
                service.workers.update(GOAL, WORKER, timeout="5m")
        assert tree_snapshot(service.kb.root) == tree
        assert target.read_bytes() == data
    finally:
        target.write_bytes(original)
        service.index.sync(scope)
    assert schedules_of(service) == schedules


# --- hypothesis: arbitrary documents and mutations never crash the parsers --------------------

KEYS = {
    "config": [
        "runner",
        "command",
        "builtin",
        "timeout",
        "silent_token",
        "retry",
        "base_seconds",
        "cap_seconds",
        "max_consecutive_failures",
        "catch_up_limit",
        "alerts",
        "after",
        "cooldown",
        "hooks",
        "sources",
        "ci",
        "secret_env",
        "style",
    ],
    "goal": ["goal_id", "name", "task", "owner", "status", "sort_order", "created_at"],
    "worker": [
        "schedule",
        "cron",
        "timezone",
        "every",
        "at",
        "runner",
        "command",
        "builtin",
        "timeout",
        "capabilities",
        "active_hours",
        "start",
        "end",
    ],
}
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(
        [
            "0 9 * * *",
            "61 * * * *",
            "Europe/Berlin",
            "Mars/Base",
            "10m",
            "0s",
            "2026-12-01T09:00:00Z",
            "25:00",
            "report",
            "github",
            GOAL,
            "../x",
            "@daily",
        ]
    ),
)


def documents(kind: str) -> st.SearchStrategy[object]:
    keys = st.sampled_from(KEYS[kind])
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=5)
        ),
        max_leaves=15,
    )


def parse(kind: str, path: Path) -> None:
    data, text = load_yaml_mapping(path, FILES[kind])
    if kind == "config":
        parse_kb_config(data, text, FILES[kind])
    elif kind == "goal":
        parse_goal(data, text, FILES[kind], GOAL)
    else:
        parse_worker(WORKER, data, text, FILES[kind])


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


FUZZ = settings(max_examples=60, deadline=2000, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("kind", list(FILES))
@FUZZ
@given(data=st.data())
def test_random_documents_parse_or_fail_cleanly(
    scratch: Path, kind: str, data: st.DataObject
) -> None:
    doc = data.draw(documents(kind), label="document")
    text = yaml.safe_dump(doc, allow_unicode=True)
    # Mutate the text too: cut it anywhere, or splice in hostile bytes.
    cut = data.draw(st.integers(0, len(text)), label="cut")
    extra = data.draw(
        st.sampled_from(
            ["", ":", "\t", "&a", "*a", "[", "{", "\x00", "!!python/name:os.system", "'"]
        )
    )
    raw = (text[:cut] + extra + text[cut:]).encode("utf-8", "surrogatepass")
    if data.draw(st.booleans(), label="random bytes"):
        raw = data.draw(st.binary(max_size=200), label="bytes")
    path = scratch / f"{kind}.yaml"
    path.write_bytes(raw)
    try:
        parse(kind, path)
    except KBError as exc:
        assert exc.path == FILES[kind]
        assert exc.reason and "\n" not in str(exc)
