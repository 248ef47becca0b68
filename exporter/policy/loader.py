"""Loading the shipped default policy and a user's file that extends or overrides it."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from pydantic import ValidationError

from exporter.config.schema import ErrorFormat, format_validation_error
from exporter.config.yaml_file import parse_mapping, read_text
from exporter.policy.evaluation import CompiledRule, Policy
from exporter.policy.model import PolicyFile
from exporter.policy.versions import parse_version

__all__ = ["DEFAULT_POLICY_RESOURCE", "PolicyError", "default_policy_text", "load_policy"]

DEFAULT_POLICY_RESOURCE = "default_policy.yaml"
_ERRORS = ErrorFormat(root=PolicyFile)


class PolicyError(Exception):
    """An invalid policy file, phrased for the operator: the file, the field, the value and what is allowed."""


def default_policy_text() -> str:
    """The shipped default policy, as YAML with its source comments."""
    return resources.files("exporter.policy").joinpath(DEFAULT_POLICY_RESOURCE).read_text(encoding="utf-8")


def load_policy(path: Path | None) -> Policy:
    """The shipped default policy (`path` None), or the default extended/overridden by the file at `path`."""
    default = _parse(default_policy_text(), f"shipped default policy {DEFAULT_POLICY_RESOURCE}")
    if path is None:
        return _compile(default)
    user = _parse(read_text(path, "policy file", PolicyError), f"policy file {path}")
    return _compile(_merge(default, user))


def _parse(text: str, origin: str) -> PolicyFile:
    allowed = ", ".join(sorted(PolicyFile.model_fields))
    document = parse_mapping(text, origin, PolicyError, f"a mapping (allowed keys: {allowed})")
    try:
        return PolicyFile.model_validate(document)
    except ValidationError as exc:
        raise PolicyError(format_validation_error(exc, origin, _ERRORS)) from None


def _merge(default: PolicyFile, user: PolicyFile) -> PolicyFile:
    """User entries replace the default's fields they set; fields they leave out keep the default's value."""
    if not user.extend_default:
        return user
    software = dict(default.software)
    for name, rule in user.software.items():
        base = software.get(name)
        if base is None:
            software[name] = rule
        else:
            software[name] = base.model_copy(update={field: getattr(rule, field) for field in rule.model_fields_set})
    allowed = user.allowed_software if "allowed_software" in user.model_fields_set else default.allowed_software
    return PolicyFile(extend_default=True, allowed_software=allowed, software=software)


def _compile(policy: PolicyFile) -> Policy:
    rules: dict[str, CompiledRule] = {}
    for name, rule in policy.software.items():
        # The model validators already proved every version parses.
        minimum = parse_version(rule.minimum_version) if rule.minimum_version is not None else None
        rules[name] = CompiledRule(minimum=minimum, denied=rule.specifiers())
    allowed = frozenset(policy.allowed_software) if policy.allowed_software is not None else None
    return Policy(rules, allowed)
