#!/usr/bin/env bash
# The whole test suite on a fresh machine: set-up, lint, type check, then every test (slow end-to-end ones included).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

# Lint and type check beside the tests (they use one core for a few seconds; the tests mostly wait); their output is
# printed after the tests' and fails the run as before.
lint_log=$(mktemp)
cds_log=$(mktemp)
# Where the class archive's listing run (below), a run of the inventory command over the shipped samples, leaves its
# result for the tests that check that same run (tests/support/samples_run.py).
KCE_SAMPLES_RUN=$(mktemp -d)
export KCE_SAMPLES_RUN
trap 'rm -rf "$lint_log" "$cds_log" "$KCE_SAMPLES_RUN"' EXIT
{ .venv/bin/ruff check . && .venv/bin/ruff format --check . && .venv/bin/mypy; } >"$lint_log" 2>&1 &
lint_pid=$!
# The archive of Spark's classes (tests/support/spark_cds.py), made once per checkout before the tests start (a
# minute, beside the lint): every Spark JVM of the suite loads its classes from it, a fifth less CPU per inventory
# run. Made in the background while the tests ran, it was ready only after a third of them, and cost what it saved.
.venv/bin/python -m tests.support.spark_cds >"$cds_log" 2>&1 || true

set +e
# Four workers on two cores: while one waits on a JVM, a broker or a collection cycle, another computes. A module's tests
# stay on one worker (--dist loadscope), so its module-scoped fixtures (a cluster, an image, a broker) start once;
# the real brokers' modules, then those with slow tests, start first (tests/conftest.py). The 25 slowest tests show
# where the time goes; arguments given here come last and win (-n 0: serial).
.venv/bin/python -m pytest -n 4 --dist loadscope --no-loadscope-reorder --durations=25 "$@"
rc=$?
wait "$lint_pid"
lint_rc=$?
set -e
cat "$cds_log" "$lint_log"
if [ "$lint_rc" -ne 0 ]; then
  echo "test.sh: ruff or mypy failed (above)" >&2
  exit 1
fi
if [ "$rc" -eq 5 ]; then
  echo "test.sh: pytest collected no tests; that is a failure here" >&2
  exit 1
fi
exit "$rc"
