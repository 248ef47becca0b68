"""Broker double: emulated Kafka brokers (wire protocol + KIP-511 JMX MBeans) for tests and demos.

Not shipped in the wheel: it runs from the repository checkout (the root on sys.path: the working directory or
PYTHONPATH). It reads what a release advertises from the exporter's release table.
"""

from .cluster import BrokerHandle, BrokerSpec, DoubleCluster, ListenerSpec
from .releases import Release, get_release, known_releases

__all__ = ["BrokerHandle", "BrokerSpec", "DoubleCluster", "ListenerSpec", "Release", "get_release", "known_releases"]
