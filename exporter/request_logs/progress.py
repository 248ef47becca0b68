"""Stage progress of a long Spark run on stderr, from the driver's StatusTracker (works on any master)."""

from __future__ import annotations

import logging
import threading
from types import TracebackType

from pyspark import SparkContext

log = logging.getLogger("exporter.request_logs")


class ProgressLogger:
    """Logs each active stage's completed/total tasks every ``interval`` seconds while something runs."""

    def __init__(self, sc: SparkContext, interval: float = 5.0) -> None:
        self._sc = sc
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="spark-progress", daemon=True)
        self._last: str = ""

    def _snapshot(self) -> str:
        tracker = self._sc.statusTracker()
        parts = []
        for stage_id in sorted(tracker.getActiveStageIds()):
            info = tracker.getStageInfo(stage_id)
            if info is not None:
                parts.append(
                    f"stage {stage_id} ({info.name.split(' at ')[0]}): "
                    f"{info.numCompletedTasks}/{info.numTasks} tasks done, {info.numActiveTasks} running"
                )
        return "; ".join(parts)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                line = self._snapshot()
            except Exception as exc:  # the context may be stopping under us; progress is best effort
                log.debug("progress poll failed: %s", exc)
                continue
            if line and line != self._last:
                log.info("progress: %s", line)
                self._last = line

    def __enter__(self) -> ProgressLogger:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=self._interval + 1)
