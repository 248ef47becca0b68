"""The test bench: what the tests, the benchmarks and the demo start around the brokers (not shipped in the wheel; it
runs from the repository checkout, the root on sys.path).

- ``clients.py``: real Kafka clients as child processes, each announcing the identity a broker records: kcat
  (librdkafka), confluent-kafka, kafka-python and aiokafka (``client_scripts/python_client.py``), kafkajs
  (``node/client.js``, installed by scripts/setup.sh), Kafka's own Java clients (``client_scripts/JavaClient.java``
  on kafka-clients 4.3.0 and 3.9.0, ``LegacyJavaClient.java`` on 0.10-2.x jars); ``ClientMix`` runs several.
- ``raw_client.py``: one Kafka connection speaking through kafka-python's message classes, for requests no client
  library sends any more; ``legacy_client.py`` plays an old Java producer with it.
- ``exporter_process.py``, ``prometheus_process.py``, ``alertmanager_process.py``: the exporter, Prometheus and
  Alertmanager (with a local receiver standing in for Slack, PagerDuty and webhooks) as processes, with their
  configuration files.
- ``ports.py``: free ports from each test worker's own slice; ``kafka_jars.py`` and ``java_program.py``: the
  kafka-clients jars the set-up fetched and single-file Java programs compiled once.
- ``subscriptions.py``: a KIP-714 client-metrics subscription as ``kafka-client-metrics.sh`` sets it.
- ``processes.py``: a child process stopped by its pid (SIGTERM, then SIGKILL).

The broker packages use it (kafka_double, real_kafka) and the demo too; it imports neither
(tests/unit/test_import_graph.py).
"""
