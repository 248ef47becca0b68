"""Is a node serving yet? Asked the way a client would, over its PLAINTEXT listener (CONTROLLER for a controller-only
node): ApiVersions, then, on brokers, Metadata, which lists a broker only once it has registered with the quorum
and is unfenced, i.e. when clients can use it.

The probe introduces itself (ApiVersions v3) as ``real-kafka-probe``, so the broker's KIP-511 gauge for it (left
at 0 after the probe closes: Kafka keeps zero-valued gauges) names it instead of adding to ``unknown``. Metadata is
sent at v12, which 3.9 does not count as deprecated (v0-v3 are, KIP-896) and 4.x still serves, or at the broker's
newest when it is older (2.8 serves up to v11).
"""

from __future__ import annotations

from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse

from harness.raw_client import RawConnection

__all__ = ["PROBE_SOFTWARE_NAME", "PROBE_SOFTWARE_VERSION", "NotReady", "probe"]

PROBE_SOFTWARE_NAME = "real-kafka-probe"
PROBE_SOFTWARE_VERSION = "1.0"
_API_VERSIONS = 3
_METADATA = 12
_METADATA_KEY = 3


class NotReady(Exception):
    """The node does not serve clients yet (why is in the message)."""


def probe(port: int, node_id: int | None, timeout: float = 2.0) -> None:
    """Return when the listener on 127.0.0.1:``port`` answers ApiVersions and, if ``node_id`` is given, Metadata
    lists that broker; NotReady otherwise."""
    try:
        with RawConnection(port, timeout=timeout) as connection:
            request = ApiVersionsRequest(
                version=_API_VERSIONS,
                client_software_name=PROBE_SOFTWARE_NAME,
                client_software_version=PROBE_SOFTWARE_VERSION,
            )
            frame = connection.request(request, correlation_id=1, client_id=PROBE_SOFTWARE_NAME)
            # The ApiVersions response header is always v0 (KIP-511), whatever the request's version.
            versions = ApiVersionsResponse.decode(frame, version=_API_VERSIONS, header=True, framed=True)
            if versions.error_code != 0:
                raise NotReady(f"ApiVersions error {versions.error_code}")
            if node_id is None:
                return
            newest = max((api.max_version for api in versions.api_keys if api.api_key == _METADATA_KEY), default=0)
            version = min(_METADATA, newest)
            frame = connection.request(
                MetadataRequest(version=version, topics=[], allow_auto_topic_creation=False),
                correlation_id=2,
                client_id=PROBE_SOFTWARE_NAME,
            )
            metadata = MetadataResponse.decode(frame, version=version, header=True, framed=True)
    except OSError as exc:  # refused, reset, closed (ConnectionError) and timed out alike
        raise NotReady(f"127.0.0.1:{port}: {exc}") from exc
    listed = {broker.node_id for broker in metadata.brokers}
    if node_id not in listed:
        raise NotReady(f"Metadata from 127.0.0.1:{port} lists brokers {sorted(listed)}, not yet {node_id}")
