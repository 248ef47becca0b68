#!/usr/bin/env bash
# The main job: Apache Kafka's own brokers mid-upgrade + real clients + exporter +
# inventory job + Prometheus. Ctrl-C stops everything.
set -euo pipefail
# The demo reports how long after this command its first live series was served, set-up included.
KCE_DEMO_STARTED=$(date +%s.%N)
export KCE_DEMO_STARTED
cd "$(dirname "$0")/.."
bash scripts/setup.sh --demo
exec .venv/bin/python -m demo "$@"
