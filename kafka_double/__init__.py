"""Broker double: emulated Kafka brokers (wire protocol + KIP-511 JMX MBeans), for what real brokers (real_kafka)
cannot do cheaply in a test: fleets of 50-500 brokers, faults (black holes, killed and frozen brokers), full 100-key
gauge suites, releases 2.0-4.3 in ZooKeeper or KRaft mode, and listeners of every security protocol.

What it holds: the socket server (``server.py``, ``wire.py``, ``handlers.py``, ``config_handlers.py``), SASL and TLS
(``sasl_server.py``, ``tls.py``, ``tls_transport.py``), the brokers' specs and cluster (``specs.py``, ``cluster.py``,
``topology.py``), what each release advertises (``releases.py``, from the exporter's release table), the socket-server
MBeans in a JVM running Kafka's own ``Selector`` (``registry.py``, ``mbean_host.py``, ``MBeanHost.java``), the
brokers' Prometheus endpoints (``metrics_endpoint.py``), the cluster's client-metrics configuration
(``client_metrics.py``) and ``python -m kafka_double``. It writes no request log: the tests read real brokers'.

Not shipped in the wheel: it runs from the repository checkout (the root on sys.path: the working directory or
PYTHONPATH). It imports the test bench (harness), never real_kafka nor the demo.
"""

from .cluster import BrokerHandle, BrokerSpec, DoubleCluster, ListenerSpec
from .releases import Release, get_release, known_releases

__all__ = ["BrokerHandle", "BrokerSpec", "DoubleCluster", "ListenerSpec", "Release", "get_release", "known_releases"]
