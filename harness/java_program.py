"""Running the project's single-file Java programs (the double's MBean host, the Java clients, the oracles).

``java File.java`` compiles the source in memory at every start: about 0.8 s of CPU for the Java client and 2 s for
the MBean host, paid by every double and every client a test starts. The classes are compiled once instead, with
``javac``, into ``.tools/java-classes/<program>-<key>/`` (the key covers the source and the class path it was
compiled against), and later starts run them from there. Several test workers may compile the same program at once:
each compiles into a directory of its own and renames it into place, and the first rename wins. Without ``javac``
(a JRE only) programs run from source as before.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["JavaCompileError", "java_program_args"]

_CACHE_DIR = Path(__file__).resolve().parents[1] / ".tools" / "java-classes"


class JavaCompileError(RuntimeError):
    """javac refused a program's source."""


def _cache_dir() -> Path:
    override = os.environ.get("KCE_JAVA_CLASSES_DIR")
    return Path(override) if override else _CACHE_DIR


def _compiled(source: Path, classpath: str) -> Path | None:
    javac = shutil.which("javac")
    if javac is None:
        return None
    key = hashlib.sha256(source.read_bytes())
    for jar in classpath.split(os.pathsep):
        key.update(b"\0" + Path(jar).name.encode())
    target = _cache_dir() / f"{source.stem}-{key.hexdigest()[:16]}"
    if (target / f"{source.stem}.class").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{source.stem}-", dir=target.parent))
    try:
        done = subprocess.run(
            [javac, "-nowarn", "-encoding", "UTF-8", "-cp", classpath, "-d", str(scratch), str(source)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise JavaCompileError(f"javac {source}: {done.stderr.strip()[-2000:]}")
        try:
            scratch.rename(target)
        except OSError:
            if not (target / f"{source.stem}.class").is_file():
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


def java_program_args(source: Path, classpath: str) -> list[str]:
    """The ``java`` arguments after the JVM options that run ``source``'s main class against ``classpath``:
    ``-cp <classpath>:<compiled classes> <Class>``, or ``-cp <classpath> <source>`` without a JDK."""
    classes = _compiled(source, classpath)
    if classes is None:
        return ["-cp", classpath, str(source)]
    return ["-cp", os.pathsep.join([classpath, str(classes)]), source.stem]
