#!/usr/bin/env bash
# Installs everything the demo and the tests need on a fresh Debian machine, and nothing twice: system packages
# (kcat, a JDK, Node.js, and those of the scripts/setup.d fragments and of the image test), the project venv in
# .venv, the Node clients, then each scripts/setup.d/*.sh fragment (one per tool family: Kafka's jars, Prometheus,
# helm, browsers...).
# Most of a fresh set-up is waiting on downloads, so the parts run at the same time: apt-get (one update, one
# install, as dpkg takes one caller at a time) beside pip; the fragments, each in a subshell of its own, once apt-get
# is done (some use what it installs). Each part's output is printed when it ends; any failure fails the set-up.
# With --demo (scripts/demo.sh), only what the demo needs, and the demo starts before Prometheus and Alertmanager are
# built: their builds (minutes of CPU on a new machine) go on in the background, each leaving its log and exit code
# under .tools/background/ (demo/tools.py waits for them when the brokers, clients and exporter are up); the
# Kubernetes control plane, helm, the dashboards' schema, Chromium and the image tools' packages are not installed.
set -euo pipefail
cd "$(dirname "$0")/.."
for_demo=false
case "${1:-}" in
  --demo) for_demo=true ;;
  "") ;;
  *)
    echo "setup: unknown argument $1 (scripts/setup.sh [--demo])" >&2
    exit 2
    ;;
esac
#: Fragments the demo does not need (by name, without the .sh).
demo_skips=" 07-kubernetes 25-grafana-schema 30-helm 40-chromium "
background=.tools/background

setup_logs=$(mktemp -d)
declare -A setup_jobs=()

# A process and everything it started, children first stopped so none is left re-parented to init.
kill_tree() {
  local child
  kill -STOP "$1" 2>/dev/null || return 0
  if command -v pgrep >/dev/null; then
    for child in $(pgrep -P "$1"); do
      kill_tree "$child"
    done
  fi
  kill -KILL "$1" 2>/dev/null || true
}

# On any exit, the parts still running are stopped: a failed part (apt-get refused its lock, say) must not leave
# Go builds and pip installs writing into caches and .tools/ after the set-up has said it failed.
setup_cleanup() {
  local name
  for name in "${!setup_jobs[@]}"; do
    echo "setup: stopping $name, still running" >&2
    kill_tree "${setup_jobs[$name]}"
    wait "${setup_jobs[$name]}" 2>/dev/null || true
  done
  rm -rf "$setup_logs"
}
trap setup_cleanup EXIT

# Runs "$@" in the background, its output kept for setup_wait, ending with how long it took (which part of a new
# machine's set-up is its critical path: docs/development.md).
setup_start() {
  local name=$1
  shift
  (
    setup_began=$SECONDS
    trap 'echo "setup: $name took $((SECONDS - setup_began)) s (exit $?)"' EXIT
    "$@"
  ) >"$setup_logs/$name.log" 2>&1 &
  setup_jobs[$name]=$!
}

# Waits for the named jobs (all when none is named), printing each one's output as it ends; the first to fail ends
# the set-up at once, naming it (the EXIT trap stops the others), rather than after a Go build's minutes.
setup_wait() {
  local names=("$@") name pid ended
  [ ${#names[@]} -gt 0 ] || names=("${!setup_jobs[@]}")
  declare -A waiting=()
  for name in "${names[@]}"; do
    waiting[${setup_jobs[$name]}]=$name
  done
  while [ ${#waiting[@]} -gt 0 ]; do
    ended=0
    wait -n -p pid "${!waiting[@]}" || ended=$?
    name=${waiting[$pid]}
    unset "waiting[$pid]" "setup_jobs[$name]"
    cat "$setup_logs/$name.log" >&2
    if [ "$ended" -ne 0 ]; then
      echo "setup: failed: $name" >&2
      exit 1
    fi
  done
}

install_apt_packages() {
  local need=()
  command -v kcat >/dev/null || need+=(kcat)
  command -v javac >/dev/null || need+=(openjdk-17-jdk-headless)
  command -v node >/dev/null || need+=(nodejs npm)
  command -v mvn >/dev/null || need+=(maven)                                           # 15-kafka-jars.sh
  if ! $for_demo; then
    # Prometheus 2.x's promtool (Debian's 2.42), for the one test that checks the rules still load on the 2.x line;
    # the Prometheus, promtool and Alertmanager everything else runs are built by 05-prometheus.sh, 06-alertmanager.sh.
    [ -x /usr/bin/promtool ] || need+=(prometheus)
    command -v chromium >/dev/null || need+=(chromium)                                 # 40-chromium.sh
    # scripts/build-image.sh's, for the image test (it would install them itself, in the middle of the suite).
    command -v buildah >/dev/null || need+=(buildah)
    command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
  fi
  [ ${#need[@]} -gt 0 ] || return 0
  echo "setup: installing ${need[*]} with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  # Another apt-get (a machine's first boot runs its own) holds dpkg's lock for a minute or two: wait for it.
  local wait_lock=(-o DPkg::Lock::Timeout=600)
  apt-get "${wait_lock[@]}" update -qq
  apt-get "${wait_lock[@]}" install -y -qq --no-install-recommends "${need[@]}" >/dev/null
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

# Whether the demo's set-up leaves this fragment (a path) out.
demo_skips_fragment() {
  [[ $demo_skips == *" $(basename "$1" .sh) "* ]]
}

start_fragments() {
  local fragment
  for fragment in "$@"; do
    [ -e "$fragment" ] || continue
    if $for_demo && demo_skips_fragment "$fragment"; then
      continue
    fi
    setup_start "$(basename "$fragment" .sh)" bash scripts/run-fragment.sh "$fragment"
  done
}

# A fragment run in the background, beyond this script's end: .tools/background/NAME.log gets its output, NAME.rc its
# exit code once it ends, NAME.pid the process while it runs (a second demo started meanwhile does not build twice).
# Without job control an asynchronous command ignores SIGINT: a Ctrl-C of the demo leaves the build to finish. At the
# lowest priority: beside two cold Go builds on a 2-core machine the venv's install took minutes instead of 46 s, and
# the demo's first series came 216 s after the command.
start_in_background() {
  local fragment=$1 name
  name=$(basename "$fragment" .sh)
  name=${name#[0-9][0-9]-}
  mkdir -p "$background"
  if [ -f "$background/$name.pid" ] && kill -0 "$(cat "$background/$name.pid")" 2>/dev/null; then
    return 0
  fi
  rm -f "$background/$name.rc"
  (
    set +e
    nice -n 19 bash scripts/run-fragment.sh "$fragment" >"$background/$name.log" 2>&1
    echo $? >"$background/$name.rc.tmp" && mv "$background/$name.rc.tmp" "$background/$name.rc"
    rm -f "$background/$name.pid"
  ) </dev/null &
  echo $! >"$background/$name.pid"
}

# The 0x fragments need nothing apt-get installs: they start at once. They are the Go builds of Prometheus and
# Alertmanager, minutes of CPU on a new machine, which so run while apt-get and pip mostly wait on downloads; for the
# demo, in the background.
if $for_demo; then
  for fragment in scripts/setup.d/0*.sh; do
    demo_skips_fragment "$fragment" || start_in_background "$fragment"
  done
else
  # A demo's build still running in the background would race this one for .tools/: it finishes first.
  for pidfile in "$background"/*.pid; do
    [ -e "$pidfile" ] || continue
    echo "setup: waiting for the demo's background build of $(basename "$pidfile" .pid) ($background)" >&2
    while kill -0 "$(cat "$pidfile" 2>/dev/null || echo 0)" 2>/dev/null; do sleep 2; done
  done
  start_fragments scripts/setup.d/0*.sh
fi
setup_start apt install_apt_packages
setup_start venv install_venv
setup_wait apt
setup_start node-clients install_node_clients
start_fragments scripts/setup.d/[1-9]*.sh
setup_wait
