"""The shared validation-error formatter, on a small schema with every kind of nesting the real files use."""

from __future__ import annotations

import pytest
from pydantic import SecretStr, ValidationError

from exporter.config.schema import ErrorFormat, StrictModel, allowed_keys, format_validation_error


class Leaf(StrictModel):
    zeta: int = 0
    alpha: SecretStr | None = None


class Root(StrictModel):
    name: str
    count: int = 0
    items: list[Leaf] = []
    by_name: dict[str, Leaf] = {}
    maybe: Leaf | None = None
    versions: tuple[str, ...] = ()


def errors_of(document: dict, how: ErrorFormat) -> str:
    with pytest.raises(ValidationError) as caught:
        Root.model_validate(document)
    return format_validation_error(caught.value, "test file t.yaml", how)


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        ((), ["name", "count", "items", "by_name", "maybe", "versions"]),
        (("items", 3), ["zeta", "alpha"]),
        (("by_name", "x"), ["zeta", "alpha"]),
        (("maybe",), ["zeta", "alpha"]),
        (("count",), []),
        (("versions", 0), []),
        (("nowhere", "x"), []),
    ],
)
def test_allowed_keys_walk_models_lists_dicts_and_optionals(location: tuple, expected: list[str]) -> None:
    assert allowed_keys(Root, location) == expected


def test_one_line_per_problem_with_the_value_unless_absent_a_block_or_secret() -> None:
    document = {"count": "many", "items": [{"zeta": "z", "alpha": 5, "beta": 1}], "by_name": {"a": 7}, "extra": 1}
    how = ErrorFormat(root=Root, secret_words=("alpha",), hint="Last line.")
    assert errors_of(document, how) == "\n".join(
        [
            "test file t.yaml is invalid:",
            "  name: required field is missing",
            "  count: Input should be a valid integer, unable to parse string as an integer (got 'many')",
            "  items.0.zeta: Input should be a valid integer, unable to parse string as an integer (got 'z')",
            "  items.0.alpha: Input should be a valid string",
            "  items.0.beta: unknown field; allowed: alpha, zeta",
            "  by_name.a: Input should be a valid dictionary or instance of Leaf (got 7)",
            "  extra: unknown field; allowed: by_name, count, items, maybe, name, versions",
            "Last line.",
        ]
    )


def test_wording_order_and_unsupported_keys_are_the_callers() -> None:
    how = ErrorFormat(
        root=Root, unknown="unknown key", sort_allowed=False, unsupported={("maybe", "gamma"): "no gamma here"}
    )
    message = errors_of({"name": "n", "maybe": {"gamma": 1, "delta": 2}}, how)
    assert message.splitlines()[1:] == [
        "  maybe.gamma: not supported by kafka-client-exporter: no gamma here",
        "  maybe.delta: unknown key; allowed: zeta, alpha",
    ]
