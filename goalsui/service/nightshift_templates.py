"""The files a new nightshift goal starts with: workers, prompts and the protocol."""

from __future__ import annotations

from typing import Any

from goalsui.domain.nightshift import COMMANDER_CRON, REPORTER_CRON
from goalsui.kb.layout import WorkerSeed
from goalsui.kb.nightshift import BINDING_FILE, Binding
from goalsui.kb.yamlio import dump_yaml

COMMANDER = "commander"
REPORTER = "reporter"
#: the workers that take no task of the plan
ROLES = (COMMANDER, REPORTER)

PROTOCOL = """# Protocol: nightshift on {repo_name}

## Purpose

Turn the backlog of `{repo}` into reviewed changes overnight. Every change is small,
atomic and waits on its own branch for a human to approve or reject it in the morning.

## The night ({tz})

- 20:00 the commander reads the backlog (`backlog.md` in this goal, the repository, last
  night's report in `reports/`) and puts tonight's tasks into the plan.
- Task workers ({workers}) wake at their slots between 20:30 and 07:00; each takes only
  the items planned for it tonight. A worker with nothing planned does not run.
- 07:30 the reporter writes `reports/YYYY-MM-DD.md`, named like the branches by the date
  the night started: every planned task with its run, branch, commits, diffstat, check
  result and summary.

## Message formats

A plan item in `state.yaml`:

```yaml
plan:
  - night: 2026-12-03        # the date the night starts
    worker: worker-1
    task: Fix the off-by-one in pagination (issue 42)
    status: planned          # then done | no-commits | failed | approved | rejected
```

The commander adds items with the `nightshift_plan_add` tool (or `goalsui nightshift plan
add WORKER TASK`), and says why in one sentence; the reason lands in `decisions`.
A task worker's final output is a short summary: what it changed and how it checked it.

## Conventions (the branch rule)

- One task, one branch: `nightshift/YYYY-MM-DD/<worker>-<task>` from `{base}`, created by
  goalsui in a separate git worktree; the worker's working directory is that worktree.
- Commit there. Never push, never fetch, never switch to or commit on `{base}`.
- A task that needs no change commits nothing and says why.
- The repository's check{check} runs in the worktree after the turn.

## KPIs

- Tasks planned versus done per night; branches approved versus rejected.
- Check failures on branches (should be zero).
"""

COMMANDER_PROMPT = """# commander

Plan tonight's work for the repository `{repo}` (base branch `{base}`).

1. Read `backlog.md` in this goal if it exists, the last report in `reports/`, and the
   repository's open TODOs or issues.
2. Choose at most one atomic task per task worker ({workers}): a bug fix, a doc update,
   or a small refactor that can be reviewed in a few minutes.
3. Add each with the `nightshift_plan_add` tool (worker, task, reason); `nightshift_plan`
   shows what is planned already. Adding the same task twice
   in one night has no effect, so a retried turn is safe.
4. Answer with one line per planned task, or NOTHING_TO_REPORT when there is nothing to do.
"""

WORKER_PROMPT = """# {name}

You are a nightshift task worker. Your working directory is a fresh git worktree of
`{repo}` on your own branch; tonight's task is given below the prompt.

- Make the smallest change that does the task; run the tests that cover it.
- Commit on the current branch with a clear message. Do not push, do not switch branches,
  do not touch `{base}`.
- Finish with a short summary: what you changed, and how you checked it.
"""

REPORTER_PROMPT = """# reporter

The builtin report runner compiles the night: every planned task with its branch, commits,
diffstat and check result, the failures, and what was skipped and why.
"""


def worker_seeds(slots: list[str], tz: str, runner: dict[str, Any] | None) -> list[WorkerSeed]:
    """The commander, one task worker per slot, and the reporter."""

    def seed(name: str, cron: str, caps: list[str], run: dict[str, Any] | None) -> WorkerSeed:
        schedule = {"cron": cron, "timezone": tz}
        runs = {"runner": run} if run else {}
        return WorkerSeed(
            name, {"schedule": schedule, **runs, "timeout": "30m", "capabilities": caps}
        )

    return [
        seed(COMMANDER, COMMANDER_CRON, ["read_kb", "write_kb", "nightshift"], runner),
        *(seed(f"worker-{i}", cron, ["read_kb"], runner) for i, cron in enumerate(slots, 1)),
        seed(REPORTER, REPORTER_CRON, ["read_kb"], {"builtin": "report"}),
    ]


def render_goal_files(binding: Binding, tz: str, workers: list[str]) -> dict[str, str]:
    """``nightshift.yaml``, ``protocol.md`` and the prompts, filled in."""
    task_workers = [w for w in workers if w not in ROLES]
    fields = {
        "repo": binding.repo,
        "repo_name": binding.repo.name,
        "base": binding.base,
        "tz": tz,
        "workers": ", ".join(task_workers),
        "check": f" (`{' '.join(binding.check)}`)" if binding.check else " (none configured)",
    }
    out = {
        BINDING_FILE: dump_yaml(binding.as_yaml(), "the repository this nightshift works on"),
        "protocol.md": PROTOCOL.format(**fields),
        "workers/commander/prompt.md": COMMANDER_PROMPT.format(**fields),
        "workers/reporter/prompt.md": REPORTER_PROMPT.format(**fields),
    }
    for name in task_workers:
        out[f"workers/{name}/prompt.md"] = WORKER_PROMPT.format(name=name, **fields)
    return out
