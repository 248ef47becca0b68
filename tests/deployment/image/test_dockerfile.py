"""The Dockerfile's promises, read from the Dockerfile itself (there is no Docker engine on CI machines)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tests.deployment.image.dockerfile import Stage, global_args, lineage, parse, stage

ROOT = Path(__file__).resolve().parents[3]
DOCKERFILE = ROOT / "Dockerfile"
# (target, title label, the stage whose venv it copies, CMD); the exporter is the last stage: `docker build .`.
IMAGES = [
    ("", "kafka-client-exporter", "build", '["serve", "--config", "/etc/kafka-client-exporter/config.yaml"]'),
    ("inventory", "kafka-client-exporter-inventory", "inventory-build", '["inventory", "--help"]'),
]


def image_stage(stages: list[Stage], target: str) -> Stage:
    return stage(stages, target) if target else stages[-1]


@pytest.mark.parametrize(("target", "title", "venv_stage", "cmd"), IMAGES)
def test_each_image_has_a_jre_a_non_root_user_and_no_compilers(
    target: str, title: str, venv_stage: str, cmd: str
) -> None:
    stages = parse(DOCKERFILE)
    image = image_stage(stages, target)
    runs = " ".join(run for layer in lineage(stages, image) for run in layer.arguments("RUN"))
    assert "openjdk-17-jre-headless" in runs  # JMX queries; Spark 4 needs Java 17+
    for compiler in ("build-essential", "gcc", "g++", "-dev "):
        assert compiler not in runs
    user = image.arguments("USER")[-1]
    assert user.split(":")[0].isdigit() and int(user.split(":")[0]) > 0  # numeric, so runAsNonRoot can check it
    assert image.arguments("ENTRYPOINT") == ['["kafka-client-exporter"]']
    assert image.arguments("CMD") == [cmd]
    # The image gets its build stage's venv and runs its console script.
    build = stage(stages, venv_stage)
    venv = {name: value for layer in lineage(stages, build) for name, value in layer.env().items()}["VENV"]
    assert any(args == f"--from={venv_stage} {venv} {venv}" for args in image.arguments("COPY"))
    env = {name: value for layer in lineage(stages, image) for name, value in layer.env().items()}
    assert env["PATH"].startswith(f"{venv}/bin:")
    assert build.install_block, f"stage {venv_stage} marks its install commands for tests/deployment/image"


def test_the_inventory_venv_adds_the_inventory_extra_to_the_exporters() -> None:
    stages = parse(DOCKERFILE)
    # Beside the exporter's build stage, not on it, so the exporter image never builds pyspark.
    assert [layer.name for layer in lineage(stages, stage(stages, "inventory-build"))] == [
        "build-base",
        "inventory-build",
    ]
    assert "inventory-build" not in {layer.name for layer in lineage(stages, stages[-1])}
    block = " ".join(stage(stages, "inventory-build").install_block)
    assert '["optional-dependencies"]["inventory"]' in block and '"kafka-client-exporter[inventory]"' in block
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(requirement.startswith("pyspark==") for requirement in extras["inventory"])


def test_the_dependencies_wheels_are_built_before_the_code_is_copied() -> None:
    """A change to the code must not build pyspark's wheel again (minutes): every stage builds its dependencies'
    wheels from pyproject.toml alone, before any COPY of the code."""
    stages = parse(DOCKERFILE)
    for name in ("build", "inventory-build"):
        instructions = [item for layer in lineage(stages, stage(stages, name)) for item in layer.instructions]
        copies = [i for i, (kind, args) in enumerate(instructions) if kind == "COPY" and "exporter/" in args]
        dependency_wheels = [
            i for i, (kind, args) in enumerate(instructions) if kind == "RUN" and "requirements.txt" in args
        ]
        assert copies and dependency_wheels and max(dependency_wheels) < min(copies), name
        first_copy = min(i for i, (kind, _) in enumerate(instructions) if kind == "COPY")
        assert instructions[first_copy] == ("COPY", "pyproject.toml ./"), name


def test_dockerignore_admits_exactly_what_the_build_stages_copy() -> None:
    stages = parse(DOCKERFILE)
    copied = {
        source.rstrip("/")
        for layer in stages
        for args in layer.arguments("COPY")
        if not args.startswith("--from=")
        for source in args.split()[:-1]
    }
    rules = [line for line in (ROOT / ".dockerignore").read_text().splitlines() if line and not line.startswith("#")]
    assert rules[0] == "*"
    admitted = {rule[1:].rstrip("/") for rule in rules if rule.startswith("!")}
    assert admitted == copied


def test_the_base_is_a_build_argument_whose_default_is_a_public_python_image() -> None:
    # scripts/build-image.sh swaps in a local Debian base; docker users get the public image untouched.
    stages = parse(DOCKERFILE)
    names = {layer.name for layer in stages if layer.name}
    assert {layer.base for layer in stages if layer.base not in names} == {"${PYTHON_IMAGE}"}
    default = global_args(DOCKERFILE)["PYTHON_IMAGE"]
    assert re.fullmatch(r"python:3\.11-slim-\w+", default), default


@pytest.mark.parametrize(("target", "title", "venv_stage", "cmd"), IMAGES)
def test_each_image_carries_the_oci_labels_filled_from_build_arguments(
    target: str, title: str, venv_stage: str, cmd: str
) -> None:
    image = image_stage(parse(DOCKERFILE), target)
    labels = image.labels()
    prefix = "org.opencontainers.image."
    for key in ("title", "description", "version", "revision", "created", "source", "licenses"):
        assert labels.get(prefix + key), f"LABEL {prefix}{key} missing or empty"
    assert labels[prefix + "title"] == title
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert labels[prefix + "licenses"] == project["license"]["text"]
    assert labels[prefix + "source"].startswith("https://")
    # Filled per build (scripts/build-image.sh passes them); an ARG must be declared in the stage that uses it.
    declared = {args.partition("=")[0] for args in image.arguments("ARG")}
    for key, arg in (("version", "VERSION"), ("revision", "REVISION"), ("created", "CREATED")):
        assert labels[prefix + key] == "${" + arg + "}" and arg in declared
