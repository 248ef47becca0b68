#!/usr/bin/env bash
# Installs everything the demo and the tests need on a fresh Debian machine, and nothing twice: system packages
# (kcat, a JDK, Node.js, and those of the scripts/setup.d fragments and of the image test), the project venv in
# .venv, the Node clients, then each scripts/setup.d/*.sh fragment (one per tool family: Kafka's jars, Prometheus,
# helm, browsers...).
# Most of a fresh set-up is waiting on downloads, so the parts run at the same time: apt-get (one update, one
# install, as dpkg takes one caller at a time) beside pip; the fragments, each in a subshell of its own, once apt-get
# is done (some use what it installs). Each part's output is printed when it ends; any failure fails the set-up.
set -euo pipefail
cd "$(dirname "$0")/.."

setup_logs=$(mktemp -d)
trap 'rm -rf "$setup_logs"' EXIT
declare -A setup_jobs=()

# Runs "$@" in the background, its output kept for setup_wait.
setup_start() {
  local name=$1
  shift
  "$@" >"$setup_logs/$name.log" 2>&1 &
  setup_jobs[$name]=$!
}

# Waits for the named jobs (all when none is named), prints their output, and fails naming those that failed.
setup_wait() {
  local names=("$@") name failed=()
  [ ${#names[@]} -gt 0 ] || names=("${!setup_jobs[@]}")
  for name in "${names[@]}"; do
    if ! wait "${setup_jobs[$name]}"; then
      failed+=("$name")
    fi
    cat "$setup_logs/$name.log" >&2
    unset "setup_jobs[$name]"
  done
  if [ ${#failed[@]} -gt 0 ]; then
    echo "setup: failed: ${failed[*]}" >&2
    exit 1
  fi
}

install_apt_packages() {
  local need=()
  command -v kcat >/dev/null || need+=(kcat)
  command -v javac >/dev/null || need+=(openjdk-17-jdk-headless)
  command -v node >/dev/null || need+=(nodejs npm)
  command -v mvn >/dev/null || need+=(maven)                                           # 15-kafka-jars.sh
  # Prometheus 2.x's promtool (Debian's 2.42), for the one test that checks the rules still load on the 2.x line;
  # the Prometheus, promtool and Alertmanager everything else runs are built by 05-prometheus.sh, 06-alertmanager.sh.
  [ -x /usr/bin/promtool ] || need+=(prometheus)
  command -v chromium >/dev/null || need+=(chromium)                                   # 40-chromium.sh
  # scripts/build-image.sh's, for the image test (it would install them itself, in the middle of the suite).
  command -v buildah >/dev/null || need+=(buildah)
  command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
  [ ${#need[@]} -gt 0 ] || return 0
  echo "setup: installing ${need[*]} with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  # Debian's prometheus package has a service that does not start without systemd; tests start their own.
  if command -v pgrep >/dev/null && pgrep -x prometheus >/dev/null; then
    echo "setup: warning: a prometheus process is running after the install (tests start their own on free ports)" >&2
  fi
}

install_venv() {
  local python=${PYTHON:-python3}
  if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
  fi
  # The benchmarks are part of the project (and type-checked by scripts/test.sh), so their extra is installed too;
  # so is the docs site's, which the suite builds.
  local extras='.[test,inventory,bench,docs]'
  local stamp
  stamp=.venv/.installed-$({ cat pyproject.toml; echo "$extras"; } | sha256sum | cut -c1-16)
  [ ! -f "$stamp" ] || return 0
  local log
  log=$(mktemp)
  # Quiet on success (setuptools' editable-install warnings are noise); the whole log on failure.
  if ! { .venv/bin/pip install -q --upgrade pip && .venv/bin/pip install -q -e "$extras"; } >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    return 1
  fi
  rm -f "$log" .venv/.installed-*
  touch "$stamp"
}

install_node_clients() {
  [ ! -d harness/node/node_modules/kafkajs ] || return 0
  npm install --silent --no-audit --no-fund --prefix harness/node >/dev/null
}

start_fragments() {
  local fragment
  for fragment in "$@"; do
    [ -e "$fragment" ] || continue
    # shellcheck source=/dev/null
    setup_start "$(basename "$fragment" .sh)" bash -euo pipefail -c '. "$1"' setup-fragment "$fragment"
  done
}

# The 0x fragments need nothing apt-get installs: they start at once. They are the Go builds of Prometheus and
# Alertmanager, minutes of CPU on a new machine, which so run while apt-get and pip mostly wait on downloads.
start_fragments scripts/setup.d/0*.sh
setup_start apt install_apt_packages
setup_start venv install_venv
setup_wait apt
setup_start node-clients install_node_clients
start_fragments scripts/setup.d/[1-9]*.sh
setup_wait
