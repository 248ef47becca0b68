"""Target ranges follow what 4.x still serves (docs/kafka-facts/releases.md#kip-896-exceptions)."""

from __future__ import annotations

import pytest

from exporter.request_logs.api_catalog import UnknownReleaseError, api_keys_by_enum_name, ranges


def test_produce_metadata_and_join_group_floors() -> None:
    four = ranges("4.0.0")
    assert four[0].min_version == 3  # advertised from v0 but v0-2 rejected
    assert four[3].min_version == 0  # Metadata v0-3 kept
    assert four[11].min_version == 2
    assert ranges("4.0.1")[11].min_version == 0  # JoinGroup v0-1 restored
    assert 4 not in four  # LeaderAndIsr removed entirely


def test_unknown_release_lists_the_known_ones() -> None:
    with pytest.raises(UnknownReleaseError, match=r"'9\.9\.9'.*known: 2\.0\.0, 2\.1\.0"):
        ranges("9.9.9")


def test_text_enum_names_of_every_era() -> None:
    names = api_keys_by_enum_name()
    assert names["API_VERSIONS"] == 18
    assert names["LIST_OFFSET"] == names["LIST_OFFSETS"] == 2
