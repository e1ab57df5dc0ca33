"""``/metrics``, ``/healthz`` (liveness) and ``/readyz`` (a fresh database answer and a running,
ticking scheduler) over aiohttp in the daemon's loop."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest

from goalsui.domain.states import SchedulerState
from goalsui.ops import listen
from goalsui.ops.metrics import make_registry

if TYPE_CHECKING:
    from goalsui.service import Service


log = logging.getLogger("goalsui.ops")
DB_PROBE_TIMEOUT = 5.0  # seconds a readiness probe waits for the database
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def tick_age(scheduler: Any, now_mono: float) -> float | None:
    """Seconds since the scheduler's ``last_tick`` heartbeat; None when it records none."""
    mono = getattr(getattr(scheduler, "last_tick", None), "monotonic", None)
    return now_mono - float(mono) if isinstance(mono, int | float) else None


class Readiness:
    """Whether this process can do its work: the database answers, the scheduler ticks."""

    def __init__(self, service: Service, scheduler: Any, *, max_quiet: float) -> None:
        self.service = service
        self.scheduler = scheduler
        self.max_quiet = max_quiet

    def degraded(self) -> str | None:
        """What the running scheduler cannot do now (it retries), or None."""
        value = getattr(self.scheduler, "degraded", None)
        return " ".join(str(value).split())[:400] if value else None

    def scheduler_problem(self) -> str | None:
        state = str(getattr(self.scheduler, "state", "unknown"))
        if state != SchedulerState.RUNNING:
            return f"the scheduler is {' '.join(state.split())[:200]}"
        degraded = self.degraded()
        if degraded is not None:
            return f"the scheduler is degraded: {degraded}"
        age = tick_age(self.scheduler, time.monotonic())
        if age is not None and age > self.max_quiet:
            return f"the scheduler loop last ticked {age:.0f}s ago (limit {self.max_quiet:g}s)"
        return None

    def scheduler_up(self) -> bool:
        return self.scheduler_problem() is None

    async def problem(self) -> str | None:
        """None when ready, else one line saying why not."""
        try:
            db = await asyncio.wait_for(
                asyncio.to_thread(self.service.overview.database_problem), DB_PROBE_TIMEOUT
            )
        except TimeoutError:
            db = f"the database did not answer within {DB_PROBE_TIMEOUT:g}s"
        return db or self.scheduler_problem()


def make_app(readiness: Readiness, registry: CollectorRegistry) -> web.Application:
    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def readyz(_: web.Request) -> web.Response:
        reason = await readiness.problem()
        if reason is None:
            return web.Response(text="ready\n")
        return web.Response(status=503, text=f"not ready: {reason}\n")

    async def metrics(_: web.Request) -> web.Response:
        body = await asyncio.to_thread(generate_latest, registry)  # it queries the database
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})

    app = web.Application()
    routes = {"/healthz": healthz, "/readyz": readyz, "/metrics": metrics}
    app.add_routes([web.get(path, handler) for path, handler in routes.items()])
    return app


async def start_ops_server(
    service: Service, scheduler: Any, host: str, port: int, *, max_quiet: float
) -> listen.Served:
    """Serve the three endpoints on ``host:port`` (0: a free port), with the port limits."""
    readiness = Readiness(service, scheduler, max_quiet=max_quiet)
    registry = make_registry(
        service, readiness.scheduler_up, lambda: readiness.degraded() is not None
    )
    app = make_app(readiness, registry)
    served = await listen.serve(
        app, host, port, name="metrics server", failure="cannot serve metrics"
    )
    log.info("metrics on http://%s:%s/metrics", host, served.port)
    return served
