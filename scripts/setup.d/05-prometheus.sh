# Prometheus 3.x and promtool, built from the Go module proxy (scripts/go/prometheus pins the release) into
# .tools/prometheus/: promtool checks and unit-tests the alert rules and parses the dashboards' PromQL; the demo and
# the alert end-to-end tests run the server. Rebuilt only when the pin changes (scripts/go/build.sh). Debian's
# prometheus package (2.42, installed by setup.sh's apt-get step) stays for one test only: its promtool checks that
# the rules still load on the 2.x line. Sourced by scripts/setup.sh.
bash scripts/go/build.sh prometheus
