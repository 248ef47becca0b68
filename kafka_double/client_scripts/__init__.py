"""Per-client programs run as child processes by :mod:`kafka_double.clients` (never imported).

This file makes the directory a package so that setuptools' ``packages.find`` ships the scripts.
"""
