"""Where the suite's time goes, module by module: wall time and the CPU of the worker and every process it started.

On two cores the suite is bound by CPU, and xdist's `--durations` shows only wall time per test, which a busy machine
inflates for every test alike. With ``KCE_MODULE_COST=<dir>`` each worker samples, twice a second, the CPU time of
every process descended from it (a JVM keeps being counted once seen, even when its parent never waits for it and it
is re-parented) and adds what each used since the last sample to the module the worker is running; it writes one line
per module to ``<dir>/<worker>.tsv``. ``python -m tests.support.module_cost <dir>`` prints them, costliest first.
Resource usage from ``getrusage`` would miss the JVMs whose parents do not wait for them: half of the suite's CPU.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ENV = "KCE_MODULE_COST"
_TICK = os.sysconf("SC_CLK_TCK")


class _Sampler:
    def __init__(self) -> None:
        self.module: str | None = None
        self.used = 0.0  # by the current module's processes since it started
        self._seen: dict[int, float] = {}
        self._lock = threading.Lock()

    def start(self) -> None:
        threading.Thread(target=self._run, name="module-cost", daemon=True).start()

    def sample(self) -> None:
        # One at a time: the sampling thread and a module's switch would both count the same CPU since _seen.
        with self._lock:
            self._sample()

    def _sample(self) -> None:
        parents: dict[int, int] = {}
        used: dict[int, float] = {}
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry.name}/stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            pid = int(entry.name)
            parents[pid] = int(fields[1])
            used[pid] = (int(fields[11]) + int(fields[12])) / _TICK
        mine = {os.getpid()} | {pid for pid in self._seen if pid in used}
        grew = True
        while grew:
            grew = False
            for pid, parent in parents.items():
                if parent in mine and pid not in mine:
                    mine.add(pid)
                    grew = True
        self.used += sum(used[pid] - self._seen.get(pid, 0.0) for pid in mine)
        self._seen = {pid: used[pid] for pid in mine}

    def switch(self, module: str | None) -> float:
        """Count what was used so far to the current module, then start counting to ``module``; returns the CPU
        the current one used."""
        with self._lock:
            self._sample()
            done = self.used if self.module is not None else 0.0
            self.module, self.used = module, 0.0
            return done

    def _run(self) -> None:
        while True:
            time.sleep(0.5)
            self.sample()


_sampler: _Sampler | None = None
_wall: dict[str, float] = {}


def _module(item: pytest.Item | None) -> str | None:
    return None if item is None else item.nodeid.split("::", 1)[0]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    global _sampler
    directory = os.environ.get(ENV)
    module = _module(item)
    if not directory or module is None:
        yield
        return
    if _sampler is None:
        _sampler = _Sampler()
        _sampler.sample()
        _sampler.start()
    if module not in _wall:
        _sampler.switch(module)
        _wall[module] = time.monotonic()
    yield
    # The module's fixtures are torn down within its last test's protocol: what stopping them costs is counted.
    if _module(nextitem) != module:
        cpu = _sampler.switch(None)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        Path(directory).mkdir(parents=True, exist_ok=True)
        with (Path(directory) / f"{worker}.tsv").open("a", encoding="utf-8") as out:
            out.write(f"{module}\t{time.monotonic() - _wall[module]:.1f}\t{cpu:.1f}\t{worker}\n")


def main(directory: str) -> None:
    rows = [
        line.split("\t")
        for path in sorted(Path(directory).glob("*.tsv"))
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    rows.sort(key=lambda row: float(row[2]), reverse=True)
    print(f"{'cpu s':>8} {'wall s':>8}  worker  module   (total CPU {sum(float(row[2]) for row in rows):.0f} s)")
    for module, wall, cpu, worker in rows:
        print(f"{float(cpu):8.1f} {float(wall):8.1f}  {worker:<6}  {module}")


if __name__ == "__main__":
    main(sys.argv[1])
