"""A goal's morning reports, ``reports/<night>.md``; old files named by their morning are recognised
by their heading and renamed to their night."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

from goalsui.domain.nightshift import report_night

REPORTS = "reports"
SNAPSHOT_DIR = ".snapshots"
#: Where an old report goes when its night already has a report named by the new rule.
LEGACY_DIR = ".legacy"
HEAD_BYTES = 1024
_NAME = re.compile(r"^(\d{4}-\d{2}-\d{2})\.md$")


@dataclass(frozen=True)
class StoredReport:
    """One report file of a goal and the night it is about."""

    night: date
    path: Path
    size: int
    legacy: bool = False  # named by its morning, before the night rule


def _first_line(path: Path) -> str:
    with path.open("rb") as fh:
        head = fh.read(HEAD_BYTES)
    return head.decode("utf-8", errors="replace").lstrip("\ufeff").split("\n", 1)[0]


def scan_reports(goal_dir: Path) -> list[StoredReport]:
    """Every dated report file in the goal's ``reports/``, each with its night, by name."""
    folder = goal_dir / REPORTS
    found: list[StoredReport] = []
    if not folder.is_dir():
        return found
    for entry in folder.iterdir():
        match = _NAME.match(entry.name)
        if match is None or not entry.is_file():
            continue
        try:
            night, legacy = report_night(date.fromisoformat(match[1]), _first_line(entry))
            size = entry.stat().st_size
        except (OSError, ValueError):  # a file gone meanwhile, a name like 2026-02-31.md
            continue
        found.append(StoredReport(night, entry, size, legacy))
    return sorted(found, key=lambda r: r.path.name)


def stored_reports(goal_dir: Path) -> list[StoredReport]:
    """The goal's reports, one per night (a night's new-style file wins), oldest first."""
    ordered = sorted(scan_reports(goal_dir), key=lambda r: not r.legacy)  # new-style ones last
    chosen = {report.night: report for report in ordered}
    return [chosen[night] for night in sorted(chosen)]


def snapshot_dirs(goal_dir: Path) -> dict[date, Path]:
    """Report snapshots by night (an old-style name belongs to the night before it)."""
    root = goal_dir / REPORTS / SNAPSHOT_DIR
    if not root.is_dir():
        return {}
    legacy = {r.path.stem for r in scan_reports(goal_dir) if r.legacy}
    found: list[tuple[bool, date, Path]] = []  # (named by its night, night, folder)
    for entry in root.iterdir():
        try:
            named = date.fromisoformat(entry.name)
        except ValueError:
            continue
        if entry.is_dir():
            old = entry.name in legacy
            found.append((not old, named - timedelta(days=1) if old else named, entry))
    # a night's own snapshot comes last, so it wins over an old-style one
    return {night: path for _, night, path in sorted(found, key=lambda f: f[0])}


def _move_file(src: Path, dst: Path) -> bool:
    """Rename ``src`` to ``dst`` unless ``dst`` exists (never overwrites)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except FileExistsError:
        return False
    except OSError:  # a file system without hard links
        if dst.exists():
            return False
        os.replace(src, dst)
        return True
    src.unlink()
    return True


def _move_dir(src: Path, dst: Path) -> bool:
    if not src.is_dir() or dst.exists():
        return False
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.rename(src, dst)
    except OSError:
        return False
    return True


def migrate_reports(goal_dir: Path) -> list[tuple[Path, Path]]:
    """Rename old reports and snapshots to their nights, oldest first (clashes: ``.legacy/``)."""
    folder = goal_dir / REPORTS
    moves: list[tuple[Path, Path]] = []
    for report in scan_reports(goal_dir):
        if not report.legacy:
            continue
        src = report.path
        dst = folder / f"{report.night.isoformat()}.md"
        snap = folder / SNAPSHOT_DIR / src.stem
        if _move_file(src, dst):
            moves.append((src, dst))
            snap_dst = folder / SNAPSHOT_DIR / report.night.isoformat()
        else:
            dst = folder / LEGACY_DIR / src.name
            if not _move_file(src, dst):
                continue
            moves.append((src, dst))
            snap_dst = folder / LEGACY_DIR / SNAPSHOT_DIR / src.stem
        if _move_dir(snap, snap_dst):
            moves.append((snap, snap_dst))
    return moves
