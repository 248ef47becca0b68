#!/usr/bin/env bash
# Installs everything the demo and the tests need on a fresh Debian machine, and nothing twice:
# system packages (kcat, a JDK, Node.js), the project venv in .venv, and the Node clients; then each
# scripts/setup.d/*.sh fragment (one per tool family: Prometheus, helm, browsers...), in name order.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v kcat >/dev/null || need_apt+=(kcat)
command -v java >/dev/null || need_apt+=(openjdk-17-jdk-headless)
command -v node >/dev/null || need_apt+=(nodejs npm)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]} with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
# The benchmarks are part of the project (and type-checked by scripts/test.sh), so their extra is installed too.
extras='.[test,inventory,bench]'
stamp=.venv/.installed-$({ cat pyproject.toml; echo "$extras"; } | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ]; then
  log=$(mktemp)
  # Quiet on success (setuptools' editable-install warnings are noise); the whole log on failure.
  if ! { .venv/bin/pip install -q --upgrade pip && .venv/bin/pip install -q -e "$extras"; } >"$log" 2>&1; then
    cat "$log" >&2
    exit 1
  fi
  rm -f "$log" .venv/.installed-*
  touch "$stamp"
fi

if [ ! -d kafka_double/node/node_modules/kafkajs ]; then
  npm install --silent --no-audit --no-fund --prefix kafka_double/node >/dev/null
fi

for fragment in scripts/setup.d/*.sh; do
  [ -e "$fragment" ] || continue
  # shellcheck source=/dev/null
  . "$fragment"
done
