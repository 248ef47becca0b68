"""The benchmark's /proc readings (CPU of the live bridge JVM, RSS of daemon and bridge), checked against the kernel's
own accounting of this process so a wrong field index cannot pass."""

from __future__ import annotations

import os
import resource
from pathlib import Path

import pytest

from bench.bench_jmx_transports import proc_cpu_seconds, proc_rss_mb


def test_cpu_is_counted_after_a_command_name_holding_spaces_and_parentheses() -> None:
    ticks = os.sysconf("SC_CLK_TCK")
    fields = ["S", *["0"] * 10, str(3 * ticks), str(ticks), *["0"] * 30]
    assert proc_cpu_seconds(f"4242 (java) (x) {' '.join(fields)}") == 4.0


def test_cpu_of_this_process_matches_getrusage() -> None:
    sum(i * i for i in range(2_000_000))  # some CPU to count
    usage = resource.getrusage(resource.RUSAGE_SELF)
    measured = proc_cpu_seconds(Path("/proc/self/stat").read_text())
    assert measured == pytest.approx(usage.ru_utime + usage.ru_stime, abs=0.05)


def test_peak_rss_of_this_process_matches_getrusage() -> None:
    status = Path("/proc/self/status").read_text()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert proc_rss_mb(status, "VmHWM") == pytest.approx(peak_mb, abs=1)
    assert 0 < proc_rss_mb(status) <= proc_rss_mb(status, "VmHWM")


def test_a_missing_field_is_named() -> None:
    with pytest.raises(ValueError, match="VmRSS"):
        proc_rss_mb("Name:\tjava\n")
