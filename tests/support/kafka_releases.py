"""Release-table questions only tests ask."""

from __future__ import annotations

from exporter.kafka_releases import table


def _served_specs(release: str) -> frozenset[tuple[object, ...]]:
    """Everything of a release's rows that decides what its brokers advertise (names and sources left out)."""
    return frozenset(
        (row.api_key, row.min_version, row.max_version, row.latest_version_unstable, row.listeners, row.disabled)
        for row in table.release_rows(release)
    )


def releases_with_same_specs(release: str) -> list[str]:
    """Releases whose specs are identical to ``release``'s, so that no advertisement can tell them apart."""
    specs = _served_specs(release)
    return [other for other in table.known_releases() if _served_specs(other) == specs]
