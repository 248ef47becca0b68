"""A broker's loggers changed at run time, as ``kafka-configs.sh --alter --entity-type broker-loggers`` changes them:
IncrementalAlterConfigs on the BROKER_LOGGER resource. The level changes; the appenders and their filters stay,
which is how the request log at one line per client is switched on for an audit window and off again."""

from __future__ import annotations

from kafka import KafkaAdminClient
from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType

REQUEST_LOGGER = "kafka.request.logger"


def set_logger_level(admin: KafkaAdminClient, broker_id: int | str, level: str, logger: str = REQUEST_LOGGER) -> str:
    """Set ``logger``'s level on broker ``broker_id`` and return the level the broker then reports (DescribeConfigs),
    so that a caller sees the change took."""
    broker = str(broker_id)
    resource = ConfigResource(ConfigResourceType.BROKER_LOGGER, broker, {logger: (AlterConfigOp.SET, level)})
    # kafka-python checks keys against the broker configs it knows unless told not to; a logger is none.
    answer = admin.alter_configs([resource], raise_on_unknown=False, incremental=True)
    if answer.get("broker_logger", {}).get(broker) != "OK":
        raise RuntimeError(f"setting {logger}={level} on broker {broker} answered {answer}")
    described = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER_LOGGER, broker, [logger])])
    return str(described["broker_logger"][broker][logger]["value"])
