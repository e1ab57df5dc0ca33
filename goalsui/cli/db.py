"""``goalsui db upgrade`` and ``goalsui db status``: the database schema (migrations)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from goalsui.cli.common import add_json, db_settings, kb_path, print_json
from goalsui.errors import ValidationError

if TYPE_CHECKING:
    from goalsui.service import Service


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    db = sub.add_parser("db", help="the database schema: status and migrations")
    dsub = db.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    upgrade = dsub.add_parser(
        "upgrade", help="apply schema migrations (creates the schema of an empty database)"
    )
    add_json(upgrade)
    upgrade.set_defaults(func=cmd_upgrade)
    status = dsub.add_parser("status", help="the database's schema revision against this goalsui's")
    add_json(status)
    status.set_defaults(func=cmd_status)


def _service(args: argparse.Namespace) -> Service:
    """A service that does NOT check the schema on open (that is what we are here for)."""
    from goalsui.service import Service

    db, state = db_settings(args)
    try:
        return Service(kb_path(args), db, state)
    except OSError as exc:
        raise ValidationError(f"cannot prepare the state folder: {exc}") from None


def cmd_upgrade(args: argparse.Namespace) -> int:
    service = _service(args)
    try:
        result = service.schema.upgrade()
    finally:
        service.close()
    if args.json:
        print_json({"database": service.db_url_display(), **result})
        return 0
    before, after = result["before"], result["after"]
    where = service.db_url_display()
    if before["state"] == "current":
        print(f"{where}: already at the newest schema (rev {after['head']})")
    else:
        old = ",".join(before["current"]) or "none"
        applied = ", ".join(before["pending"]) if before["state"] != "unversioned" else "stamped"
        print(f"{where}: schema upgraded from rev {old} to rev {after['head']} ({applied})")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    service = _service(args)
    try:
        result = service.schema.status()
    finally:
        service.close()
    if args.json:
        print_json({"database": service.db_url_display(), **result})
        return 0
    print(f"database: {service.db_url_display()}")
    print(f"current:  {','.join(result['current']) or 'none'}")
    print(f"head:     {result['head']}")
    print(f"state:    {result['message']}")
    return 0
