"""The exposition of a snapshot that fills every family is byte-identical to the committed golden files: family
order, HELP texts, label order, escaping and values are all part of what scrapers, dashboards and alerts see.

After an intended change to the exposition, rewrite the files and review their diff:
    PYTHONPATH=$PWD .venv/bin/python -m tests.unit.collectors.test_exposition_golden
"""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter import __version__
from exporter.web.exposition import render_snapshot
from tests.unit.collectors.rich_snapshot import rich_snapshot

GOLDEN = Path(__file__).parent / "golden"
# (file, openmetrics, network_processor_label)
CASES = [("summed.prom", False, False), ("per_processor.openmetrics", True, True)]
# build_info carries the release; the golden files do not change with it.
VERSION_LABEL = f'version="{__version__}"'.encode()
VERSION_PLACEHOLDER = b'version="VERSION"'


def rendered(openmetrics: bool, per_processor: bool) -> bytes:
    body = render_snapshot(rich_snapshot(), openmetrics, per_processor)
    assert body.count(VERSION_LABEL) == 1
    return body.replace(VERSION_LABEL, VERSION_PLACEHOLDER)


@pytest.mark.parametrize(("name", "openmetrics", "per_processor"), CASES)
def test_exposition_matches_the_golden_file(name: str, openmetrics: bool, per_processor: bool) -> None:
    expected = (GOLDEN / name).read_bytes()
    actual = rendered(openmetrics, per_processor)
    if actual != expected:
        expected_lines, actual_lines = expected.decode().splitlines(), actual.decode().splitlines()
        first = next(
            (i for i, pair in enumerate(zip(expected_lines, actual_lines, strict=False)) if pair[0] != pair[1]),
            min(len(expected_lines), len(actual_lines)),
        )
        pytest.fail(
            f"{name} differs from line {first + 1}:\n"
            f"  golden:   {expected_lines[first] if first < len(expected_lines) else '<end>'}\n"
            f"  rendered: {actual_lines[first] if first < len(actual_lines) else '<end>'}"
        )


def test_the_golden_files_cover_every_kind_of_label_set() -> None:
    # The summed and the per-processor form really differ, so each golden file checks its own mode.
    summed, per_processor = (GOLDEN / CASES[0][0]).read_text(), (GOLDEN / CASES[1][0]).read_text()
    assert 'listener="PLAINTEXT",network_processor="1",reason="below_minimum"} 1.0' in per_processor
    assert 'client_software_version="1.5.0",kafka_cluster="prod",listener="PLAINTEXT"} 5.0' in summed


if __name__ == "__main__":
    for name, openmetrics, per_processor in CASES:
        (GOLDEN / name).write_bytes(rendered(openmetrics, per_processor))
        print(f"wrote {GOLDEN / name}")
