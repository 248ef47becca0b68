"""kafka-client-exporter: which client software, at which version, is connected to every Kafka broker."""

__version__ = "0.1.0"
