"""Bindings: every one has an id, no two active together share a key, remaps apply."""

from __future__ import annotations

from collections import defaultdict

from textual.binding import Binding
from textual.dom import DOMNode

from goalsui.service import Service
from goalsui.tui import keys
from goalsui.tui.app import make_app
from goalsui.tui.screens.failures import FailuresScreen
from goalsui.tui.screens.records import EventsScreen, JournalScreen, ThreadsScreen
from goalsui.tui.screens.reports import ReportsScreen
from tests.tui_kit import PULSE, settle

SIZE = (110, 36)


def clashes(screen) -> list[str]:
    """Keys bound twice in the chain from the focused widget up to the app.

    Only bindings of ours (they all have ids) count: Textual's own duplicates
    (ctrl+c on screen and app) are its business.
    """
    by_key: dict[str, list[tuple[object, Binding]]] = defaultdict(list)
    for node, bindings in screen._modal_binding_chain:
        for key, binding in bindings:
            by_key[key].append((node, binding))
    problems = []
    for key, found in by_key.items():
        if len(found) > 1 and any(b.id for _, b in found):
            described = ", ".join(f"{type(n).__name__}:{b.id or b.action}" for n, b in found)
            problems.append(f"{key}: {described}")
    return problems


def textual_keys(node) -> set[str]:
    """Keys bound by the Textual class a goalsui widget builds on."""
    for cls in type(node).__mro__:
        if issubclass(cls, DOMNode) and cls.__module__.startswith("textual"):
            merged = cls._merged_bindings
            return set(merged.key_to_bindings) if merged is not None else set()
    return set()


def all_ids(app) -> list[str]:
    """Bindings of ours without an id (Textual's own are left alone)."""
    missing = []
    nodes = [app, *(n for screen in app.screen_stack for n in screen.walk_children(with_self=True))]
    for node in nodes:
        inherited = textual_keys(node)
        for key, binding in node._bindings:
            if binding.id is None and key not in inherited:
                missing.append(f"{type(node).__name__}:{key}")
    return missing


async def test_no_two_active_bindings_share_a_key(demo: Service, clock) -> None:
    """Every pane, the filter, every screen and the modals (a read-only console only has fewer keys)."""
    read_only = False
    app = make_app(demo, scheduler=False, watch=False, clock=clock, read_only=read_only)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        main = app.main
        problems: list[str] = []
        for key, pane in (
            ("2", "threads"),
            ("3", "timeline"),
            ("4", "failed"),
            ("5", "detail"),
            ("1", "goals"),
        ):
            await pilot.press(key)  # the pane keys work ...
            await settle(app, pilot)
            assert main.pane == pane
            problems += [f"main/{pane}: {p}" for p in clashes(app.screen)]
        await pilot.press("tab")  # ... and so does tab (narrow: to the next pane shown)
        await settle(app, pilot)
        assert main.pane == ("detail" if main.has_class("-narrow") else "threads")
        assert not all_ids(app)
        await pilot.press("slash")
        await settle(app, pilot)
        problems += [f"filter: {p}" for p in clashes(app.screen)]
        await pilot.press("escape")
        await settle(app, pilot)
        assert app.screen is main and main.filter_target is None
        screens = {
            "F": FailuresScreen,
            "M": ReportsScreen,
            "E": EventsScreen,
            "T": ThreadsScreen,
            "L": JournalScreen,
        }
        for key in ("F",) if read_only else ("F", "M", "E", "T", "L"):
            await pilot.press(key)
            await settle(app, pilot)
            assert isinstance(app.screen, screens[key]), key
            problems += [f"{type(app.screen).__name__}: {p}" for p in clashes(app.screen)]
            assert not all_ids(app)
            await pilot.press("escape")
            await settle(app, pilot)
            assert app.screen is main
        main.goals.select_key(f"worker/{PULSE}/pulse")
        await settle(app, pilot)
        for key in ("question_mark", *(() if read_only else ("X",))):
            await pilot.press(key)
            await settle(app, pilot)
            problems += [f"{type(app.screen).__name__}: {p}" for p in clashes(app.screen)]
            await pilot.press("escape")
            await settle(app, pilot)
        assert not problems, "\n".join(problems)


def test_every_binding_declares_an_id() -> None:
    groups = [
        keys.APP,
        keys.MAIN,
        keys.GOALS_SAFE,
        keys.GOALS_ACTIONS,
        keys.THREADS_SAFE,
        keys.THREADS_ACTIONS,
        keys.TIMELINE_SAFE,
        keys.TIMELINE_ACTIONS,
        keys.FAILED_SAFE,
        keys.FAILED_ACTIONS,
        keys.DETAIL_SAFE,
        keys.DETAIL_ACTIONS,
        [keys.BACK],
        keys.FAILURES_ACTIONS,
        keys.OUTPUT_SCREEN,
    ]
    assert all(b.id for group in groups for b in group)


def test_keymap_conflicts() -> None:
    assert keys.keymap_conflicts({"run_now": "p"}) == ["keymap: pause and run_now are both on 'p'"]
    assert keys.keymap_conflicts({"run_now": "p", "pause": "P"}) == []
    assert keys.keymap_conflicts({"todo.add": "n"}) == []
    assert keys.keymap_conflicts({}) == []


def test_clean_keymap_reports_unknown_ids_and_bad_keys() -> None:
    keymap, problems = keys.clean_keymap({"run_now": "n", "nope": "z", "pause": 5})
    assert keymap == {"run_now": "n"}
    assert len(problems) == 2 and "nope" in problems[0]
    assert keys.clean_keymap("x")[1]


async def test_a_remap_onto_a_taken_key_is_reported(demo: Service, clock) -> None:
    """Textual lets the remapped binding take the key; the operator is told which one lost it."""
    config = demo.kb.root / "goalsui.yaml"
    config.write_text(config.read_text() + "\nkeymap:\n  run_now: p\n")
    app = make_app(demo, scheduler=False, watch=False, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.main.goals.select_key(f"worker/{PULSE}/pulse")
        await settle(app, pilot)
        assert not clashes(app.screen)
        assert app.screen.active_bindings["p"].binding.id == "run_now"
        messages = [n.message for n in app.notices]
        assert any("pause and run_now are both on 'p'" in m for m in messages), messages
