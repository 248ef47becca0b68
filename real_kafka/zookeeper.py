"""A standalone ZooKeeper server for a ZooKeeper-mode cluster, started from the Kafka release's own jars the way
``bin/zookeeper-server-start.sh`` starts it: ``java -cp '<libs>/*' org.apache.zookeeper.server.quorum.QuorumPeerMain
zookeeper.properties``. Each release brings its own ZooKeeper (2.8.2: 3.5.9, 3.3.2: 3.6.3, 3.7.2 and 3.9.2: 3.8.4).

The file is the distribution's ``config/zookeeper.properties`` bound to 127.0.0.1, with ``admin.enableServer=false``:
the AdminServer needs Jetty, which a Kafka release's libs do not hold (ZooKeeper logs a warning and goes on without
it from 3.5.5, but one less thread and port is better). Readiness is asked with the four-letter word ``srvr``, the
one ZooKeeper 3.5+ allows by default.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

from real_kafka.distribution import Distribution, distribution
from real_kafka.process import JvmProcess, log_tails

__all__ = ["ZooKeeperFailed", "ZooKeeperServer"]

_JVM_OPTIONS = ("-Xmx64m", "-Xms64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto")


class ZooKeeperFailed(RuntimeError):
    """ZooKeeper exited or did not answer in time; the message ends with its log's tail."""


class ZooKeeperServer:
    """One standalone ZooKeeper on 127.0.0.1:``port``, its data and logs under ``directory``."""

    def __init__(self, directory: Path, release: str, port: int) -> None:
        self.directory = directory
        self.port = port
        self._distribution: Distribution = distribution(release)
        if not self._distribution.zookeeper_mode:
            raise ValueError(f"Kafka {release} brings no ZooKeeper (ZooKeeper mode was removed in 4.0)")
        self._jvm = JvmProcess(directory, "ZooKeeper")

    @property
    def connect(self) -> str:
        """The brokers' ``zookeeper.connect``."""
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._jvm.pid

    @property
    def log_file(self) -> Path:
        return self.directory / "zookeeper.log"

    def launch(self) -> None:
        config = self.directory / "zookeeper.properties"
        log4j = self.directory / "log4j.properties"
        self.directory.mkdir(parents=True, exist_ok=True)
        settings = {
            "dataDir": self.directory / "data",
            "clientPort": self.port,
            "clientPortAddress": "127.0.0.1",
            # The distribution's own: no limit per client host, which every test client shares here.
            "maxClientCnxns": 0,
            "admin.enableServer": "false",
        }
        config.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
        # ZooKeeper logs through slf4j to the release's log4j 1 (log4j, or reload4j from 3.2 on).
        log4j.write_text(
            "log4j.rootLogger=INFO, file\n"
            "log4j.appender.file=org.apache.log4j.FileAppender\n"
            f"log4j.appender.file.File={self.log_file}\n"
            "log4j.appender.file.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
        )
        self._jvm.start(
            [
                "java",
                *_JVM_OPTIONS,
                f"-Dlog4j.configuration=file:{log4j}",
                "-cp",
                self._distribution.classpath,
                "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                str(config),
            ]
        )

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        why = "not asked yet"
        while True:
            if (returncode := self._jvm.returncode) is not None:
                raise ZooKeeperFailed(f"ZooKeeper exited with {returncode}{self.tails()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=2.0) as connection:
                    connection.sendall(b"srvr")
                    answer = b""
                    while chunk := connection.recv(4096):
                        answer += chunk
                if b"Mode: standalone" in answer:
                    return
                why = f"srvr answered {answer[:80]!r}"
            except OSError as exc:
                why = str(exc)
            if time.monotonic() > deadline:
                raise ZooKeeperFailed(
                    f"ZooKeeper on 127.0.0.1:{self.port} not ready in {timeout}s ({why}){self.tails()}"
                )
            time.sleep(0.1)

    def terminate(self) -> None:
        self._jvm.terminate()

    def wait_stopped(self, timeout: float) -> None:
        self._jvm.wait_stopped(timeout)

    def tails(self) -> str:
        return log_tails(self.log_file, self._jvm.stdout_log)
