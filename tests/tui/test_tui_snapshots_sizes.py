"""Every size works: the main screen, Failures, Reports, Runs, Threads and Help at 160x48,
100x30 and 80x24 (below 120 columns the main screen shows tabs with fewer panes).

Same scene as tests/tui/test_tui_snapshots.py (fixed clock, KB at a fixed path, UTC).
Update after a reviewed change: ``pytest tests/tui/test_tui_snapshots_sizes.py --snapshot-update``.
"""

from __future__ import annotations

import pytest

from tests.tui.test_tui_snapshots import add_night, console, run_before, scene  # noqa: F401 - fixture
from tests.tui_kit import PULSE


def threads_at_end():
    """The Threads screen, its messages scrolled to the end once the layout settled."""
    first = run_before(keys=("T",))

    async def before(pilot) -> None:
        await first(pilot)
        box = pilot.app.screen.query_one("#threads-messages")
        box.scroll_end(animate=False, immediate=True)
        await pilot.pause(0.1)

    return before


SIZES = [(160, 48), (100, 30), (80, 24)]
SCREENS = {
    "main": run_before(f"worker/{PULSE}/flaky"),
    "main_runs": run_before(f"worker/{PULSE}/flaky", keys=("4",)),
    "failures": run_before(keys=("F",)),
    "reports": run_before(keys=("M",)),
    "reports_branches": run_before(keys=("M", "3")),
    "runs": run_before(keys=("U",)),
    "threads": threads_at_end(),
    "help": run_before(f"worker/{PULSE}/flaky", keys=("question_mark",)),
}


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("screen", list(SCREENS))
def test_screen_at_size(scene, snap_compare, screen: str, size: tuple[int, int]) -> None:  # noqa: F811
    service, clock = scene
    if screen.startswith("reports"):
        add_night(service)
    app = console(service, clock)
    assert snap_compare(app, terminal_size=size, run_before=SCREENS[screen])
