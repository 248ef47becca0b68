"""The committed bridge jar is built from the committed JmxBridge.java, and its command line holds no secret."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

from exporter.sources.jmx import JavaRuntime
from exporter.sources.jmx_bridge import BRIDGE_JAR, BRIDGE_SOURCE, JmxBridge


def _manifest(jar: str) -> dict[str, str]:
    with zipfile.ZipFile(jar) as archive:
        text = archive.read("META-INF/MANIFEST.MF").decode()
    # Manifest lines wrap at 72 bytes; a continuation line starts with one space.
    unwrapped = text.replace("\r\n", "\n").replace("\n ", "")
    return dict(line.split(": ", 1) for line in unwrapped.splitlines() if ": " in line)


def test_the_jar_was_built_from_the_current_source() -> None:
    source_sha = hashlib.sha256(Path(BRIDGE_SOURCE).read_bytes()).hexdigest()
    assert _manifest(BRIDGE_JAR).get("Source-SHA256") == source_sha, (
        "exporter/sources/jmx_bridge/JmxBridge.java changed: run scripts/build-jmx-bridge.sh and commit the jar"
    )


def test_the_jar_holds_the_bridge_and_stays_small() -> None:
    with zipfile.ZipFile(BRIDGE_JAR) as archive:
        assert "JmxBridge.class" in archive.namelist()
    assert Path(BRIDGE_JAR).stat().st_size < 64 * 1024


def test_the_command_line_carries_rmi_deadlines_and_no_credentials() -> None:
    command = JmxBridge(JavaRuntime("/opt/java", ("-Xss512k", "-Xms64m")), 8, 2.5, 90).command()
    assert command[0] == "/opt/java" and "-Xss512k" in command
    # java.options follow the bridge's own defaults: of a repeated option the JVM takes the last.
    assert [arg for arg in command if arg.startswith("-Xms")][-1] == "-Xms64m"
    assert "-Dsun.rmi.transport.tcp.responseTimeout=2500" in command
    # An unused socket is kept as long as the broker's JMX connection (90 s here), not closed after the deadline.
    assert "-Dsun.rmi.transport.connectionTimeout=90000" in command
    assert command[-3:] == ["JmxBridge", "8", "90"]
    assert not [arg for arg in command if "pass" in arg.lower() or arg in ("-u", "-p")]
