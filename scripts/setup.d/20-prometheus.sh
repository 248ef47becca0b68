# Prometheus and promtool (Debian package): promtool checks and unit-tests the alert rules and parses the
# dashboards' PromQL; the alert end-to-end test runs a real Prometheus. Sourced by scripts/setup.sh.
if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then
  echo "setup: installing prometheus (prometheus, promtool) with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  # The package's service does not start without systemd, but make sure no daemon was left running by it: tests
  # start their own Prometheus on free ports.
  if command -v pgrep >/dev/null && pgrep -x prometheus >/dev/null; then
    echo "setup: warning: a prometheus process is running after the install (tests start their own on free ports)" >&2
  fi
  command -v promtool >/dev/null || { echo "setup: promtool is still missing after apt-get install prometheus" >&2; exit 1; }
fi
