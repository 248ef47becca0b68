"""Per-client programs run as child processes by :mod:`harness.clients`, by path (never imported)."""
