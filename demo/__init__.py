"""`scripts/demo.sh`: the whole product against a Kafka cluster in the middle of an upgrade (not installed with the
exporter; run from the checkout).

- ``demo/__main__.py``: the command line (``python -m demo``).
- ``demo/scenario.py``: the scenario on Apache Kafka's own brokers (3.9.2 and 4.4.0 in one KRaft cluster, or a 3.9.2
  cluster rolled to 4.4.0 with ``--rolling-upgrade``), launched by real_kafka; the clients, the exporter,
  Prometheus and Alertmanager come from the test bench (harness).
- ``demo/common.py``: the parts around the brokers: the story's names, the inventory job, the late client, the
  exporter's readiness, the first live series' clock, the alerting.
- ``demo/policy.yaml``: the demo's version policy (it denies librdkafka 2.0.2).
"""
