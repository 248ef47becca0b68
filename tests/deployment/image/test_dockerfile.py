"""The Dockerfile's promises, read from the Dockerfile itself (there is no Docker engine on CI machines)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from tests.deployment.image.dockerfile import global_args, parse

ROOT = Path(__file__).resolve().parents[3]


def test_final_stage_has_a_jre_a_non_root_user_and_no_compilers() -> None:
    build, final = parse(ROOT / "Dockerfile")
    final_runs = " ".join(final.arguments("RUN"))
    assert "openjdk-17-jre-headless" in final_runs
    for compiler in ("build-essential", "gcc", "g++", "-dev "):
        assert compiler not in final_runs
    user = final.arguments("USER")[-1]
    assert user.split(":")[0].isdigit() and int(user.split(":")[0]) > 0  # numeric, so runAsNonRoot can check it
    assert final.arguments("ENTRYPOINT") == ['["kafka-client-exporter"]']
    assert final.arguments("CMD") == ['["serve", "--config", "/etc/kafka-client-exporter/config.yaml"]']
    # The final stage gets the build stage's venv and runs its console script.
    venv = build.env()["VENV"]
    assert any(args == f"--from=build {venv} {venv}" for args in final.arguments("COPY"))
    assert final.env()["PATH"].startswith(f"{venv}/bin:")
    assert build.install_block, "the build stage marks its install commands for tests/deployment/image"


def test_dockerignore_admits_exactly_what_the_build_stage_copies() -> None:
    build, _ = parse(ROOT / "Dockerfile")
    copied = {source.rstrip("/") for args in build.arguments("COPY") for source in args.split()[:-1]}
    rules = [line for line in (ROOT / ".dockerignore").read_text().splitlines() if line and not line.startswith("#")]
    assert rules[0] == "*"
    admitted = {rule[1:].rstrip("/") for rule in rules if rule.startswith("!")}
    assert admitted == copied


def test_the_base_is_a_build_argument_whose_default_is_a_public_python_image() -> None:
    # scripts/build-image.sh swaps in a local Debian base; docker users get the public image untouched.
    stages = parse(ROOT / "Dockerfile")
    assert [stage.base.split()[0] for stage in stages] == ["${PYTHON_IMAGE}", "${PYTHON_IMAGE}"]
    default = global_args(ROOT / "Dockerfile")["PYTHON_IMAGE"]
    assert re.fullmatch(r"python:3\.11-slim-\w+", default), default


def test_final_stage_carries_the_oci_labels_filled_from_build_arguments() -> None:
    _, final = parse(ROOT / "Dockerfile")
    labels = final.labels()
    prefix = "org.opencontainers.image."
    for key in ("title", "description", "version", "revision", "created", "source", "licenses"):
        assert labels.get(prefix + key), f"LABEL {prefix}{key} missing or empty"
    assert labels[prefix + "title"] == "kafka-client-exporter"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert labels[prefix + "licenses"] == project["license"]["text"]
    assert labels[prefix + "source"].startswith("https://")
    # Filled per build (scripts/build-image.sh passes them); an ARG must be declared in the stage that uses it.
    declared = {args.partition("=")[0] for args in final.arguments("ARG")}
    for key, arg in (("version", "VERSION"), ("revision", "REVISION"), ("created", "CREATED")):
        assert labels[prefix + key] == "${" + arg + "}" and arg in declared
