"""Which kind of request log a directory holds, from its files' line counts by level and API."""

from __future__ import annotations

import pytest

from exporter.request_logs.log_kinds import CANNOT_TELL, LineLevels, LogKind, by_directory


@pytest.mark.parametrize(
    ("levels", "kind"),
    [
        (LineLevels(identity_debug=3, other_debug=1, info=2), LogKind.FULL_DEBUG),
        (LineLevels(other_debug=1), LogKind.FULL_DEBUG),
        (LineLevels(identity_debug=3, info=2), LogKind.IDENTITIES_AND_INFO),
        (LineLevels(identity_debug=1), LogKind.IDENTITIES_AND_INFO),
        (LineLevels(info=5), LogKind.INFO_ONLY),
        (LineLevels(), LogKind.UNKNOWN),
    ],
)
def test_the_kind_is_told_by_the_most_telling_line(levels: LineLevels, kind: LogKind) -> None:
    assert levels.kind == kind


def test_a_directory_is_one_broker_whose_files_sum_and_unrecorded_files_are_counted_apart() -> None:
    kinds = by_directory(
        [
            ("file:/logs/b1/kafka-request.log", LineLevels(identity_debug=4, info=1)),
            ("file:/logs/b1/kafka-request.log.1", LineLevels(info=2)),
            ("file:/logs/b2/kafka-request.log", LineLevels(identity_debug=1, other_debug=9)),
            ("file:/logs/b3/kafka-request.log", None),
        ]
    )
    assert [(k.directory, k.kind, k.files, k.files_without_levels) for k in kinds] == [
        ("file:/logs/b1", LogKind.IDENTITIES_AND_INFO, 2, 0),
        ("file:/logs/b2", LogKind.FULL_DEBUG, 1, 0),
        ("file:/logs/b3", LogKind.UNKNOWN, 1, 1),
    ]
    published = kinds[0].to_json()
    assert published["lines"] == {"identity_debug": 4, "other_debug": 0, "info": 3}
    assert published["title"] == "identities + INFO" and published["cannot_tell"] == list(
        CANNOT_TELL[LogKind.IDENTITIES_AND_INFO]
    )


def test_state_written_before_levels_were_kept_reads_as_not_recorded() -> None:
    assert LineLevels.from_json(None) is None
    assert LineLevels.from_json({"info": 2}) == LineLevels(info=2)
    assert LineLevels.of({"identity_debug": None, "other_debug": 7, "info": 1}) == LineLevels(0, 7, 1)
