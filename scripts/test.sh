#!/usr/bin/env bash
# The whole test suite on a fresh machine: set-up, lint, type check, then every test (slow end-to-end ones included).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
set +e
# Four workers on two cores: most of the suite waits on JVMs, Spark, brokers and collection cycles. A module's tests
# stay on one worker (--dist loadscope), so its module-scoped fixtures (a cluster, an image, a broker) start once.
# The 25 slowest tests are printed to show where the time goes; arguments given here come last and win (-n 0: serial).
.venv/bin/python -m pytest -n 4 --dist loadscope --durations=25 "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "test.sh: pytest collected no tests; that is a failure here" >&2
  exit 1
fi
exit "$rc"
