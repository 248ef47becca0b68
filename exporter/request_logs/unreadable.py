"""Input files that fail while Spark reads them: a ``.gz`` cut off (an external gzip still writing it, an
interrupted copy) or corrupt, or a file deleted between the listing and the read (retention at the same moment).

Such a file must not sink the run: Spark names it in its ``FAILED_READ_FILE`` error, and the pass is run again
without it. Spark cannot stream the readable part of a cut-off gzip member and then stop cleanly (the decompressor
fails on the member's end), so the file is skipped whole, named in ``malformed`` and in the log, and left out of
an incremental run's state so that a later run reads it once it is complete. These failures are rare, so paying a
second pass when one happens costs less than checking every compressed file beforehand (which would mean
decompressing it on the driver).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from exporter.request_logs.input_files import InputFile, spark_path

log = logging.getLogger("exporter.request_logs")
T = TypeVar("T")

#: Spark's error for a file it failed to read (QueryExecutionErrors.cannotReadFilesError); the path is URL-encoded.
_FAILED_READ = re.compile(r"\[FAILED_READ_FILE\.(\w+)\] Encountered error while reading file (\S+?)\.(?:\s|$)")
#: A file deleted after the listing, before Spark planned the read (it checks each given path then).
_PATH_NOT_FOUND = re.compile(r"\[PATH_NOT_FOUND\] Path does not exist: (\S+?)\.(?:\s|$)")
_CAUSE = re.compile(r"Caused by: ([\w.$]+(?:Exception|Error)[^\n]*)")
GONE = "FILE_NOT_EXIST"


@dataclass(frozen=True)
class UnreadableFile:
    file: InputFile
    #: Spark's sub-condition (FILE_NOT_EXIST for a file deleted while the run read, NO_HINT for a cut-off gzip...).
    condition: str
    #: The underlying Java exception, e.g. ``java.io.EOFException: Unexpected end of input stream``.
    cause: str

    @property
    def why(self) -> str:
        if self.condition == GONE:
            return "deleted while the run read it"
        return f"cut off or corrupt ({self.cause})"


def failed_file(error: BaseException) -> tuple[str, str, str] | None:
    """(path as in ``InputFile.path``, Spark's sub-condition, cause) of a FAILED_READ_FILE error, else None."""
    text = str(error)
    gone = _PATH_NOT_FOUND.search(text)
    if gone is not None:
        return spark_path(gone.group(1)), GONE, "java.io.FileNotFoundException"
    found = _FAILED_READ.search(text)
    if found is None:
        return None
    causes = _CAUSE.findall(text)
    # The innermost cause is the one that says what is wrong with the file.
    cause = causes[-1].strip() if causes else "no cause given"
    return spark_path(found.group(2)), found.group(1), cause


#: Not Spark's: the driver could not decompress the file's first bytes while listing it.
CORRUPT_HEAD = "CORRUPT_HEAD"


def corrupt_heads(files: Sequence[InputFile]) -> tuple[list[InputFile], list[UnreadableFile]]:
    """The files to read, and those whose first bytes could not be decompressed (left out like Spark's failures)."""
    readable = [f for f in files if f.corrupt is None]
    corrupt = [UnreadableFile(f, CORRUPT_HEAD, f.corrupt) for f in files if f.corrupt is not None]
    for unreadable in corrupt:
        log.warning("%s: %s; skipped, the run goes on without it", unreadable.file.path, unreadable.why)
    return readable, corrupt


def skipping_unreadable(
    files: Sequence[InputFile], attempt: Callable[[list[InputFile]], T], undo: Callable[[], None]
) -> tuple[T, list[UnreadableFile]]:
    """``attempt(files)``, run again without each file Spark fails to read (``undo`` first removes what the failed
    attempt left); returns its result and the files left out."""
    remaining = list(files)
    skipped: list[UnreadableFile] = []
    while True:
        try:
            return attempt(remaining), skipped
        except Exception as exc:  # py4j's and pyspark's own error types both carry Spark's message
            failed = failed_file(exc)
            match = next((f for f in remaining if failed is not None and f.path == failed[0]), None)
            if failed is None or match is None:
                raise
            undo()
            remaining.remove(match)
            unreadable = UnreadableFile(match, failed[1], failed[2])
            skipped.append(unreadable)
            log.warning("%s: %s; skipped, the run goes on without it", match.path, unreadable.why)
