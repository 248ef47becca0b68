"""The HTTP side: the aiohttp app, the pre-rendered exposition, its security and the status page. It only reads
snapshots and never talks to Kafka."""
