"""The log files under the inputs, listed by the driver through Hadoop's FileSystem API, with what identifies their
content: the first decompressed bytes (``head``), the stored size and the modification time.

Listing here rather than letting Spark expand the inputs is what lets an incremental run read only some files and
name an unreadable one before any table is touched. The selection is Spark's own (``recursiveFileLookup`` with a
file-name glob, hidden ``_``/``.`` names skipped as ``InMemoryFileIndex`` skips them), so a full run reads what
``spark.read.text(inputs)`` would.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pyspark.sql import SparkSession

from exporter.request_logs import log_format as lf
from exporter.request_logs import server_log

FileKind = Literal["request", "server"]
#: Bytes read from the start of each file: enough to hold several log lines, whose timestamps, correlation ids and
#: connection ids make two different files' heads differ.
HEAD_BYTES = 4096


class InputError(Exception):
    """An input path that does not exist or cannot be listed or read: the run stops before writing anything."""


class FileGone(InputError):
    """A listed file deleted before it could be opened (retention, log4j dropping its oldest backup): the listing
    goes on as if it had been made a moment later."""


@dataclass(frozen=True)
class InputFile:
    #: As Spark reports it in ``_metadata.file_path`` (a URI, percent-encoded).
    path: str
    #: As Hadoop's Path parses it (what ``spark.read`` is given to read this one file).
    read_path: str
    kind: FileKind
    size: int
    mtime_ms: int
    compressed: bool
    head: bytes
    #: Why its first bytes could not be decompressed, if they could not (the file is then not read).
    corrupt: str | None = None


def spark_path(uri: str) -> str:
    """A file's URI as Spark's ``_metadata.file_path`` writes it: a listed local file's URI has an empty authority
    (``file:///x``), Spark's has none (``file:/x``)."""
    return "file:/" + uri[len("file:///") :] if uri.startswith("file:///") else uri


def kind_of(name: str) -> FileKind | None:
    if fnmatch.fnmatchcase(name, lf.FILE_GLOB):
        return "request"
    if fnmatch.fnmatchcase(name, server_log.FILE_GLOB):
        return "server"
    return None


def _hidden(name: str) -> bool:
    # InMemoryFileIndex.shouldFilterOutPathName: Spark never reads these, so neither do we.
    return (name.startswith(("_", ".")) and not name.startswith("_metadata")) or name.endswith("._COPYING_")


class _Hadoop:
    def __init__(self, spark: SparkSession) -> None:
        jvm = spark.sparkContext._jvm  # Hadoop's FileSystem API is only reachable through the JVM gateway
        assert jvm is not None
        self.jvm: Any = jvm
        self.conf = spark.sparkContext._jsc.hadoopConfiguration()
        self.codecs = jvm.org.apache.hadoop.io.compress.CompressionCodecFactory(self.conf)

    def path(self, value: str) -> Any:
        return self.jvm.org.apache.hadoop.fs.Path(value)


def _java_message(exc: Exception, qualified: bool = False) -> str:
    java = getattr(exc, "java_exception", None)
    if java is not None:
        name = java.getClass().getName() if qualified else java.getClass().getSimpleName()
        return f"{name}: {java.getMessage()}"
    return str(exc).splitlines()[0]


def _gone(fs: Any, path: Any) -> bool:
    """Whether a path listed a moment ago no longer exists. Asked after a failure rather than read from the
    exception's type: a local file that cannot be opened for want of permission raises FileNotFoundException too."""
    from py4j.protocol import Py4JJavaError

    try:
        return not fs.exists(path)
    except Py4JJavaError:
        return False


def _walk(fs: Any, directory: Any) -> Iterator[Any]:
    """The files under ``directory``, recursively, skipping the directories Spark would skip. ``listStatus`` rather
    than ``listFiles``: the latter builds a LocatedFileStatus per entry, whose permissions a local file system reads
    by running ``ls -ld`` on it, which fails on a file deleted since the listing. Brokers' data directories (and log4j's
    rolling) delete files all the time, files this job never reads: a run over a broker's whole directory stopped on
    a checkpoint's ``.tmp`` file. A directory deleted between its parent's listing and its own had nothing to read."""
    from py4j.protocol import Py4JJavaError

    try:
        children = fs.listStatus(directory)
    except Py4JJavaError:
        if _gone(fs, directory):
            return
        raise
    for child in children:
        if not child.isDirectory():
            yield child
        elif not _hidden(child.getPath().getName()):
            yield from _walk(fs, child.getPath())


def _statuses(hadoop: _Hadoop, given: str) -> Iterator[Any]:
    """Every file under one input (a file, a directory searched recursively, or a glob)."""
    from py4j.protocol import Py4JJavaError

    path = hadoop.path(given)
    try:
        fs = path.getFileSystem(hadoop.conf)
        matches = fs.globStatus(path)
    except Py4JJavaError as exc:
        raise InputError(f"--input {given}: cannot list it: {_java_message(exc)}") from exc
    if matches is None or (len(matches) == 0 and not any(c in given for c in "*?[{")):
        raise InputError(f"--input {given}: no such file or directory")
    for status in matches:
        if not status.isDirectory():
            yield status
            continue
        try:
            yield from _walk(fs, status.getPath())
        except Py4JJavaError as exc:
            raise InputError(f"--input {given}: cannot list {status.getPath()}: {_java_message(exc)}") from exc


def _head(hadoop: _Hadoop, status: Any) -> tuple[bytes, str | None]:
    """The first HEAD_BYTES decompressed bytes, and why decompressing them failed (a corrupt or cut-off archive:
    the run skips that file and goes on). A file that cannot be opened stops the run, unless it is gone."""
    from py4j.protocol import Py4JJavaError

    path = status.getPath()
    codec = hadoop.codecs.getCodec(path)
    fs = path.getFileSystem(hadoop.conf)
    try:
        stream = fs.open(path)
    except Py4JJavaError as exc:
        if _gone(fs, path):
            raise FileGone(f"{spark_path(path.toUri().toString())}: deleted since it was listed") from exc
        raise InputError(f"cannot read {spark_path(path.toUri().toString())}: {_java_message(exc)}") from exc
    try:
        if codec is not None:
            stream = codec.createInputStream(stream)
        return bytes(stream.readNBytes(HEAD_BYTES)), None
    except Py4JJavaError as exc:
        if codec is None:
            raise InputError(f"cannot read {spark_path(path.toUri().toString())}: {_java_message(exc)}") from exc
        return b"", _java_message(exc, qualified=True)
    finally:
        stream.close()


def moved_since_listed(spark: SparkSession, files: Sequence[InputFile]) -> list[InputFile]:
    """The files whose path no longer holds the file the listing saw there. log4j's size-based rolling renames
    kafka-request.log to .1, .1 to .2 and so on, and deletes the last: a path read after such a rename gave another
    file's lines, which the incremental state would record under the listed file's identity (its first bytes), and
    count twice or never. A file that only grew keeps its first bytes; one that is gone or cannot be opened any
    more counts as moved."""
    from py4j.protocol import Py4JJavaError

    hadoop = _Hadoop(spark)
    moved = []
    for file in files:
        path = hadoop.path(file.read_path)
        try:
            head, _ = _head(hadoop, path.getFileSystem(hadoop.conf).getFileStatus(path))
        except (InputError, Py4JJavaError):
            moved.append(file)
            continue
        if head[: len(file.head)] != file.head:
            moved.append(file)
    return moved


def list_input_files(spark: SparkSession, inputs: Sequence[str]) -> list[InputFile]:
    """The request and server log files under ``inputs``, each once, sorted by path."""
    hadoop = _Hadoop(spark)
    seen: dict[str, InputFile] = {}
    for given in inputs:
        for status in _statuses(hadoop, given):
            path = status.getPath()
            name = path.getName()
            kind = kind_of(name)
            if kind is None or _hidden(name):
                continue
            uri = spark_path(path.toUri().toString())
            if uri in seen:
                continue
            try:
                head, corrupt = _head(hadoop, status) if status.getLen() > 0 else (b"", None)
            except FileGone:
                continue
            seen[uri] = InputFile(
                path=uri,
                read_path=path.toString(),
                kind=kind,
                size=int(status.getLen()),
                mtime_ms=int(status.getModificationTime()),
                compressed=hadoop.codecs.getCodec(path) is not None,
                head=head,
                corrupt=corrupt,
            )
    return sorted(seen.values(), key=lambda f: f.path)
