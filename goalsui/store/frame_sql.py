"""The first frame's SQL: the Core statements of :mod:`goalsui.store.claims.statements`
compiled for SQLite, written by its ``frame_module()`` (tests/unit/test_frame_sql.py
fails when they drift). Text, so that the first frame imports no SQLAlchemy."""

SOONEST = "SELECT min(intent.next_run_at) AS min_1 FROM intent WHERE intent.status = 'active'"
DUE_COUNT = "SELECT count(*) AS count_1 FROM intent WHERE intent.status = 'active' AND intent.next_run_at <= ?"
RUNNING_COUNT = "SELECT count(*) AS count_1 FROM intent_run WHERE intent_run.status = 'running'"
