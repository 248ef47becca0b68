"""Fleet inventory from broker request logs (`kafka-client-exporter inventory`), run on Spark through PySpark.

Modules: ``log_format`` (patterns shared by the Spark job and the reference parser), ``api_catalog`` (API
version ranges per release), ``parse`` (lines -> typed columns), ``tables`` (clients, api_usage,
group_protocols, malformed), ``upgrade`` (upgrade_impact), ``report`` (HTML), ``progress``, ``session``,
``job`` (one run end to end), ``cli``; ``reference_parser`` is the single-process Python baseline.
"""
