"""Cluster-wide configuration state the double serves over the protocol: KIP-714 client-metrics
subscriptions (ConfigResource type CLIENT_METRICS) and the one ACL the exporter's tests need to flip,
DESCRIBE_CONFIGS on the CLUSTER resource (docs/kafka-facts/protocol.md#describeconfigs-for-client-metrics).
Shared by every broker; thread-safe."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from harness.subscriptions import Subscription

__all__ = ["ClusterConfigState", "Subscription"]


@dataclass
class ClusterConfigState:
    _subscriptions: dict[str, Subscription] = field(default_factory=dict)
    _denied_describe_configs: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def put_subscription(self, subscription: Subscription) -> None:
        with self._lock:
            self._subscriptions[subscription.name] = subscription

    def delete_subscription(self, name: str) -> None:
        with self._lock:
            self._subscriptions.pop(name, None)

    def subscriptions(self) -> list[Subscription]:
        with self._lock:
            return [self._subscriptions[name] for name in sorted(self._subscriptions)]

    def subscription(self, name: str) -> Subscription | None:
        with self._lock:
            return self._subscriptions.get(name)

    def deny_describe_configs(self, principal: str, denied: bool = True) -> None:
        """The ACL switch: without DESCRIBE_CONFIGS on CLUSTER, key 74 and CLIENT_METRICS
        DescribeConfigs fail with CLUSTER_AUTHORIZATION_FAILED for this principal (e.g. 'User:ANONYMOUS')."""
        with self._lock:
            (self._denied_describe_configs.add if denied else self._denied_describe_configs.discard)(principal)

    def may_describe_configs(self, principal: str) -> bool:
        with self._lock:
            return principal not in self._denied_describe_configs
