"""Where Kafka's own Java code lives on this machine: kafka-clients 4.3.0 and 3.9.0 (with slf4j-api and Jackson),
fetched from Maven Central by ``scripts/setup.d/15-kafka-jars.sh`` (``scripts/maven/kafka-clients/pom.xml``) into the
git-ignored ``.tools/kafka-clients``.

The broker double's JMX side, the Java clients and the ApiVersions and request-log oracles all run single-file Java
programs (``java -cp <classpath> File.java``) against these jars.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "KAFKA_CLIENTS_VERSIONS",
    "LEGACY_CLIENTS_VERSIONS",
    "KafkaJarsMissing",
    "kafka_clients_classpath",
    "kafka_clients_dir",
    "legacy_clients_classpath",
    "legacy_clients_dir",
]

#: Releases of kafka-clients the set-up fetches, newest first.
KAFKA_CLIENTS_VERSIONS = ("4.3.0", "3.9.0")
SLF4J_API = "slf4j-api-2.0.18.jar"
#: kafka-clients declares Jackson as a dependency and does not ship it; its generated JsonConverters need it.
JACKSON = ("jackson-core-2.21.2.jar", "jackson-databind-2.21.2.jar", "jackson-annotations-2.21.jar")
_DEFAULT_DIR = Path(__file__).resolve().parents[1] / ".tools" / "kafka-clients"
#: Old kafka-clients releases, each in a folder of its own with the dependencies its POM names (slf4j 1.7, lz4,
#: snappy ...), which differ between them: run by client_scripts/LegacyJavaClient.java.
LEGACY_CLIENTS_VERSIONS = ("2.8.2", "0.10.2.2", "0.10.1.1")
_LEGACY_DEFAULT_DIR = Path(__file__).resolve().parents[1] / ".tools" / "kafka-clients-legacy"


class KafkaJarsMissing(RuntimeError):
    """The jars are not where the set-up puts them."""


def kafka_clients_dir() -> Path:
    """The folder holding the jars (``KCE_KAFKA_CLIENTS_DIR`` overrides the project's ``.tools/kafka-clients``)."""
    override = os.environ.get("KCE_KAFKA_CLIENTS_DIR")
    return Path(override) if override else _DEFAULT_DIR


def kafka_clients_classpath(version: str = "4.3.0", *, jackson: bool = False) -> str:
    """``kafka-clients-<version>.jar`` and slf4j-api (and Jackson with ``jackson``), as a ``java -cp`` value; a clear
    error when a jar is absent."""
    if version not in KAFKA_CLIENTS_VERSIONS:
        raise ValueError(f"kafka-clients {version!r} is not fetched; available: {', '.join(KAFKA_CLIENTS_VERSIONS)}")
    folder = kafka_clients_dir()
    jars = [folder / f"kafka-clients-{version}.jar", folder / SLF4J_API]
    if jackson:
        jars += [folder / jar for jar in JACKSON]
    missing = [str(jar) for jar in jars if not jar.is_file()]
    if missing:
        raise KafkaJarsMissing(
            f"missing {', '.join(missing)}: run `bash scripts/setup.sh` (scripts/setup.d/15-kafka-jars.sh fetches "
            "kafka-clients from Maven Central)"
        )
    return os.pathsep.join(str(jar) for jar in jars)


def legacy_clients_dir(version: str) -> Path:
    """The folder of one old kafka-clients release (``KCE_LEGACY_CLIENTS_DIR`` overrides the project's
    ``.tools/kafka-clients-legacy``; the release's folder is under it)."""
    override = os.environ.get("KCE_LEGACY_CLIENTS_DIR")
    return (Path(override) if override else _LEGACY_DEFAULT_DIR) / version


def legacy_clients_classpath(version: str) -> str:
    """Every jar of kafka-clients ``version``'s folder (the client and its own dependencies), as a ``java -cp`` value;
    a clear error when the client's jar is absent.

    The jars are named one by one rather than as ``<folder>/*``: java_program keys its compiled classes by the jar
    names of the class path, so each release gets classes compiled against its own jar."""
    if version not in LEGACY_CLIENTS_VERSIONS:
        available = ", ".join(LEGACY_CLIENTS_VERSIONS)
        raise ValueError(f"kafka-clients {version!r} is not fetched as a legacy client; available: {available}")
    folder = legacy_clients_dir(version)
    client = folder / f"kafka-clients-{version}.jar"
    if not client.is_file():
        raise KafkaJarsMissing(
            f"missing {client}: run `bash scripts/setup.sh` (scripts/setup.d/15-kafka-jars.sh fetches the legacy "
            "kafka-clients from Maven Central)"
        )
    return os.pathsep.join(str(jar) for jar in sorted(folder.glob("*.jar")))
