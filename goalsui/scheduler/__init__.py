"""The embedded scheduler: claims due intents, runs isolated turns, records every attempt."""

from goalsui.scheduler.events import RunningInfo, SchedulerEvent
from goalsui.scheduler.loop import Scheduler

__all__ = ["RunningInfo", "Scheduler", "SchedulerEvent"]
