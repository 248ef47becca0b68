"""One local SparkSession for every inventory test module (a session start costs seconds), and one run of the
command over the shipped samples for the session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.samples_run import CommandRun
from tests.support.samples_run import samples_run as shared_samples_run
from tests.support.spark_session import SharedSession


@pytest.fixture(scope="session")
def spark_sessions() -> Iterator[SharedSession]:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    sessions = SharedSession()
    yield sessions
    sessions.close()


@pytest.fixture
def spark(spark_sessions: SharedSession) -> Any:
    """The worker's shared SparkSession, usable (a session a timeout broke is replaced before the test starts)."""
    return spark_sessions.get()


@pytest.fixture(scope="session")
def samples_run(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> CommandRun:
    """The inventory command's one run over the shipped samples (tests/support/samples_run.py)."""
    base = tmp_path_factory.getbasetemp()
    # xdist's workers each have a base directory under the session's own; without xdist there is only one.
    shared = base if worker_id == "master" else base.parent
    return shared_samples_run(shared / "samples-run")
