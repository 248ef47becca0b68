"""collection.jmx_transport picks the transport every cluster's JMX source shares."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from exporter.config.settings import Settings
from exporter.sources.cluster_sources import cluster_sources, jmx_transport
from exporter.sources.jmx import JmxSource, PerCallTransport
from exporter.sources.jmx_bridge import JmxBridge

CLUSTERS = [
    {"name": "a", "brokers": [{"id": 1, "jmx_url": "service:jmx:rmi:///jndi/rmi://a:9999/jmxrmi"}]},
    {"name": "b", "brokers": [{"id": 1, "jmx_url": "service:jmx:rmi:///jndi/rmi://b:9999/jmxrmi"}]},
]


@pytest.mark.parametrize(
    ("transport", "kind", "uses_slots"), [(None, JmxBridge, False), ("per_call", PerCallTransport, True)]
)
def test_the_setting_picks_the_transport_and_whether_reads_take_slots(
    transport: str | None, kind: type, uses_slots: bool
) -> None:
    collection = {"max_concurrency": 3} | ({"jmx_transport": transport} if transport else {})
    settings = Settings(clusters=CLUSTERS, collection=collection)
    shared = jmx_transport(settings)
    try:
        assert isinstance(shared, kind)
        sources = [s for c in settings.clusters for s in cluster_sources(c, settings, shared)]
        assert [type(s) for s in sources] == [JmxSource, JmxSource]
        assert [s.uses_slots for s in sources] == [uses_slots, uses_slots]
        if isinstance(shared, JmxBridge):
            assert shared.command()[-2] == "3"  # the bridge's worker threads follow max_concurrency
    finally:
        shared.close()


def test_an_unknown_transport_is_refused_naming_the_choices() -> None:
    with pytest.raises(ValidationError) as excinfo:
        Settings(clusters=CLUSTERS, collection={"jmx_transport": "jolokia"})
    message = str(excinfo.value)
    assert "jmx_transport" in message and "'bridge' or 'per_call'" in message and "jolokia" in message
