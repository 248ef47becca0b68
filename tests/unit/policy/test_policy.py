"""The shipped default policy, user files that extend or override it, and invalid files."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.policy import REASONS, PolicyError, Violation, default_policy_text, load_policy


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    return path


def reason(violation: Violation | None) -> str | None:
    return None if violation is None else violation.reason


@pytest.mark.parametrize(
    ("name", "version", "expected"),
    [
        ("apache-kafka-java", "3.9.0", None),
        ("apache-kafka-java", "2.0.1", "below_minimum"),
        ("apache-kafka-java", "2.1.0", None),
        ("apache-kafka-java", "7.5.0-ccs", None),
        ("librdkafka", "1.5.0", "below_minimum"),
        ("librdkafka", "1.8.2", None),
        ("librdkafka", "2.0.2", None),
        ("confluent-kafka-python", "2.16.1-rdkafka-2.16.0", None),
        ("confluent-kafka-python", "1.7.0-rdkafka-1.7.0", "below_minimum"),
        ("confluent-kafka-go", "1.6.1", "below_minimum"),
        ("confluent-kafka-dotnet", "2.3.0", None),
        ("kafka-python", "2.0.1", "below_minimum"),
        ("kafka-python", "3.0.12", None),
        ("sarama", "v0.0.1", None),
        ("kgo", "v1.18.0", None),
        ("some-inhouse-client", "0.0.1", None),
        ("unknown", "unknown", "unknown_software"),
    ],
)
def test_shipped_default_applies_the_kip_896_floors(name: str, version: str, expected: str | None) -> None:
    assert reason(load_policy(None).evaluate(name, version)) == expected


def test_default_details_name_the_floor_and_the_embedded_library() -> None:
    policy = load_policy(None)
    assert policy.evaluate("librdkafka", "1.5.0") == Violation(
        "below_minimum", "librdkafka 1.5.0 is below the librdkafka minimum 1.8.2"
    )
    assert policy.evaluate("confluent-kafka-python", "1.5.0-rdkafka-1.5.0") == Violation(
        "below_minimum",
        "confluent-kafka-python 1.5.0-rdkafka-1.5.0 embeds librdkafka 1.5.0, which is below the librdkafka"
        " minimum 1.8.2",
    )


def test_shipped_default_text_cites_a_source_beside_each_entry() -> None:
    text = default_policy_text()
    for name in load_policy(None).rules:
        # The comment block right above each entry names where the name was found.
        block = text.split(f"\n  {name}:")[0].rsplit("\n\n", 1)[-1]
        assert "Name:" in block or "franz-go" in block, name


def test_unparseable_versions_get_no_version_verdict_and_are_flagged() -> None:
    policy = load_policy(None)
    for name, version in [("kafka-python", "unknown"), ("librdkafka", "dev"), ("apache-kafka-java", "(devel)")]:
        check = policy.check(name, version)
        assert check.violation is None
        assert check.unparseable
    # No rule for the name: nothing needed judging.
    assert not policy.check("kgo", "unknown").unparseable
    assert not policy.check("unknown", "unknown").unparseable
    # The wrapper's own version does not parse, the embedded librdkafka does and is judged.
    check = policy.check("confluent-kafka-python", "dev-rdkafka-1.5.0")
    assert reason(check.violation) == "below_minimum"
    assert not check.unparseable
    check = policy.check("confluent-kafka-python", "2.3.0-rdkafka-custom")
    assert check.violation is None and check.unparseable


def test_user_file_overrides_a_minimum_and_keeps_the_other_defaults(tmp_path: Path) -> None:
    policy = load_policy(write(tmp_path, "software:\n  apache-kafka-java:\n    minimum_version: '3.0'\n"))
    assert reason(policy.evaluate("apache-kafka-java", "2.8.1")) == "below_minimum"
    assert policy.evaluate("apache-kafka-java", "3.0.0") is None
    assert reason(policy.evaluate("librdkafka", "1.5.0")) == "below_minimum"


def test_user_file_adds_names_and_denied_ranges(tmp_path: Path) -> None:
    policy = load_policy(
        write(
            tmp_path,
            """
software:
  librdkafka:
    denied_versions: ["2.0.2", ">=2.1.0,<2.1.2"]
  my-client:
    minimum_version: 1.4.0
    denied_versions: [1.5.0]
""",
        )
    )
    assert policy.evaluate("librdkafka", "2.0.2") == Violation(
        "denied_version", "librdkafka 2.0.2 is denied by the policy entry '2.0.2'"
    )
    assert reason(policy.evaluate("librdkafka", "2.1.1")) == "denied_version"
    assert policy.evaluate("librdkafka", "2.1.2") is None
    # The override of denied_versions kept the default minimum.
    assert reason(policy.evaluate("librdkafka", "1.8.1")) == "below_minimum"
    # Denials reach the librdkafka embedded in a wrapper's version.
    assert reason(policy.evaluate("confluent-kafka-python", "2.1.1-rdkafka-2.1.1")) == "denied_version"
    assert reason(policy.evaluate("my-client", "1.3.9")) == "below_minimum"
    assert reason(policy.evaluate("my-client", "1.5.0")) == "denied_version"
    assert policy.evaluate("my-client", "1.5.1") is None


def test_a_denial_wins_over_a_floor(tmp_path: Path) -> None:
    policy = load_policy(write(tmp_path, "software:\n  librdkafka:\n    denied_versions: ['<1.0']\n"))
    assert reason(policy.evaluate("librdkafka", "0.11.6")) == "denied_version"


def test_minimum_can_be_removed_with_null(tmp_path: Path) -> None:
    policy = load_policy(write(tmp_path, "software:\n  librdkafka:\n    minimum_version: null\n"))
    assert policy.evaluate("librdkafka", "1.5.0") is None
    assert policy.evaluate("confluent-kafka-python", "1.5.0-rdkafka-1.5.0") is None


def test_allow_list(tmp_path: Path) -> None:
    policy = load_policy(write(tmp_path, "allowed_software: [apache-kafka-java, librdkafka]\n"))
    assert policy.evaluate("kafka-python", "3.0.12") == Violation(
        "not_allowed", "kafka-python is not in the allowed software list (apache-kafka-java, librdkafka)"
    )
    assert policy.evaluate("apache-kafka-java", "3.9.0") is None
    assert reason(policy.evaluate("librdkafka", "1.5.0")) == "below_minimum"
    # unknown is its own verdict even with an allow-list.
    assert reason(policy.evaluate("unknown", "unknown")) == "unknown_software"
    assert policy.allowed_software == frozenset({"apache-kafka-java", "librdkafka"})


def test_extend_default_false_starts_from_an_empty_policy(tmp_path: Path) -> None:
    policy = load_policy(write(tmp_path, "extend_default: false\nsoftware:\n  kgo: {minimum_version: 1.10.0}\n"))
    assert set(policy.rules) == {"kgo"}
    assert policy.evaluate("librdkafka", "0.9.0") is None
    assert reason(policy.evaluate("kgo", "v1.9.0")) == "below_minimum"


def test_empty_user_file_is_the_default(tmp_path: Path) -> None:
    assert load_policy(write(tmp_path, "")).rules == load_policy(None).rules


def test_reasons_are_the_label_values_of_the_contract() -> None:
    assert set(REASONS) == {"below_minimum", "denied_version", "unknown_software", "not_allowed"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "software:\n  librdkafka:\n    minimum_version: latest\n",
            "  software.librdkafka.minimum_version: 'latest' is not a version; expected digits separated by dots like"
            " 1.8.2, optionally with a pre-release marker like 4.0.0-rc1 or 1.0.0-SNAPSHOT (got 'latest')",
        ),
        (
            "software:\n  librdkafka:\n    denied_versions: ['>=1.x']\n",
            "  software.librdkafka.denied_versions: in '>=1.x': '1.x' is not a version; expected digits separated by"
            " dots like 1.8.2, optionally with a pre-release marker like 4.0.0-rc1 or 1.0.0-SNAPSHOT",
        ),
        (
            "software:\n  librdkafka:\n    minimum: 1.0.0\n",
            "  software.librdkafka.minimum: unknown field; allowed: denied_versions, minimum_version",
        ),
        (
            "softwares: {}\n",
            "  softwares: unknown field; allowed: allowed_software, extend_default, software",
        ),
        (
            "allowed_software: []\n",
            "  allowed_software: an empty allow-list would flag every client; leave allowed_software out to allow any",
        ),
        (
            "allowed_software: ['my client']\n",
            "  allowed_software: 'my client' can never be sent by a client: Kafka accepts only letters, digits, '.'"
            " and '-', starting and ending with a letter or digit",
        ),
        (
            "software:\n  unknown: {minimum_version: '1.0'}\n",
            "  software: 'unknown' is what Kafka records for clients that sent no software name; such connections"
            " are always reported with reason unknown_software and cannot be listed here",
        ),
        (
            "software:\n  librdkafka:\n    minimum_version: 1.10\n",
            "  software.librdkafka.minimum_version: write versions as quoted strings: YAML read this one as the"
            " number 1.1 (got 1.1)",
        ),
        (
            "software:\n  librdkafka:\n    denied_versions: [2.0]\n",
            "  software.librdkafka.denied_versions: write versions as quoted strings: YAML read this one as the"
            " number 2.0",
        ),
        (
            "extend_default: maybe\n",
            "  extend_default: Input should be a valid boolean, unable to interpret input (got 'maybe')",
        ),
    ],
)
def test_invalid_files_give_one_precise_line_per_problem(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    assert str(caught.value) == f"policy file {path} is invalid:\n{expected}"


def test_file_level_problems(tmp_path: Path) -> None:
    missing = tmp_path / "absent.yaml"
    with pytest.raises(PolicyError, match=f"^policy file {missing} does not exist$"):
        load_policy(missing)
    broken = write(tmp_path, "software: [\n")
    with pytest.raises(PolicyError, match=r"is not valid YAML at line 2, column 1: "):
        load_policy(broken)
    listed = write(tmp_path, "- librdkafka\n")
    with pytest.raises(PolicyError) as caught:
        load_policy(listed)
    assert str(caught.value) == (
        f"policy file {listed} must hold a mapping (allowed keys: allowed_software, extend_default, software), "
        "not a list"
    )
