"""Client version policy: which client software versions are outdated, denied, unidentifiable or not allowed.

    from exporter.policy import load_policy
    policy = load_policy(None)                     # the shipped default (KIP-896 floors)
    policy = load_policy(Path("policy.yaml"))      # the default extended/overridden by a user file
    policy.evaluate("librdkafka", "1.5.0")         # Violation(reason="below_minimum", detail=...)
    policy.check("sarama", "dev").unparseable      # whether a version rule could not be applied

Format of policy files: docs/policy.md.
"""

from exporter.policy.evaluation import REASONS, CompiledRule, Policy, PolicyCheck, Violation
from exporter.policy.loader import PolicyError, default_policy_text, load_policy
from exporter.policy.versions import ClientVersion, parse_version

__all__ = [
    "REASONS",
    "ClientVersion",
    "CompiledRule",
    "Policy",
    "PolicyCheck",
    "PolicyError",
    "Violation",
    "default_policy_text",
    "load_policy",
    "parse_version",
]
