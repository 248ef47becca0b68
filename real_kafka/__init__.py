"""Real Apache Kafka brokers for the tests, the benchmarks and the demo: releases fetched by the set-up, KRaft nodes
started from them on 127.0.0.1 with PLAINTEXT, SASL_SSL (SCRAM-SHA-512) and CONTROLLER listeners, remote JMX (with a
password, optionally TLS), the request log in the release's own log4j format (full DEBUG, identities + INFO or INFO
only, switched at run time by ``broker_loggers.py``), optionally the Prometheus JMX exporter javaagent; a rolling
upgrade (``rolling_upgrade.py``). It launches brokers only: clients and processes come from the test bench (harness);
it never imports kafka_double nor the demo.
"""

from real_kafka.broker import KafkaNode, NodeFailed, NodeOptions, StartTiming
from real_kafka.cluster import KafkaCluster, new_cluster_id, start_clusters
from real_kafka.config import BrokerTls, NodePorts, NodeRoles
from real_kafka.distribution import KRAFT_RELEASES, RELEASES, ZOOKEEPER_RELEASES, DistributionMissing, distribution
from real_kafka.jmx import JmxAuth, JmxTls

__all__ = [
    "KRAFT_RELEASES",
    "RELEASES",
    "ZOOKEEPER_RELEASES",
    "BrokerTls",
    "DistributionMissing",
    "JmxAuth",
    "JmxTls",
    "KafkaCluster",
    "KafkaNode",
    "NodeFailed",
    "NodeOptions",
    "NodePorts",
    "NodeRoles",
    "StartTiming",
    "distribution",
    "new_cluster_id",
    "start_clusters",
]
