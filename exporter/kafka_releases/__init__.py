"""What each Kafka release's brokers serve (the packaged API-version table) and which release a broker runs."""
