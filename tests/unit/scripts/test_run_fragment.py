"""scripts/run-fragment.sh, which runs each set-up fragment: a failure that set -e and pipefail would end silently
(a program killed by SIGPIPE inside $(... | ...)) is named with its fragment, line and command."""

from __future__ import annotations

import subprocess
from pathlib import Path

RUNNER = Path(__file__).resolve().parents[3] / "scripts" / "run-fragment.sh"


def _run(fragment: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(RUNNER), str(fragment)], capture_output=True, text=True, timeout=30)


def test_a_pipeline_killed_inside_a_substitution_is_named_once_with_its_line(tmp_path: Path) -> None:
    fragment = tmp_path / "09-example.sh"
    # yes writes until head has left: SIGPIPE, exit 141, as etcd --version | head -1 did in CI.
    fragment.write_text('echo building\nprinted=$(yes "line" | head -1)\necho "never: $printed"\n')
    ran = _run(fragment)
    assert ran.returncode == 141
    assert ran.stdout == "building\n"
    assert ran.stderr == f'setup: {fragment} stopped (exit 141) at line 2: printed=$(yes "line" | head -1)\n'


def test_a_failure_inside_a_function_names_the_command(tmp_path: Path) -> None:
    fragment = tmp_path / "09-example.sh"
    fragment.write_text("check() {\n  test -x /nonexistent/tool\n}\ncheck\n")
    ran = _run(fragment)
    assert ran.returncode == 1
    assert ran.stderr == f"setup: {fragment} stopped (exit 1) at line 2: test -x /nonexistent/tool\n"


def test_a_fragment_that_succeeds_says_nothing_more(tmp_path: Path) -> None:
    fragment = tmp_path / "09-example.sh"
    fragment.write_text('value=$(false || echo fallback)\n[ "$value" = fallback ] && echo done\n')
    ran = _run(fragment)
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "done\n", "")
