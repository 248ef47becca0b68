"""Target ranges follow what 4.x still serves (docs/kafka-facts/releases.md#kip-896-exceptions)."""

from __future__ import annotations

import pytest

from exporter.kafka_releases.table import (
    UnknownReleaseError,
    api_keys_by_enum_name,
    api_name,
    enum_name,
    known_releases,
    ranges,
    release_key,
    release_rows,
)


def test_produce_metadata_and_join_group_floors() -> None:
    four = ranges("4.0.0")
    assert four[0].min_version == 3  # advertised from v0 but v0-2 rejected
    assert four[3].min_version == 0  # Metadata v0-3 kept
    assert four[11].min_version == 2
    assert ranges("4.0.1")[11].min_version == 0  # JoinGroup v0-1 restored
    assert 4 not in four  # LeaderAndIsr removed entirely
    assert any(row.api_key == 4 and row.removed for row in release_rows("4.0.0"))  # listed, without a range


def test_unknown_release_lists_the_known_ones() -> None:
    with pytest.raises(UnknownReleaseError, match=r"'9\.9\.9'.*known: 2\.0\.0, 2\.1\.0"):
        ranges("9.9.9")


def test_text_enum_names_of_every_era() -> None:
    names = api_keys_by_enum_name()
    assert names["API_VERSIONS"] == 18
    assert names["LIST_OFFSET"] == names["LIST_OFFSETS"] == 2
    assert enum_name("DescribeClientQuotas") == "DESCRIBE_CLIENT_QUOTAS"


def test_releases_sort_by_number_not_text() -> None:
    releases = known_releases()
    assert releases[0] == "2.0.0" and releases[-1] == "4.4.0"
    assert [release_key(r) for r in releases] == sorted(release_key(r) for r in releases)
    assert release_key("3.10.2") > release_key("3.9.9")


@pytest.mark.parametrize("bad", ["4.0", "4.0.0.1", "v4.0.0", "4.x.0", ""])
def test_release_key_rejects_anything_but_major_minor_patch(bad: str) -> None:
    with pytest.raises(ValueError, match=r"major\.minor\.patch"):
        release_key(bad)


def test_api_name_is_the_newest_name() -> None:
    assert api_name(74) == "ListConfigResources"  # ListClientMetricsResources until 4.0
    assert api_name(2) == "ListOffsets"  # ListOffset in the 2.2-2.7 specs
    assert api_name(9999) == "UnknownApi9999"
    assert ranges("3.7.0")[74].name == "ListClientMetricsResources"  # a release's own range keeps its name
