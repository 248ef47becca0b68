"""Every generated block of the documentation: which page holds it and what renders it."""

from __future__ import annotations

from docs_gen import alerts, configuration, dashboards, metrics
from docs_gen.regions import Region

REGIONS: tuple[Region, ...] = (
    Region(
        "docs/configuration.md",
        "configuration",
        "the settings model (exporter/config/settings.py)",
        configuration.render,
    ),
    Region("docs/metrics.md", "metrics", "the collectors' catalog (exporter/collectors/catalog.py)", metrics.render),
    Region("docs/alerts.md", "alerts", "the alert rules (alerts/kafka-client-exporter.rules.yaml)", alerts.render),
    Region("docs/dashboards.md", "dashboards", "the dashboards (dashboards/grafana/*.json)", dashboards.render),
)
