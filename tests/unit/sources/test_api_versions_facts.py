"""ApiVersions facts are rebuilt only when a broker's answer changes (exporter/sources/broker_protocol.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any

from kafka.protocol.metadata import ApiVersionsResponse

from exporter.sources.broker_protocol import FactsCache, read_broker_facts


def _answer(epoch: int = 5, metadata_level: int = 27, max_produce: int = 13) -> Any:
    keys = [ApiVersionsResponse.ApiVersion(api_key=k, min_version=0, max_version=4) for k in range(1, 75)]
    keys.insert(0, ApiVersionsResponse.ApiVersion(api_key=0, min_version=3, max_version=max_produce))
    return ApiVersionsResponse(
        version=4,
        error_code=0,
        api_keys=keys,
        throttle_time_ms=0,
        supported_features=[
            ApiVersionsResponse.SupportedFeatureKey(name="metadata.version", min_version=7, max_version=27),
            ApiVersionsResponse.SupportedFeatureKey(name="kraft.version", min_version=0, max_version=1),
        ],
        finalized_features_epoch=epoch,
        finalized_features=[
            ApiVersionsResponse.FinalizedFeatureKey(
                name="metadata.version", max_version_level=metadata_level, min_version_level=metadata_level
            )
        ],
        zk_migration_ready=False,
    )


class _Connection:
    """An open connection that answers each request with the next of `answers`."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers

    def __await__(self) -> Generator[None, None, None]:
        yield from ()

    async def send_request(self, request: Any) -> Any:
        return self.answers.pop(0)


class _Manager:
    def __init__(self, answers: list[Any]) -> None:
        self.connection = _Connection(answers)

    def get_connection(self, node_id: int) -> _Connection:
        return self.connection


def _read(answers: list[Any], cache: FactsCache | None) -> Any:
    return asyncio.run(read_broker_facts(_Manager(answers), 1, "kafka-1", 4, cache))


def test_the_same_answer_gives_the_same_facts_without_rebuilding_them() -> None:
    cache = FactsCache()
    first = _read([_answer()], cache)
    assert _read([_answer()], cache) is first
    assert _read([_answer()], None) == first  # what the cache returns is what a fresh read makes


def test_a_finalized_feature_or_a_new_range_gives_new_facts() -> None:
    cache = FactsCache()
    first = _read([_answer()], cache)
    finalized = _read([_answer(epoch=6, metadata_level=27)], cache)
    assert finalized is not first and finalized.finalized_features_epoch == 6
    upgraded = _read([_answer(epoch=6, max_produce=12)], cache)
    assert upgraded is not finalized and upgraded.api(0) is not None and upgraded.api(0).max_version == 12
    assert _read([_answer(epoch=6, max_produce=12)], None) == upgraded
