"""Prometheus metrics read from the database per scrape, in a registry of its own; a prune can lower
a counter (a reset)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from goalsui.domain.states import RunStatus

if TYPE_CHECKING:
    from goalsui.service import Service
    from goalsui.store.usage import HistogramData


log = logging.getLogger("goalsui.ops")

DURATION_BUCKETS = (1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0)
LATENESS_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0, 60.0, 300.0)


class GoalsuiCollector(Collector):
    """Yields goalsui's metrics; ``scheduler_up()`` says whether this process's loop lives."""

    def __init__(
        self, service: Service, scheduler_up: Callable[[], bool], degraded: Callable[[], bool]
    ) -> None:
        self.service = service
        self.scheduler_up = scheduler_up
        self.degraded = degraded

    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(
            "goalsui_scheduler_up",
            "1 while this process's scheduler loop is running and ticking",
            value=1.0 if self.scheduler_up() else 0.0,
        )
        yield GaugeMetricFamily(
            "goalsui_scheduler_degraded",
            "1 while this process's scheduler runs but cannot do its work (a full disk, a "
            "database that refuses writes); it retries and recovers by itself",
            value=1.0 if self.degraded() else 0.0,
        )
        try:
            stats = self.service.overview.run_stats(DURATION_BUCKETS, LATENESS_BUCKETS)
        except Exception as exc:  # noqa: BLE001 - a scrape never crashes the daemon
            log.warning("metrics: the database did not answer: %s", exc)
            return
        runs = CounterMetricFamily(
            "goalsui_runs", "Finished runs by status and intent kind", labels=["status", "kind"]
        )
        for (status, kind), count in sorted(stats.runs.items()):
            if status != RunStatus.RUNNING:
                runs.add_metric([status, kind], count)
        yield runs
        missed = sum(n for (s, _), n in stats.runs.items() if s == RunStatus.MISSED)
        yield CounterMetricFamily("goalsui_missed", "Occurrences recorded missed", value=missed)
        yield CounterMetricFamily(
            "goalsui_budget_skipped",
            "Turns skipped because their budget was spent",
            value=stats.budget_skips,
        )
        intents = GaugeMetricFamily("goalsui_intents", "Intents by status", labels=["status"])
        for status, count in sorted(stats.intents.items()):
            intents.add_metric([status], count)
        yield intents
        cost = CounterMetricFamily(
            "goalsui_cost_usd",
            "Cost the agents reported, in USD (runs without a reported cost add nothing)",
            labels=["goal", "worker"],
        )
        for (goal, worker), usd in sorted(stats.cost.items()):
            cost.add_metric([goal, worker], usd)
        yield cost
        tokens = CounterMetricFamily(
            "goalsui_tokens", "Tokens the agents reported", labels=["direction"]
        )
        tokens.add_metric(["in"], stats.tokens_in)
        tokens.add_metric(["out"], stats.tokens_out)
        yield tokens
        yield _histogram(
            "goalsui_run_duration_seconds", "Run duration (start to finish)", stats.duration
        )
        yield _histogram(
            "goalsui_fire_lateness_seconds",
            "How late a run started after its planned time",
            stats.lateness,
        )


def _histogram(name: str, doc: str, data: HistogramData) -> HistogramMetricFamily:
    buckets = [
        (str(float(b)), float(c)) for b, c in zip(data.bounds, data.cumulative, strict=False)
    ]
    buckets.append(("+Inf", float(data.count)))
    return HistogramMetricFamily(name, doc, buckets=buckets, sum_value=data.total)


def make_registry(
    service: Service, scheduler_up: Callable[[], bool], degraded: Callable[[], bool]
) -> CollectorRegistry:
    """A registry holding only goalsui's collector."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(GoalsuiCollector(service, scheduler_up, degraded))
    return registry
