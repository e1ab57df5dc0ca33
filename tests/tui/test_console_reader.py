"""A console with no scheduler of its own reads its records without the database stack
until the operator acts (``goalsui/tui/reader.py``): what it shows is the records, kept
fresh; a key, a KB edit or an index that is not current opens the service."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import Any

import pytest

from goalsui.domain.records import saved_id
from goalsui.domain.states import IntentStatus
from goalsui.domain.timeutil import utcnow
from goalsui.service import Service
from goalsui.tui.app import make_app
from goalsui.tui.preview import preview_dashboard
from goalsui.tui.reader import RecordsReader, reader_for
from tests.tui.test_tui_startup import SIZE, traced_console
from tests.tui_kit import PULSE, REPO, wait_for, watching

ORM = ("sqlalchemy", "sqlmodel", "pydantic")


@pytest.fixture
def indexed(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """The sample KB and a state folder whose database has just indexed it."""
    kb, state = tmp_path / "kb", tmp_path / "state"
    import shutil

    shutil.copytree(REPO / "sample_kb", kb)
    Service.open(kb, None, state).close()
    yield kb, state


def reading_app(kb: Path, state: Path, *, watch: bool = False) -> Any:
    """The console as ``goalsui console --no-scheduler`` builds it."""
    reader = reader_for(kb, None, str(state))
    assert isinstance(reader, RecordsReader)
    return make_app(
        None,
        scheduler=False,
        watch=watch,
        sync_on_start=True,
        opener=lambda: Service.open(kb, None, state, actor="operator", sync=False),
        kb_root=kb,
        preview=preview_dashboard(kb, utcnow(), reader.db_file),
        reader=reader,
    )


@asynccontextmanager
async def reading_console(
    kb: Path, state: Path, *, watch: bool = False
) -> AsyncIterator[tuple[Any, Any]]:
    """That console run by its pilot, once it serves (its records and plan are on screen)."""
    app = reading_app(kb, state, watch=watch)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.startup.serving, what="the console serving")
        yield app, pilot


async def test_reading_console_keeps_its_records_fresh_and_opens_on_a_key(
    indexed: tuple[Path, Path],
) -> None:
    kb, state = indexed
    async with reading_console(kb, state) as (app, pilot):
        assert app.startup.reading and not app.service_ready
        await wait_for(pilot, lambda: bool(app.main.plan.fires), what="the plan, read too")
        dash = app.dashboard
        assert dash is not None and dash.early and dash.intents
        # another process changes a record: the console shows it without opening the service
        with closing(Service.open(kb, None, state, sync=False)) as other:
            pulse = next(i for i in other.intents.list() if i.worker == "pulse")
            other.intents.pause(saved_id(pulse))

        def paused() -> bool:
            shown = app.dashboard.intents.get(saved_id(pulse)) if app.dashboard else None
            return shown is not None and shown.status == IntentStatus.PAUSED

        await wait_for(pilot, paused, what="the paused intent on screen")
        assert not app.service_ready and app.startup.reading
        app.main.goals.select_key(f"worker/{PULSE}/pulse")
        await pilot.pause()
        assert not app.service_ready
        # the operator presses p (resume): the key waits for the service, then acts
        await pilot.press("p")
        await wait_for(pilot, lambda: app.service_ready, what="the service to open")
        assert not app.startup.reading

        def resumed() -> bool:
            shown = app.dashboard.intents.get(saved_id(pulse)) if app.dashboard else None
            return (
                not app.dashboard.early
                and shown is not None
                and shown.status == IntentStatus.ACTIVE
            )

        await wait_for(pilot, resumed, what="the held key's resume, on screen")
        with closing(Service.open(kb, None, state, sync=False)) as other:
            assert other.intents.get(saved_id(pulse)).status == IntentStatus.ACTIVE


async def test_an_index_behind_the_kb_opens_the_service_and_reads_the_kb(
    indexed: tuple[Path, Path],
) -> None:
    kb, state = indexed
    prompt_def = kb / PULSE / "workers" / "pulse" / "definition.yaml"
    text = prompt_def.read_text(encoding="utf-8")
    prompt_def.write_text(text.replace("every: 1m", "every: 7m"), encoding="utf-8")
    assert "every: 7m" in prompt_def.read_text(encoding="utf-8")
    async with reading_console(kb, state) as (app, pilot):
        assert app.service_ready and not app.startup.reading

        def synced() -> bool:
            intents = app.dashboard.intents.values() if app.dashboard else ()
            return any(i.goal_id == PULSE and i.schedule == "7m" for i in intents)

        await wait_for(pilot, synced, what="the edited schedule, indexed")


async def test_a_kb_edit_while_reading_opens_the_service_to_index_it(
    indexed: tuple[Path, Path],
) -> None:
    kb, state = indexed
    async with reading_console(kb, state, watch=True) as (app, pilot):
        await watching(app, pilot)
        assert app.startup.reading and not app.service_ready
        definition = kb / PULSE / "workers" / "pulse" / "definition.yaml"
        text = definition.read_text(encoding="utf-8")
        definition.write_text(text.replace("every: 1m", "every: 9m"), encoding="utf-8")

        def synced() -> bool:
            intents = app.dashboard.intents.values() if app.dashboard else ()
            return any(i.goal_id == PULSE and i.schedule == "9m" for i in intents)

        await wait_for(pilot, synced, what="the edited schedule, indexed")
        assert app.service_ready


#: at serving, then once the plan is on screen: what is loaded, and what the console shows
READER_LISTENERS = """    def serving():
        seen["serving"] = [m for m in HEAVY if m in sys.modules]
        seen["reading"] = app.startup.reading
        def planned():
            if not app.main.plan.fires:
                return
            seen["planned"] = [m for m in HEAVY if m in sys.modules]
            seen["intents"] = len(app.dashboard.intents)
            app.exit(0)
        app.set_interval(0.05, planned)
    app.startup.serving_listeners.append(serving)
"""


def test_goalsui_console_no_scheduler_serves_without_the_orm(
    indexed: tuple[Path, Path], tmp_path: Path
) -> None:
    """A real ``goalsui console --no-scheduler`` (headless driver) on an indexed KB: its
    records and its plan are on screen and SQLAlchemy, SQLModel and pydantic never loaded."""
    kb, state = indexed
    seen = traced_console(kb, state, tmp_path, READER_LISTENERS)
    assert seen["reading"] is True and seen["intents"] > 0
    for mark in ("serving", "planned"):
        assert not set(ORM) & set(seen[mark]), f"{mark}: {seen[mark]}"


async def test_q_quits_a_reading_console_without_opening_its_service(
    indexed: tuple[Path, Path],
) -> None:
    kb, state = indexed
    async with reading_console(kb, state) as (app, pilot):
        assert app.startup.reading
        await pilot.press("q")
        await wait_for(pilot, lambda: app.ending, what="the console to end")
    assert not app.service_ready and app.return_code == 0


async def test_an_edit_between_the_index_check_and_the_watch_is_read(
    indexed: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The edit lands after the first check said "current" and before the watch is up:
    the check made once the watch runs sees it, and the KB is read again."""
    kb, state = indexed
    definition = kb / PULSE / "workers" / "pulse" / "definition.yaml"
    text = definition.read_text(encoding="utf-8")
    definition.write_text(text.replace("every: 1m", "every: 5m"), encoding="utf-8")
    checks: list[bool] = []
    real = RecordsReader.index_current

    def first_check_misses_the_edit(reader: RecordsReader) -> bool:
        checks.append(real(reader))
        return len(checks) == 1 or checks[-1]

    monkeypatch.setattr(RecordsReader, "index_current", first_check_misses_the_edit)
    async with reading_console(kb, state, watch=True) as (app, pilot):
        # no look at startup.reading here: under load the second check may have opened the
        # service already; two checks (below) say the console read first, then checked again

        def synced() -> bool:
            intents = app.dashboard.intents.values() if app.dashboard else ()
            return any(i.goal_id == PULSE and i.schedule == "5m" for i in intents)

        await wait_for(pilot, synced, what="the edit, indexed after the second check")
        assert checks == [False, False] and app.service_ready


async def test_a_reading_console_shows_kb_files_before_any_key(
    indexed: tuple[Path, Path],
) -> None:
    """The goal's files, its log count and its workers' boxes come from the KB, which needs
    no database: a console that only reads shows them without waiting for a key."""
    kb, state = indexed
    (kb / PULSE / "workers" / "pulse" / "outbox" / "report.md").write_text("done\n", "utf-8")
    protocol = (kb / PULSE / "protocol.md").read_text(encoding="utf-8")
    app = reading_app(kb, state)
    shown: list[str] = []
    app.detail_listeners.append(lambda tab, text: shown.append(text))
    async with app.run_test(size=SIZE) as pilot:
        # (the check that the index is current runs in a thread beside these reads: under
        # load it may answer after them)
        await wait_for(pilot, lambda: app.startup.reading, what="the console, reading")
        await wait_for(pilot, lambda: protocol in shown, what="the goal's protocol.md")
        tree = app.main.goals
        await wait_for(pilot, lambda: PULSE in tree.log_counts, what="the goal's log, counted")
        assert tree.log_counts[PULSE] == 3  # the sample log's entries
        assert tree.boxes[PULSE]["pulse"].outbox == 1 and tree.boxes[PULSE]["flaky"].inbox == 0
        assert "log  3 today" in str(tree.goal_nodes[PULSE].children[-1].label)
        assert not app.service_ready and app.startup.reading  # no key: still only reading
