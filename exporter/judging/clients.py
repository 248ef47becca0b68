"""One cycle's client gauges judged by the version policy, then folded under the per-cluster cardinality cap.
Stateful across cycles (which pairs are admitted, how many were folded).

The policy sees the real name and version; only afterwards does a pair beyond the cap lose its version
label to ``other`` (counts preserved), so folding never hides a violation.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from exporter.judging.own_connections import ClusterAccount
from exporter.policy import Policy
from exporter.snapshot import FOLDED_VERSION, JmxReading, JudgedClient, SourceResult


def _processor_order(row: tuple[str, str, str, str, str, int]) -> tuple[str, str, int, str, str, str]:
    """Rows by broker, listener, then processor number (Kafka's processor ids are integers)."""
    broker, listener, processor, name, version, _ = row
    return (broker, listener, int(processor) if processor.isdigit() else -1, processor, name, version)


class ClientJudge:
    def __init__(self, policy: Policy, max_versions_per_cluster: int) -> None:
        self._policy = policy
        self._cap = max_versions_per_cluster
        # Pairs admitted as their own series, per cluster, in admission order: a pair keeps its place while
        # it is connected, so the set of real series is stable from cycle to cycle.
        self._admitted: dict[str, dict[tuple[str, str], None]] = defaultdict(dict)
        self._folded_total: dict[str, int] = defaultdict(int)

    @property
    def folded_total(self) -> Mapping[str, int]:
        return dict(self._folded_total)

    def judge(
        self, results: Iterable[SourceResult], accounts: Mapping[str, ClusterAccount] | None = None
    ) -> tuple[JudgedClient, ...]:
        """The cycle's client rows, judged; `accounts` says per cluster which connections are the brokers' own
        (a violation counts only the clients' connections that are certain)."""
        raw: dict[str, list[tuple[str, str, str, str, str, int]]] = defaultdict(list)
        for result in results:
            reading = result.reading_of(JmxReading)
            if reading is None:
                continue
            for c in reading.clients:
                if c.connections > 0:
                    raw[result.key.cluster].append(
                        (
                            result.key.broker,
                            c.listener,
                            c.network_processor,
                            c.software_name,
                            c.software_version,
                            c.connections,
                        )
                    )
        rows: list[JudgedClient] = []
        for cluster in sorted(raw):
            present = {(name, version) for *_, name, version, _ in raw[cluster]}
            admitted = self._admitted[cluster]
            for pair in [p for p in admitted if p not in present]:
                del admitted[pair]  # disconnected: its slot is free again
            folded = set()
            for pair in sorted(present):
                if pair in admitted:
                    continue
                if len(admitted) < self._cap:
                    admitted[pair] = None
                else:
                    folded.add(pair)
            self._folded_total[cluster] += len(folded)
            verdicts = {pair: self._policy.check(*pair) for pair in present}
            # Per (broker, listener, name, version): the certain clients' connections left to place on processors.
            certain = dict(accounts[cluster].clients_certain()) if accounts and cluster in accounts else {}
            for broker, listener, processor, name, version, connections in sorted(raw[cluster], key=_processor_order):
                check = verdicts[(name, version)]
                key = (broker, listener, name, version)
                clients_certain = None
                if key in certain:
                    # Which processor a broker's own connection sits on is not known: the certain ones are listed
                    # against the lowest-numbered processors first.
                    clients_certain = min(connections, certain[key])
                    certain[key] -= clients_certain
                rows.append(
                    JudgedClient(
                        cluster=cluster,
                        broker=broker,
                        listener=listener,
                        network_processor=processor,
                        software_name=name,
                        software_version=FOLDED_VERSION if (name, version) in folded else version,
                        real_software_version=version,
                        connections=connections,
                        violation=check.violation.reason if check.violation else None,
                        violation_detail=check.violation.detail if check.violation else None,
                        unparseable=check.unparseable,
                        clients_certain=clients_certain,
                    )
                )
        return tuple(rows)
