# Headless Chromium (Debian package): the status-page test (tests/status_page) renders `/` in a real browser,
# reads the DOM it built and saves a screenshot. Sourced by scripts/setup.sh.
if ! command -v chromium >/dev/null; then
  echo "setup: installing chromium with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  chromium_log=$(mktemp)
  if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium; } >"$chromium_log" 2>&1; then
    cat "$chromium_log" >&2
    rm -f "$chromium_log"
    echo "setup: apt-get install chromium failed" >&2
    exit 1
  fi
  rm -f "$chromium_log"
  command -v chromium >/dev/null || { echo "setup: chromium is still missing after apt-get install chromium" >&2; exit 1; }
fi
