"""Stopping a child process the bench started, by its pid: SIGTERM, then SIGKILL when it does not stop in time."""

from __future__ import annotations

import subprocess

__all__ = ["stop_process"]


def stop_process(process: subprocess.Popen[bytes], grace: float = 15.0) -> None:
    """SIGTERM ``process`` (if it still runs) and wait for it; SIGKILL it after ``grace`` seconds."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
