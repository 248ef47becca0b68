"""Configuration: the exporter's settings, the exporter-toolkit web config, and how their errors read."""
