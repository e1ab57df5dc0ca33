"""The first frame's SQL: the Core statements it shares with the service and the
claim path, compiled for SQLite by ``goalsui.store.claims.statements.frame_module()``
(tests/unit/test_frame_sql.py fails when they drift). Text, so that the first frame
imports no SQLAlchemy."""

SOONEST = "SELECT min(intent.next_run_at) AS min_1 FROM intent WHERE intent.status = 'active'"
DUE_COUNT = "SELECT count(*) AS count_1 FROM intent WHERE intent.status = 'active' AND intent.next_run_at <= ?"
RUNNING_COUNT = "SELECT count(*) AS count_1 FROM intent_run WHERE intent_run.status = 'running'"
GOAL_COUNT = "SELECT count(*) AS count_1 FROM goal"
GOAL_ERROR_COUNT = "SELECT count(*) AS count_1 FROM goal WHERE goal.error IS NOT NULL"
INTENTS_BY_STATUS = "SELECT intent.status, count(*) AS count_1 FROM intent GROUP BY intent.status"
ATTENTION_SINCE = "SELECT count(*) AS count_1 FROM intent_run WHERE intent_run.status IN ('failed', 'interrupted', 'missed', 'timeout') AND intent_run.dismissed = 0 AND intent_run.started_at >= ?"
SPEND_BETWEEN = "SELECT coalesce(sum(intent_run.cost_usd), 0.0) AS coalesce_1, coalesce(sum(coalesce(intent_run.tokens_in, 0) + coalesce(intent_run.tokens_out, 0)), 0) AS coalesce_3, coalesce(sum(CASE WHEN (intent_run.cost_usd IS NOT NULL OR intent_run.tokens_in IS NOT NULL OR intent_run.tokens_out IS NOT NULL) THEN 1 ELSE 0 END), 0) AS coalesce_7, coalesce(sum(CASE WHEN (NOT (intent_run.cost_usd IS NOT NULL OR intent_run.tokens_in IS NOT NULL OR intent_run.tokens_out IS NOT NULL) AND intent_run.status IN ('ok', 'silent', 'failed', 'timeout', 'cancelled', 'interrupted')) THEN 1 ELSE 0 END), 0) AS coalesce_9 FROM intent_run WHERE intent_run.started_at >= ? AND intent_run.started_at < ?"
SPEND_OF_GOAL = "SELECT coalesce(sum(intent_run.cost_usd), 0.0) AS coalesce_1, coalesce(sum(coalesce(intent_run.tokens_in, 0) + coalesce(intent_run.tokens_out, 0)), 0) AS coalesce_3, coalesce(sum(CASE WHEN (intent_run.cost_usd IS NOT NULL OR intent_run.tokens_in IS NOT NULL OR intent_run.tokens_out IS NOT NULL) THEN 1 ELSE 0 END), 0) AS coalesce_7, coalesce(sum(CASE WHEN (NOT (intent_run.cost_usd IS NOT NULL OR intent_run.tokens_in IS NOT NULL OR intent_run.tokens_out IS NOT NULL) AND intent_run.status IN ('ok', 'silent', 'failed', 'timeout', 'cancelled', 'interrupted')) THEN 1 ELSE 0 END), 0) AS coalesce_9 FROM intent_run JOIN intent ON intent.id = intent_run.intent_id WHERE intent_run.started_at >= ? AND intent_run.started_at < ? AND intent.goal_id = ?"
