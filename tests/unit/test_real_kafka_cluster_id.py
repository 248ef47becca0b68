"""The cluster ids the real-broker launcher formats its nodes with are ids Kafka itself could have made."""

from __future__ import annotations

import base64

from real_kafka import new_cluster_id


def test_cluster_ids_are_kafka_uuids_that_kafka_storage_takes_as_an_argument() -> None:
    # One URL-safe base64 id in 64 starts with "-", which kafka-storage format's argument parser takes for an option.
    ids = {new_cluster_id() for _ in range(2000)}
    assert len(ids) == 2000
    for text in ids:
        assert len(text) == 22 and not text.startswith("-"), text
        assert len(base64.urlsafe_b64decode(text + "==")) == 16, text
