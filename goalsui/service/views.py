"""The service's view values (no database imports).

They are declared in :mod:`goalsui.domain.views`, the lowest layer, because the KB's
quick first-frame read (:mod:`goalsui.kb.quick`) fills the same goal and worker views
before the database is open, and the KB layer cannot import the service.
"""

from __future__ import annotations

from goalsui.domain.views import EmitResult, GoalView, Problem, WorkerView

__all__ = ["EmitResult", "GoalView", "Problem", "WorkerView"]
