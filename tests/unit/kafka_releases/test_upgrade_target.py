"""Which request versions block an upgrade target: the rule the Spark job and the live blocking family share."""

from __future__ import annotations

import pytest

from exporter.kafka_releases.table import UnknownReleaseError, api_keys_by_name, release_rows
from exporter.kafka_releases.upgrade_target import (
    DEFAULT_TARGET_RELEASE,
    ZOOKEEPER_MODE_BROKER_APIS,
    check_target_release,
    upgrade_target,
)

KEY = api_keys_by_name()


@pytest.mark.parametrize(
    ("release", "api", "version", "blocks"),
    [
        ("4.0.0", "Metadata", 2, False),  # deprecated on 3.8, kept by 4.0 (KAFKA-18648)
        ("4.0.0", "Produce", 5, False),  # deprecated on 3.8, kept by 4.0 (KAFKA-18334)
        ("4.0.0", "Fetch", 3, True),
        ("4.0.0", "Produce", 2, True),  # 4.x advertises Produce from v0 (KAFKA-18659) but rejects v0-2
        ("4.0.0", "JoinGroup", 1, True),
        ("4.0.1", "JoinGroup", 1, False),  # restored in 4.0.1 (KAFKA-19444)
        ("4.0.0", "Fetch", 99, False),  # above the maximum: clients negotiate down
        # Gone in 4.0, but only ZooKeeper-mode brokers send it, to one another: the migration ends it first.
        ("4.0.0", "LeaderAndIsr", 7, False),
        ("4.0.0", "ControlledShutdown", 3, False),
        ("3.9.0", "Fetch", 3, False),
    ],
)
def test_the_issue_cases(release: str, api: str, version: int, blocks: bool) -> None:
    assert upgrade_target(release).blocks(KEY[api], version) is blocks


def test_the_only_apis_4_0_dropped_are_those_zookeeper_mode_brokers_send_one_another() -> None:
    dropped = set(upgrade_target("3.9.0").served) - set(upgrade_target("4.0.0").served)
    assert dropped == set(ZOOKEEPER_MODE_BROKER_APIS)


def test_deprecated_on_3_9_but_served_by_4_0_is_exactly_the_kip_896_exceptions() -> None:
    # docs/kafka-facts/releases.md#kip-896-exceptions; JoinGroup v0-1 only come back in 4.0.1.
    target = upgrade_target("4.0.0")
    served = {
        (row.api_name, version)
        for row in release_rows("3.9.0")
        for version in row.deprecated_versions
        if not target.blocks(row.api_key, version)
    }
    assert served == {
        *(("Metadata", v) for v in range(4)),
        *(("Produce", v) for v in range(3, 7)),
        ("FindCoordinator", 0),
        ("SaslHandshake", 0),
        ("DeleteGroups", 0),
    }
    newer = upgrade_target("4.0.1")
    assert {
        (row.api_name, version)
        for row in release_rows("3.9.0")
        for version in row.deprecated_versions
        if target.blocks(row.api_key, version) and not newer.blocks(row.api_key, version)
    } == {("JoinGroup", 0), ("JoinGroup", 1)}


def test_the_default_is_4_0_0_and_an_unknown_release_names_the_known_ones() -> None:
    assert check_target_release(DEFAULT_TARGET_RELEASE) == "4.0.0"
    with pytest.raises(UnknownReleaseError, match=r"'4\.0' is not in api_versions_by_release\.csv; known: 2\.0\.0"):
        check_target_release("4.0")


def test_request_tag_names_of_every_era_map_to_their_key() -> None:
    assert KEY["ListOffset"] == KEY["ListOffsets"] == 2
    assert KEY["ListClientMetricsResources"] == KEY["ListConfigResources"] == 74
