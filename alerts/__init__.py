"""The shipped alert rules and what makes them (not installed with the exporter; run from the checkout).

Beside this file: the rules' templates (``templates/``), their tunables (``config.yaml``), the rendered rules and
promtool unit tests (``kafka-client-exporter.rules.yaml``, ``tests/``), the runbook and the example Alertmanager
configuration. ``render.py`` (``python -m alerts.render``) renders the rules and unit tests from the templates with
the tunables: ``scripts/package-chart.sh`` runs it, operators run it with their own values, and the demo and the
end-to-end tests use it to shorten the waits. Product tooling, not the test bench: it imports nothing of the bench.
"""
