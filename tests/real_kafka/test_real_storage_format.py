"""The launcher formats a node's storage with any id Kafka itself could have given the cluster. A ZooKeeper-mode
broker draws its cluster's id without Kafka's care to avoid a leading "-" (CoreUtils.generateUuidAsBase64), and a
migration formats its KRaft controllers with that id: one such id in 64 failed the migration story's set-up."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from real_kafka import KRAFT_RELEASES, KafkaCluster


@pytest.mark.parametrize("release", KRAFT_RELEASES)
def test_a_cluster_id_starting_with_a_dash_is_formatted_as_it_is(tmp_path: Path, release: str) -> None:
    cluster = KafkaCluster(tmp_path, release)
    node = next(iter(cluster.nodes.values()))
    node.layout = dataclasses.replace(node.layout, cluster_id="-9cJzXb4TQ2mY3oA1Lh7Vw")
    node.format()
    meta = (node.data_dir / "meta.properties").read_text(encoding="utf-8")
    assert "cluster.id=-9cJzXb4TQ2mY3oA1Lh7Vw\n" in meta
