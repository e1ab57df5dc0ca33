"""``goalsui db upgrade`` and ``goalsui db status``: the database schema (migrations)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from goalsui.cli.common import Subparsers, command, db_settings, group, kb_path, print_json
from goalsui.errors import ValidationError

if TYPE_CHECKING:
    from goalsui.service import Service


def register(sub: Subparsers) -> None:
    dsub = group(sub, "db", "the database schema: status and migrations")
    upgrade = "apply schema migrations (creates the schema of an empty database)"
    command(dsub, "upgrade", cmd_upgrade, upgrade)
    command(dsub, "status", cmd_status, "the database's schema revision against this goalsui's")


def _service(args: argparse.Namespace) -> Service:
    """A service that does NOT check the schema on open (that is what we are here for)."""
    from goalsui.service import Service

    db, state = db_settings(args)
    try:
        return Service(kb_path(args), db, state)
    except OSError as exc:
        raise ValidationError(f"cannot prepare the state folder: {exc}") from None


def _schema(args: argparse.Namespace, step: str) -> tuple[str, dict[str, Any]]:
    """The database's display URL and what ``service.schema.<step>()`` returns."""
    service = _service(args)
    try:
        result = getattr(service.schema, step)()
    finally:
        service.close()
    where = service.db_url_display()
    if args.json:
        print_json({"database": where, **result})
    return where, result


def cmd_upgrade(args: argparse.Namespace) -> int:
    where, result = _schema(args, "upgrade")
    before, after = result["before"], result["after"]
    if args.json:
        return 0
    if before["state"] == "current":
        print(f"{where}: already at the newest schema (rev {after['head']})")
    else:
        old = ",".join(before["current"]) or "none"
        applied = ", ".join(before["pending"]) if before["state"] != "unversioned" else "stamped"
        print(f"{where}: schema upgraded from rev {old} to rev {after['head']} ({applied})")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    where, result = _schema(args, "status")
    if not args.json:
        print(f"database: {where}\ncurrent:  {','.join(result['current']) or 'none'}")
        print(f"head:     {result['head']}\nstate:    {result['message']}")
    return 0
