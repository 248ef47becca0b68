"""Sources: fetch facts from Kafka brokers and return snapshot values. They never know about Prometheus."""
