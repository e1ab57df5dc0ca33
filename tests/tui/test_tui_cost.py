"""Cost in the console: the Detail pane's cost panel with sparklines, the status bar's day
total, and budget usage on goal rows (real app, pilot, demo records)."""

from __future__ import annotations

from datetime import timedelta

import yaml
from textual.widgets import Sparkline

from goalsui.service import Service
from goalsui.store.models import IntentRun
from goalsui.tui.app import make_app
from goalsui.tui.widgets.cost_panel import CostPanel
from goalsui.tui.widgets.status_bar import StatusBar
from tests.tui_kit import PULSE, add_run, label, settle, worker_intent

SIZE = (140, 40)


def priced_run(svc: Service, intent_id: int, cost: float | None, seconds: float, ago: int) -> int:
    run_id = add_run(svc, intent_id, "ok", svc.now() - timedelta(minutes=ago), seconds=seconds)
    if cost is not None:
        with svc.store.write() as s:
            run = s.get(IntentRun, run_id)
            assert run is not None
            run.cost_usd, run.tokens_in, run.tokens_out, run.model = cost, 1000, 100, "m"
            s.add(run)
    return run_id


async def test_cost_panel_status_bar_total_and_goal_budget(demo: Service, clock) -> None:
    intent_id = worker_intent(demo, PULSE, "pulse")
    priced_run(demo, intent_id, 0.10, 4, ago=30)
    priced_run(demo, intent_id, None, 6, ago=20)  # reported nothing: unknown
    priced_run(demo, intent_id, 0.20, 8, ago=10)
    definition = demo.kb.root / PULSE / "definition.yaml"
    data = yaml.safe_load(definition.read_text())
    data["budget"] = {"usd_per_day": 0.4}
    definition.write_text(yaml.safe_dump(data))
    app = make_app(demo, clock=clock, scheduler=False, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        main = app.main
        assert not main.query(CostPanel)  # built with the first runs it shows
        assert "$0.3000/$0.4000 day" in label(main.goals.goal_nodes[PULSE])
        status = main.query_one(StatusBar).render().plain
        assert "today $0.3000 +" in status and "unknown" in status  # demo runs said nothing
        main.goals.focus()
        assert main.goals.select_key(f"worker/{PULSE}/pulse")
        await settle(app, pilot)
        panel = main.query_one(CostPanel)
        assert panel.display and panel.intent_id == intent_id
        assert "cost $0.3000 (" in panel.summary and "unknown)" in panel.summary
        assert "last $0.2000" in panel.summary and "last 8.0s" in panel.summary
        costs = panel.query_one("#cost-costs", Sparkline)
        durations = panel.query_one("#cost-durations", Sparkline)
        assert list(costs.data or []) == [0.10, 0.20]  # unknown runs are not drawn as zero
        assert list(durations.data or [])[-3:] == [4.0, 6.0, 8.0]
        # a goal row selected: no intent, no panel
        main.goals.select_key(f"goal/{PULSE}")
        await settle(app, pilot)
        assert not panel.display
