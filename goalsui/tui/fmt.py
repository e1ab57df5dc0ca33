"""Formatting for the console: countdowns, durations, status glyphs and colours (from a
:class:`Palette` built from the active theme; no Textual import)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from goalsui.domain.untrusted import plain


@dataclass(frozen=True)
class Palette:
    """Concrete colours for statuses (Rich styles cannot use Textual CSS variables)."""

    ok: str = "#5cd18a"
    failed: str = "#f2605a"
    warning: str = "#f0b24a"
    running: str = "#5aa7e8"
    accent: str = "#c3a6f2"
    muted: str = "#7a8594"
    text: str = "#dde3ea"

    @classmethod
    def from_theme(cls, theme: object) -> Palette:
        """Build from a ``textual.theme.Theme`` (duck-typed to keep this module Textual-free)."""
        from textual.color import Color

        def get(name: str, default: str) -> str:
            return getattr(theme, name, None) or default

        dark = getattr(theme, "dark", True)
        fg = Color.parse(get("foreground", "#dde3ea" if dark else "#1b1f24"))
        bg = Color.parse(get("background", "#10151c" if dark else "#ffffff"))
        return cls(
            ok=get("success", cls.ok),
            failed=get("error", cls.failed),
            warning=get("warning", cls.warning),
            running=get("primary", cls.running),
            accent=get("accent", cls.accent),
            muted=fg.blend(bg, 0.45).hex,
            text=fg.hex,
        )

    def run(self, status: str | None) -> str:
        """Colour of a run status."""
        return str(getattr(self, RUN_LOOK.get(status or "", ("", "muted", 9))[1]))

    def intent(self, status: str | None) -> str:
        """Colour of an intent status."""
        return str(getattr(self, INTENT_LOOK.get(status or "", ("", "muted"))[1]))


#: run status -> (glyph, the palette's colour, severity: the worst of several runs drawn in
#: one timeline cell shows, 0 first)
RUN_LOOK = {
    "ok": ("●", "ok", 5),
    "silent": ("○", "ok", 6),
    "running": ("▶", "running", 4),
    "failed": ("✗", "failed", 0),
    "timeout": ("✗", "failed", 1),
    "interrupted": ("✗", "failed", 2),
    "missed": ("!", "warning", 3),
    "skipped": ("·", "muted", 7),
    "cancelled": ("⊘", "muted", 8),
}
INTENT_LOOK = {
    "active": ("●", "ok"),
    "firing": ("▶", "running"),
    "paused": ("⏸", "warning"),
    "failed": ("✗", "failed"),
    "done": ("✓", "muted"),
    "cancelled": ("⊘", "muted"),
}
RUN_GLYPH = {status: look[0] for status, look in RUN_LOOK.items()}
INTENT_GLYPH = {status: glyph for status, (glyph, _) in INTENT_LOOK.items()}


#: countdowns further away than this show whole minutes, so they change once a minute
SECONDS_SHOWN_BELOW = 600


def countdown(target: datetime | None, now: datetime) -> str:
    """``in 42s``, ``in 4m12s``, ``in 25m``, ``in 3h12m``, ``in 2d3h``; ``due`` when overdue;
    ``-`` if none. Seconds only in the last ten minutes: an idle console repaints a
    countdown once a minute, not once a second."""
    if target is None:
        return "-"
    seconds = int((target - now).total_seconds())
    if seconds <= 0:
        return "due"
    if SECONDS_SHOWN_BELOW <= seconds < 3600:
        return f"in {seconds // 60}m"
    return "in " + short_span(seconds)


def short_span(seconds: float) -> str:
    """A compact span: ``42s``, ``4m12s``, ``3h12m``, ``2d3h``."""
    s = int(max(0, seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        m, sec = divmod(s, 60)
        return f"{m}m{sec:02d}s"
    if s < 86400:
        h, rest = divmod(s, 3600)
        return f"{h}h{rest // 60:02d}m"
    d, rest = divmod(s, 86400)
    return f"{d}d{rest // 3600}h"


def elapsed(start: datetime | None, now: datetime) -> str:
    """A stopwatch: ``0:07``, ``12:03``, ``1:02:03``."""
    if start is None:
        return "-"
    s = int(max(0, (now - start).total_seconds()))
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


def duration(start: datetime | None, end: datetime | None) -> str:
    if start is None or end is None:
        return "-"
    return short_span((end - start).total_seconds())


def ago(when: datetime | None, now: datetime) -> str:
    if when is None:
        return "-"
    s = (now - when).total_seconds()
    if s < 0:
        return "in " + short_span(-s)
    return short_span(s) + " ago"


def clock_time(when: datetime | None, now: datetime) -> str:
    """Local wall time for people: ``14:05`` today, ``Tue 14:05`` within a week, else the date."""
    if when is None:
        return "-"
    local, today = when.astimezone(), now.astimezone().date()
    if local.date() == today:
        return local.strftime("%H:%M:%S")
    if abs((local.date() - today).days) < 7:
        return local.strftime("%a %H:%M")
    return local.strftime("%Y-%m-%d %H:%M")


def compact_time(when: datetime | None, now: datetime) -> str:
    """At most 11 cells: ``14:05:12`` today, ``12-01 14:05`` this year, else the date."""
    if when is None:
        return "-"
    local, today = when.astimezone(), now.astimezone()
    if local.date() == today.date():
        return local.strftime("%H:%M:%S")
    if local.year == today.year:
        return local.strftime("%m-%d %H:%M")
    return local.strftime("%Y-%m-%d")


def describe_schedule(kind: str | None, schedule: str | None, tz: str | None) -> str:
    if kind == "heartbeat":
        return f"every {schedule or '30m'}"
    if kind == "cron":
        zone = "" if not tz or tz == "UTC" else f" {tz}"
        return f"cron {schedule}{zone}"
    if kind == "at":
        return f"at {schedule}"
    if kind == "event":
        return "on event"
    return "-"


def one_line(text: str | None, limit: int = 200) -> str:
    """The first line of untrusted text, cleaned, for a table cell."""
    cleaned = plain(text or "")
    first = " ".join(cleaned.split())
    return first if len(first) <= limit else first[: limit - 1] + "…"


def name_cell(title: str | None, limit: int) -> str:
    """A ``goal/worker`` title cut to ``limit`` cells keeping the worker whole: the goal
    part is shortened first (``demo-p…/flaky``), so the name is never cut to nothing."""
    first = one_line(title, 10_000)
    if len(first) <= limit or "/" not in first:
        return one_line(first, limit)
    head, _, tail = first.rpartition("/")
    tail = tail.strip()
    room = limit - len(tail) - 2  # "…/"
    if room >= 1:
        return f"{head[:room].rstrip()}…/{tail}"
    return one_line(tail, limit)
