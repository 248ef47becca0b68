"""One cycle's KIP-896 deprecated requests judged against the upgrade target: which of them that release rejects.

Brokers 3.7-3.9 count every request at a version their spec marks deprecated, but 4.x kept many of those
(Metadata v0-3, Produce v3-6, ...; docs/kafka-facts/releases.md#kip-896-exceptions). Only the versions the target
no longer serves block the upgrade; the rule is ``UpgradeTarget.blocks``, the one the Spark job judges by.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from exporter.kafka_releases.table import api_keys_by_name
from exporter.kafka_releases.upgrade_target import UpgradeTarget, upgrade_target
from exporter.snapshot import BlockingRequests, DeprecatedRequests, JmxReading, SourceResult

log = logging.getLogger(__name__)


class UpgradeJudge:
    def __init__(self, target_release: str) -> None:
        self._target: UpgradeTarget = upgrade_target(target_release)
        # Requests already logged as not judgeable: one line each per run, not one per cycle.
        self._unjudgeable: set[tuple[str, str]] = set()

    @property
    def target_release(self) -> str:
        return self._target.release

    def judge(self, results: Iterable[SourceResult]) -> tuple[BlockingRequests, ...]:
        rows: list[BlockingRequests] = []
        for result in results:
            reading = result.reading_of(JmxReading)
            if reading is None:
                continue
            for request in reading.deprecated_requests:
                if self._blocks(request):
                    rows.append(
                        BlockingRequests(
                            cluster=result.key.cluster,
                            broker=result.key.broker,
                            request=request.request,
                            version=request.version,
                            software_name=request.software_name,
                            software_version=request.software_version,
                            count=request.count,
                            target_release=self._target.release,
                        )
                    )
        return tuple(rows)

    def _blocks(self, request: DeprecatedRequests) -> bool:
        api_key = api_keys_by_name().get(request.request)
        if api_key is None or not (request.version.isascii() and request.version.isdigit()):
            # The broker itself called it deprecated, i.e. due for removal, and nothing here says the target
            # kept it: counted as blocking, so an unknown name can cost a look but never hide a blocker.
            if (request.request, request.version) not in self._unjudgeable:
                self._unjudgeable.add((request.request, request.version))
                log.warning(
                    "deprecated request %s v%s is not an API version the release table knows; counted as "
                    "blocking Kafka %s",
                    request.request,
                    request.version,
                    self._target.release,
                )
            return True
        return self._target.blocks(api_key, int(request.version))
