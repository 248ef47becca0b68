# Alertmanager and amtool, built from the Go module proxy (scripts/go/alertmanager pins the release) into
# .tools/alertmanager/: the demo and the alert end-to-end tests run Alertmanager beside Prometheus, and amtool checks
# the shipped example configuration (alerts/alertmanager.example.yaml). Rebuilt only when the pin changes
# (scripts/go/build.sh); built at the same time as Prometheus (the two share Go's module and build caches).
# Sourced by scripts/setup.sh.
bash scripts/go/build.sh alertmanager
