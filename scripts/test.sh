#!/usr/bin/env bash
# The test command: ./scripts/test.sh [pytest args...]
#
#   1. creates .venv (python3 -m venv) if missing and installs '.[test]' into it
#      (again whenever pyproject.toml changes);
#   2. unless GOALSUI_TEST_PG_URL is already set, starts ONE throwaway PostgreSQL
#      server for the whole run (tests/pgserver.py) and exports its URL as
#      GOALSUI_TEST_PG_URL; it is stopped and its directory deleted on exit;
#   2b. installs the pinned agent CLIs (tests/agent_clis.py) into a cache with npm, or
#      says why the real-CLI tests will be skipped;
#   3. runs ruff (lint and format), import-linter and mypy (pyproject.toml [tool.mypy]: goalsui/ and tests/),
#      then pytest with the given arguments, on GOALSUI_TEST_WORKERS (default 2) pytest-xdist
#      workers.
#
#   ./scripts/test.sh --fast [pytest args...]   the quick loop for developers: lint, types,
#      import contracts and the unit tier (tests/unit), no PostgreSQL, no agent CLIs; the
#      checks run beside pytest (their output follows its), and the unit tier's tests are
#      dealt out one by one (--dist load), not file by file.
#
# Exits with pytest's exit code; if pytest passed but a lint or type step failed, exits 1.
set -euo pipefail

fast=0
if [[ ${1:-} == --fast ]]; then
    fast=1
    shift
fi

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1

# --- 1. virtualenv -------------------------------------------------------------------
if [[ ! -x .venv/bin/python ]]; then
    echo "Creating .venv with $(python3 -V 2>&1)"
    python3 -m venv .venv
fi
stamp=.venv/.goalsui-installed
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [[ ! -f $stamp || "$(cat "$stamp")" != "$want" ]]; then
    echo "Installing goalsui[test] into .venv"
    .venv/bin/python -m pip install -qq --progress-bar off -e '.[test]'
    echo "$want" >"$stamp"
fi

# --- 2. PostgreSQL -------------------------------------------------------------------
pgdir=""
cleanup() {
    if [[ -n $pgdir ]]; then
        .venv/bin/python tests/pgserver.py stop "$pgdir" || echo "WARNING: could not stop the PostgreSQL server in $pgdir" >&2
        rm -rf "$pgdir"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if ((fast)); then
    echo "PostgreSQL: not started (--fast runs the unit tier only)"
elif [[ -n ${GOALSUI_TEST_PG_URL:-} ]]; then
    echo "PostgreSQL: using GOALSUI_TEST_PG_URL from the environment"
elif found="$(.venv/bin/python tests/pgserver.py find 2>/dev/null)"; then
    pgdir="$(mktemp -d /tmp/goalsui-pg-XXXXXX)"
    chmod 0755 "$pgdir"  # the postgres user must be able to get in when we are root
    if ! GOALSUI_TEST_PG_URL="$(.venv/bin/python tests/pgserver.py start "$pgdir")"; then
        echo "ERROR: PostgreSQL server binaries were found (${found}) but the server did not start" >&2
        exit 1
    fi
    export GOALSUI_TEST_PG_URL
    port="${GOALSUI_TEST_PG_URL##*:}"; port="${port%%/*}"
    echo "PostgreSQL: using throwaway server ${found#* } at 127.0.0.1:${port}"
else
    echo "PostgreSQL: no server binaries found (install Debian's postgresql package); the PostgreSQL half of the suite will be SKIPPED"
fi

# --- 2b. the real agent CLIs (Claude Code, Codex) at pinned versions, from npm -----------
if ((fast)); then
    :
elif cli_where="$(.venv/bin/python tests/agent_clis.py 2>&1)"; then
    echo "Agent CLIs: ${cli_where}"
else
    echo "Agent CLIs: ${cli_where}; the real-CLI tests will be SKIPPED"
fi

# --- 3. lint, then tests -------------------------------------------------------------
checks() {
    local failed=0
    echo "== ruff check goalsui tests"
    .venv/bin/ruff check --no-cache goalsui tests || failed=1
    echo "== ruff format --check goalsui tests"
    .venv/bin/ruff format --check --no-cache goalsui tests || failed=1
    echo "== lint-imports"
    .venv/bin/lint-imports --no-logo --no-cache || failed=1
    echo "== mypy"
    .venv/bin/mypy || failed=1  # incremental: .mypy_cache
    return "$failed"
}
lint_failed=0
checks_log=""
if ((fast)); then
    checks_log="$(mktemp /tmp/goalsui-checks-XXXXXX)"
    checks >"$checks_log" 2>&1 &
    checks_pid=$!
else
    checks || lint_failed=1
fi

echo "== pytest $*"
rc=0
# Two workers, each taking whole files (the snapshot tests of one file share a fixed
# folder); GOALSUI_TEST_WORKERS=0 runs everything in this process.
workers="${GOALSUI_TEST_WORKERS:-2}"
dist=loadfile
if ((fast)) && [[ $# -eq 0 ]]; then
    set -- tests/unit
    dist=load  # no snapshot folders in the unit tier
fi
parallel=()
if [[ $workers != 0 ]]; then
    parallel=(-n "$workers" --dist "$dist")
fi
.venv/bin/python -m pytest -q -p no:cacheprovider "${parallel[@]}" "$@" || rc=$?
if [[ -n $checks_log ]]; then
    wait "$checks_pid" || lint_failed=1
    cat "$checks_log"
    rm -f "$checks_log"
fi
if [[ $rc -eq 0 && $lint_failed -ne 0 ]]; then
    echo "FAILED: tests passed but ruff, import-linter or mypy reported problems (see above)" >&2
    rc=1
fi
exit "$rc"
