"""`scripts/demo.sh`: the whole product against a Kafka cluster in the middle of an upgrade.

Which code runs what:

- ``demo/__main__.py``: the command line (``python -m demo``); Apache Kafka's own brokers by default, the broker
  double with ``--double``.
- ``real_kafka/demo_scenario.py``: the scenario on real brokers (Kafka 3.9.2 and 4.4.0, one KRaft cluster).
- ``kafka_double/demo_scenario.py``: the same story on the broker double (emulated 4.1.0 and 3.9.0 brokers).
- ``demo/common.py``: what both share: the story's names, the inventory job, the exporter's readiness, the clock.
"""
