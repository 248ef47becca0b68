"""Fleet inventory from broker request logs (`kafka-client-exporter inventory`), run on Spark through PySpark.

Modules: ``log_format`` (patterns shared by the Spark job and the reference parser), ``parse`` (lines -> typed
columns), ``tables`` (clients, api_usage, group_protocols, malformed), ``upgrade`` (upgrade_impact), ``report``
(HTML), ``progress``, ``session``, ``job`` (one run end to end), ``cli``. API version ranges per release come from
``exporter.kafka_releases.table``, and which request versions block the target release from
``exporter.kafka_releases.upgrade_target`` (the rule the exporter's live blocking-requests family uses too); the
single-process Python baseline is ``bench/reference_parser.py``.
"""
