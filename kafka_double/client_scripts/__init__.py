"""Per-client programs run as child processes by :mod:`kafka_double.clients`, by path (never imported)."""
