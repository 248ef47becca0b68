"""Broker double: emulated Kafka brokers (wire protocol + KIP-511 JMX MBeans) for tests and demos."""

from .cluster import BrokerHandle, BrokerSpec, DoubleCluster, ListenerSpec
from .releases import Release, get_release, known_releases

__all__ = ["BrokerHandle", "BrokerSpec", "DoubleCluster", "ListenerSpec", "Release", "get_release", "known_releases"]
