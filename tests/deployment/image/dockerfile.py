"""Just enough of a Dockerfile parser to hold the image tests to what the Dockerfile really says."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

INSTALL_BEGIN = "# >>> install"
INSTALL_END = "# <<< install"


@dataclass
class Stage:
    base: str  # the image or earlier stage it starts FROM
    name: str = ""  # its `AS name`, the target `--target` builds
    instructions: list[tuple[str, str]] = field(default_factory=list)  # (INSTRUCTION, arguments)
    install_block: list[str] = field(default_factory=list)  # RUN arguments between the install markers

    def arguments(self, instruction: str) -> list[str]:
        return [args for name, args in self.instructions if name == instruction]

    def env(self) -> dict[str, str]:
        return _pairs(self.arguments("ENV"))

    def labels(self) -> dict[str, str]:
        return _pairs(self.arguments("LABEL"))


def _pairs(arguments: list[str]) -> dict[str, str]:
    """NAME=value pairs of ENV, LABEL or ARG instructions, later ones winning as in a build."""
    values: dict[str, str] = {}
    for args in arguments:
        for pair in shlex.split(args):
            name, _, value = pair.partition("=")
            values[name] = value
    return values


def _logical_lines(text: str) -> list[str]:
    """Instructions with their backslash continuations joined; comment lines kept (they carry the markers)."""
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            lines.append(stripped)
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        lines.append(pending + stripped)
        pending = ""
    return lines


def global_args(path: Path) -> dict[str, str]:
    """The ARGs before the first FROM (the ones a FROM line can use), with their defaults."""
    arguments: list[str] = []
    for line in _logical_lines(path.read_text()):
        if line.upper().startswith("FROM "):
            break
        if line.upper().startswith("ARG "):
            arguments.append(line[4:])
    return _pairs(arguments)


def parse(path: Path) -> list[Stage]:
    stages: list[Stage] = []
    in_block = False
    for line in _logical_lines(path.read_text()):
        if line.startswith(INSTALL_BEGIN):
            in_block = True
            continue
        if line.startswith(INSTALL_END):
            in_block = False
            continue
        if not line or line.startswith("#"):
            continue
        name, _, args = line.partition(" ")
        name, args = name.upper(), re.sub(r"\s+", " ", args.strip())
        if name == "FROM":
            match = re.fullmatch(r"(\S+)(?: as (\S+))?", args, flags=re.IGNORECASE)
            if match is None:
                raise ValueError(f"FROM {args}: expected IMAGE [AS NAME]")
            base, stage_name = match.group(1), match.group(2) or ""
            stages.append(Stage(base=base, name=stage_name))
            continue
        if not stages:
            continue  # global ARGs
        stages[-1].instructions.append((name, args))
        if in_block:
            if name != "RUN":
                raise ValueError(f"only RUN belongs between the install markers, found {name} {args}")
            stages[-1].install_block.append(args)
    return stages


def stage(stages: list[Stage], name: str) -> Stage:
    """The stage `--target name` builds."""
    (found,) = [candidate for candidate in stages if candidate.name == name]
    return found


def lineage(stages: list[Stage], last: Stage) -> list[Stage]:
    """`last` and the stages it is built FROM, first the one FROM an image: what ends up in its file system."""
    names = {candidate.name: candidate for candidate in stages if candidate.name}
    chain = [last]
    while chain[0].base in names:
        chain.insert(0, names[chain[0].base])
    return chain
