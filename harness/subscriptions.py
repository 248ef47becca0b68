"""A KIP-714 client-metrics subscription as ``kafka-client-metrics.sh --alter`` sets it (a CLIENT_METRICS config
resource: metrics, interval.ms, match): the double serves it (kafka_double.client_metrics), the demo makes it on
real brokers with the Admin API."""

from __future__ import annotations

from dataclasses import dataclass

# ClientMetricsConfigs defaults and bounds (docs/kafka-facts/protocol.md#describeconfigs-for-client-metrics).
DEFAULT_INTERVAL_MS = 300000
MIN_INTERVAL_MS = 100
MAX_INTERVAL_MS = 3600000


@dataclass(frozen=True)
class Subscription:
    name: str
    metrics: tuple[str, ...] = ()
    interval_ms: int = DEFAULT_INTERVAL_MS
    match: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a client-metrics subscription needs a non-empty name")
        if not MIN_INTERVAL_MS <= self.interval_ms <= MAX_INTERVAL_MS:
            raise ValueError(
                f"interval_ms {self.interval_ms} out of range; allowed {MIN_INTERVAL_MS}..{MAX_INTERVAL_MS}"
            )

    def configs(self) -> dict[str, str]:
        """The subscription as Kafka stores it: list configs are comma-separated strings."""
        return {"metrics": ",".join(self.metrics), "interval.ms": str(self.interval_ms), "match": ",".join(self.match)}
