#!/usr/bin/env bash
# The main job: broker double + real clients + exporter. Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m kafka_double.demo "$@"
