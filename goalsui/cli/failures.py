"""What the command line says when a command fails for a reason outside goalsui's code. Bad input
and a hostile environment get one line and exit 1, never an internal error."""

from __future__ import annotations

from goalsui.domain.untrusted import plain


def _database(exc: BaseException) -> str | None:
    """A database error the operator can act on, in one line."""
    kind = type(exc)
    if not kind.__module__.startswith("sqlalchemy") or kind.__name__ != "OperationalError":
        return None
    orig = getattr(exc, "orig", None)
    detail = " ".join(str(orig if orig is not None else exc).split())
    lowered = detail.lower()
    if "readonly" in lowered or "read-only" in lowered or "read only" in lowered:
        return "the database is read-only: nothing was changed (check its file permissions)"
    return f"database: {plain(detail, limit=200)}"


def _os_error(exc: OSError) -> str:
    reason = exc.strerror or type(exc).__name__
    where = f": {plain(str(exc.filename), limit=200)}" if exc.filename else ""
    return f"{reason}{where}"


def user_message(exc: BaseException) -> str | None:
    """The one-line message for ``exc`` when it is the operator's to fix, else None."""
    found = _database(exc)
    if found is not None:
        return found
    if isinstance(exc, RecursionError):
        return "the input is nested too deeply"
    if isinstance(exc, OverflowError):
        return f"a number or date is out of range ({plain(str(exc), limit=120)})"
    if isinstance(exc, OSError):
        return _os_error(exc)
    return None
