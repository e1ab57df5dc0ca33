"""One scheduler per KB: the console watches when a daemon already serves its KB.

``goalsui daemon`` registers itself in the state folder
(:mod:`goalsui.service.schedulers`); the console asks the service before starting its
own scheduler and, unless ``--scheduler`` forces one, says who serves the KB instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from goalsui.service import Service

__all__ = ["serving_note"]


def serving_note(service: Service) -> str | None:
    """``daemon pid 4242`` when another scheduler process serves this KB, else None.

    Blocking (reads the state folder): call it from a worker thread.
    """
    try:
        live = service.schedulers.live()
    except OSError:
        return None  # an unreadable state folder: behave as before (start one)
    if not live:
        return None
    more = f" +{len(live) - 1}" if len(live) > 1 else ""
    return f"{live[0].describe()}{more}"
