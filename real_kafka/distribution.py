"""Where the real Kafka releases live on this machine: ``.tools/kafka/<release>/libs``, filled from Maven Central by
``scripts/setup.d/15-kafka-jars.sh`` (one closure per release in ``scripts/maven/``). Each ``libs`` holds what that
release's binary distribution puts in its own ``libs/``: the broker, kafka-tools and that release's logging back end.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "KRAFT_RELEASES",
    "RELEASES",
    "ZOOKEEPER_RELEASES",
    "Distribution",
    "DistributionMissing",
    "distribution",
    "jmx_exporter_agent",
    "legacy_client_classpath",
    "tools_dir",
]

#: The releases the set-up fetches, oldest first. 2.8.2, 3.3.2 and 3.7.2 run in ZooKeeper mode only here: 2.8 is
#: the oldest line users on the road to 4.x still run (ZooKeeper mode only; its KRaft was an early-access preview),
#: 3.3 the line KRaft became production-ready in (most clusters of it still run ZooKeeper), 3.7 the last before 3.8
#: and the first of these with the AddPartitionsToTxn verification channel. 3.9.2, the newest 3.9.x, runs in both
#: modes (the migration's release); 4.4.0, the newest 4.x Maven Central serves, in KRaft mode only.
RELEASES = ("2.8.2", "3.3.2", "3.7.2", "3.9.2", "4.4.0")
#: The releases started in KRaft mode here (3.3 to 3.8 could be too, but users leave ZooKeeper on 3.9).
KRAFT_RELEASES = ("3.9.2", "4.4.0")
#: The releases started in ZooKeeper mode here: every release before 4.0 (KIP-833 removed ZooKeeper mode in 4.0).
ZOOKEEPER_RELEASES = tuple(release for release in RELEASES if int(release.split(".", 1)[0]) < 4)
LEGACY_CLIENTS = ("0.10.1.1", "0.10.2.2", "2.8.2")
JMX_EXPORTER_JAR = "jmx_prometheus_javaagent-1.0.1.jar"
_FRAGMENT = "scripts/setup.d/15-kafka-jars.sh"
_DEFAULT_TOOLS = Path(__file__).resolve().parents[1] / ".tools"


class DistributionMissing(RuntimeError):
    """A release's jars are not where the set-up puts them."""


def tools_dir() -> Path:
    """The project's git-ignored ``.tools`` (``KCE_TOOLS_DIR`` overrides it)."""
    override = os.environ.get("KCE_TOOLS_DIR")
    return Path(override) if override else _DEFAULT_TOOLS


@dataclass(frozen=True)
class Distribution:
    """One Kafka release's jars."""

    release: str
    libs: Path

    @property
    def major(self) -> int:
        return int(self.release.split(".", 1)[0])

    @property
    def zookeeper_mode(self) -> bool:
        """Whether this release can run in ZooKeeper mode (every release before 4.0)."""
        return self.release in ZOOKEEPER_RELEASES

    @property
    def kraft_mode(self) -> bool:
        """Whether this release is started in KRaft mode here."""
        return self.release in KRAFT_RELEASES

    @property
    def log4j2(self) -> bool:
        """4.0 moved the distribution from reload4j (log4j 1 properties) to log4j2 (KIP-653)."""
        return self.major >= 4

    @property
    def classpath(self) -> str:
        # The JVM expands a trailing `*` to every jar of the folder, as bin/kafka-run-class.sh does with its loop.
        return str(self.libs / "*")


def distribution(release: str) -> Distribution:
    """The fetched jars of ``release``; a clear error naming the set-up fragment when they are absent."""
    if release not in RELEASES:
        raise ValueError(f"Kafka {release!r} is not fetched by {_FRAGMENT}; available: {', '.join(RELEASES)}")
    libs = tools_dir() / "kafka" / release / "libs"
    if not (libs / f"kafka_2.13-{release}.jar").is_file():
        raise DistributionMissing(
            f"Kafka {release} is missing from {libs}: run `bash scripts/setup.sh` ({_FRAGMENT} fetches it from "
            "Maven Central)"
        )
    return Distribution(release, libs)


def legacy_client_classpath(version: str) -> str:
    """kafka-clients ``version`` (0.10.1.1, 0.10.2.2 or 2.8.2) with its own dependencies, as a ``java -cp`` value."""
    if version not in LEGACY_CLIENTS:
        raise ValueError(f"kafka-clients {version!r} is not fetched by {_FRAGMENT}; available: {LEGACY_CLIENTS}")
    folder = tools_dir() / "kafka-clients-legacy" / version
    if not (folder / f"kafka-clients-{version}.jar").is_file():
        raise DistributionMissing(f"kafka-clients {version} is missing from {folder}: run `bash scripts/setup.sh`")
    return str(folder / "*")


def jmx_exporter_agent() -> Path:
    """The Prometheus JMX exporter's javaagent jar."""
    jar = tools_dir() / "jmx-exporter" / JMX_EXPORTER_JAR
    if not jar.is_file():
        raise DistributionMissing(f"{jar} is missing: run `bash scripts/setup.sh` ({_FRAGMENT} fetches it)")
    return jar
