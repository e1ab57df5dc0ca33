"""The console as a reader: with no scheduler of its own and its records in a SQLite file
whose KB index is current, it reads them with the standard library alone and leaves the
database stack (SQLAlchemy, SQLModel, pydantic: more memory than Textual) unloaded until
the operator first acts. Nothing here may import the service's other modules."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from goalsui.tui.model import Dashboard, PlanView


@dataclass(frozen=True)
class RecordsReader:
    """Reads of one KB's SQLite file for the main screen; each returns None when the file
    cannot be read that way (then the service opens and reads instead)."""

    kb_root: Path
    db_file: Path
    state_dir: Path

    def index_current(self) -> bool:
        """Is the database's KB index as the KB folders are now (nothing to re-read)?"""
        from goalsui.service.index_stamp import index_is_current

        return index_is_current(self.kb_root, self.state_dir, self.db_file)

    def dashboard(self, now: datetime) -> Dashboard | None:
        from goalsui.tui.preview import early_dashboard

        return early_dashboard(self.db_file, now, self.kb_root)

    def plan(self, now: datetime, until: datetime) -> PlanView | None:
        from goalsui.service.quick_plan import read_plan
        from goalsui.tui.model import plan_view

        fires = read_plan(self.db_file, self.kb_root, now, until)
        return None if fires is None else plan_view(fires)

    def stamp(self) -> Any:
        """Changes with every commit to the file (two ``stat`` calls)."""
        from goalsui.service.quick import file_stamp

        return file_stamp(self.db_file)


def reader_for(kb_root: Path, db_url: str | None, state_dir: str | None) -> RecordsReader | None:
    """The reader of a KB whose database is a plain SQLite file, else None."""
    from goalsui.service.quick import default_state_dir, sqlite_file

    db_file = sqlite_file(kb_root, db_url, state_dir)
    if db_file is None:
        return None
    folder = Path(state_dir).expanduser().resolve() if state_dir else default_state_dir(kb_root)
    return RecordsReader(kb_root, db_file, folder)
