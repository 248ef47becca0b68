"""What every request handler sees of its broker and connection (shared by handlers.py and config_handlers.py)."""

from __future__ import annotations

from dataclasses import dataclass

from .client_metrics import ClusterConfigState
from .releases import Release
from .topology import Topology


@dataclass
class HandlerContext:
    release: Release
    broker_id: int
    listener: str
    topology: Topology
    configs: ClusterConfigState
    # KafkaPrincipal of the connection: User:ANONYMOUS on PLAINTEXT, User:<name> after SASL.
    principal: str = "User:ANONYMOUS"
