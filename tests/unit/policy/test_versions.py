"""Parsing and ordering of the version strings real clients send."""

from __future__ import annotations

import pytest

from exporter.policy.versions import embedded_librdkafka_text, parse_specifier, parse_version


@pytest.mark.parametrize(
    ("text", "release", "pre_release"),
    [
        ("3.9.0", (3, 9, 0), False),
        ("7.5.0-ccs", (7, 5, 0), False),
        ("2.16.1-rdkafka-2.16.0", (2, 16, 1), False),
        ("1.0.0-SNAPSHOT", (1, 0, 0), True),
        ("v1.43.2", (1, 43, 2), False),
        ("2.0", (2, 0), False),
        ("4.1.0-rc2", (4, 1, 0), True),
        ("1.9.0.1", (1, 9, 0, 1), False),
    ],
)
def test_real_world_versions_parse(text: str, release: tuple[int, ...], pre_release: bool) -> None:
    version = parse_version(text)
    assert version is not None
    assert version.release == release
    assert (version.pre_release is not None) is pre_release
    assert str(version) == text


@pytest.mark.parametrize("text", ["unknown", "", "dev", "(devel)", "latest", "v", "1.2.3 beta", "1.2/3"])
def test_what_is_not_a_version_is_unparseable(text: str) -> None:
    assert parse_version(text) is None


@pytest.mark.parametrize(
    ("lower", "higher"),
    [
        ("1.8.1", "1.8.2"),
        ("1.9.0", "1.10.0"),
        ("2.0.2", "2.1"),
        ("1.0.0-SNAPSHOT", "1.0.0"),
        ("4.1.0-rc1", "4.1.0-rc2"),
        ("4.1.0-alpha", "4.1.0-beta"),
        ("3.9.9", "4.0.0-SNAPSHOT"),
        ("v1.29.0", "1.30.1"),
    ],
)
def test_ordering(lower: str, higher: str) -> None:
    low, high = parse_version(lower), parse_version(higher)
    assert low is not None and high is not None
    assert low < high
    assert high > low
    assert low != high


@pytest.mark.parametrize(("left", "right"), [("2.1", "2.1.0"), ("7.5.0-ccs", "7.5.0"), ("v1.30.1", "1.30.1")])
def test_build_flavours_and_trailing_zeros_are_the_same_release(left: str, right: str) -> None:
    assert parse_version(left) == parse_version(right)
    assert hash(parse_version(left)) == hash(parse_version(right))


def test_embedded_librdkafka_is_the_part_after_the_separator() -> None:
    assert embedded_librdkafka_text("2.16.1-rdkafka-2.16.0") == "2.16.0"
    assert embedded_librdkafka_text("dev-rdkafka-1.5.0") == "1.5.0"
    assert embedded_librdkafka_text("2.16.0") is None


@pytest.mark.parametrize(
    ("specifier", "inside", "outside"),
    [
        ("1.9.0", ["1.9.0", "1.9", "1.9.0-ccs"], ["1.9.1", "1.9.0-SNAPSHOT"]),
        (">=1.9.0,<1.9.2", ["1.9.0", "1.9.1"], ["1.8.9", "1.9.2", "1.9.0-rc1"]),
        ("!=2.0.0", ["2.0.1"], ["2.0.0"]),
        ("<= 1.5.0", ["1.5.0", "1.0"], ["1.5.1"]),
    ],
)
def test_specifiers(specifier: str, inside: list[str], outside: list[str]) -> None:
    parsed = parse_specifier(specifier)
    for text in inside:
        version = parse_version(text)
        assert version is not None and parsed.matches(version), text
    for text in outside:
        version = parse_version(text)
        assert version is not None and not parsed.matches(version), text


@pytest.mark.parametrize(
    ("specifier", "message"),
    [
        (">=x", "in '>=x': 'x' is not a version; expected digits separated by dots like 1.8.2"),
        ("~=1.0", "in '~=1.0': '~=1.0' is not a version"),
        (">=1.0,", "'' in '>=1.0,' is not a version or a comparison"),
        ("<7.5.0-ccs", "in '<7.5.0-ccs': '7.5.0-ccs' is not a version"),
    ],
)
def test_bad_specifiers_say_what_is_wrong(specifier: str, message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        parse_specifier(specifier)
