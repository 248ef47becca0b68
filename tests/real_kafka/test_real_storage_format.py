"""The launcher formats a node's storage with any id Kafka itself could have given the cluster, and formats a cluster
again whose bootstrap metadata.version Kafka lost at its first start. A ZooKeeper-mode
broker draws its cluster's id without Kafka's care to avoid a leading "-" (CoreUtils.generateUuidAsBase64), and a
migration formats its KRaft controllers with that id: one such id in 64 failed the migration story's set-up."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

import pytest

import real_kafka.cluster as cluster_module
from real_kafka import KRAFT_RELEASES, KafkaCluster
from real_kafka.cluster import lost_bootstrap


@pytest.mark.parametrize("release", KRAFT_RELEASES)
def test_a_cluster_id_starting_with_a_dash_is_formatted_as_it_is(tmp_path: Path, release: str) -> None:
    cluster = KafkaCluster(tmp_path, release)
    node = next(iter(cluster.nodes.values()))
    node.layout = dataclasses.replace(node.layout, cluster_id="-9cJzXb4TQ2mY3oA1Lh7Vw")
    node.format()
    meta = (node.data_dir / "meta.properties").read_text(encoding="utf-8")
    assert "cluster.id=-9cJzXb4TQ2mY3oA1Lh7Vw\n" in meta


def test_the_lost_bootstrap_is_told_from_kafkas_own_line_written_since_the_offset(tmp_path: Path) -> None:
    cluster = KafkaCluster(tmp_path, "3.9.2")
    [node] = cluster.controllers()
    node.logs.server_log.parent.mkdir(parents=True, exist_ok=True)
    first = "[2026-11-29 08:01:42,459] WARN [QuorumController id=1] Performing controller activation. The metadata log "
    first += "appears to be empty. Appending 1 bootstrap record(s) at metadata.version 3.9-IV0\n"
    node.logs.server_log.write_text(first)
    assert not lost_bootstrap(cluster, {})
    with node.logs.server_log.open("a") as log:
        # As Kafka 3.9.2 wrote it on the next leader of a quorum whose first leader lost the records (a suite run).
        log.write(
            "[2026-11-29 08:01:43,623] WARN [QuorumController id=2] Performing controller activation. No "
            "metadata.version feature level record was found in the log. Treating the log as version 3.0-IV1.\n"
        )
    assert lost_bootstrap(cluster, {})
    assert not lost_bootstrap(cluster, {node.node_id: node.logs.server_log.stat().st_size})


def test_a_cluster_whose_bootstrap_was_lost_is_formatted_again_and_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = KafkaCluster(tmp_path, "3.9.2")
    [node] = cluster.controllers()
    first_storage: list[str] = []

    def lost_once(checked: KafkaCluster, since: Mapping[int, int]) -> bool:
        if not first_storage:  # the first start: as if Kafka had lost it
            first_storage.append((node.data_dir / "meta.properties").read_text(encoding="utf-8"))
            return True
        return lost_bootstrap(checked, since)

    monkeypatch.setattr(cluster_module, "lost_bootstrap", lost_once)
    with cluster:
        again = (node.data_dir / "meta.properties").read_text(encoding="utf-8")
        assert node.pid is not None
    # Formatted anew: a new storage has a directory id of its own.
    [before] = [line for line in first_storage[0].splitlines() if line.startswith("directory.id=")]
    assert before not in again.splitlines()
