"""The configuration reference (docs/configuration.md), rendered from the JSON schema of the `Settings` model that
the exporter validates its file with (exporter/config/json_schema.py), so that the page can neither miss a key the
exporter takes nor list one it refuses.

A field's description is the model's own where it has one; for the fields whose meaning the model keeps in
comments only, NOTES holds it here. Both are checked: a note for a field that no longer exists, or a field with
neither, fails the tests.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from docs_gen.regions import table
from exporter.config.json_schema import config_json_schema
from exporter.config.settings import ENV_PREFIX, Settings

_DEFS = "#/$defs/"

#: Descriptions of the sections and fields the model leaves undescribed, by dotted path (`[]` after a list).
NOTES: dict[str, str] = {
    "log_level": "`--log.level` overrides it; the upper-case names (`WARNING`, ...) still work",
    "log_format": '`logfmt` (`ts=... level=info logger=exporter msg="..."`) or `json` (one object per line); '
    "`--log.format` overrides it",
    "web": "where `serve` listens (`--web.listen-address` overrides host and port)",
    "web.host": "address to listen on; `0.0.0.0` is every IPv4 interface",
    "web.port": "port to listen on",
    "collection": "the background collection cycle; `/metrics` always serves the last complete one",
    "collection.interval_seconds": "one collection cycle every this many seconds",
    "collection.jmx_timeout_seconds": "hard deadline of one broker's gauge read (JMX or metrics endpoint), enforced "
    "by the exporter; unset: 10 s, or the interval when that is shorter",
    "collection.protocol_timeout_seconds": "deadline of each Kafka request and bootstrap (metadata, ApiVersions, "
    "ListConfigResources, DescribeConfigs); unset: 10 s, or the interval when that is shorter",
    "collection.max_versions_per_cluster": "cardinality guard: further name/version pairs of a cluster fold into "
    'client_software_version="other" (their counts kept)',
    "java": "the Java runtime of the JMX queries (the bridge, or a JVM per call)",
    "java.path": "the `java` executable",
    "java.options": "JVM options of the JMX query processes (a short-lived JVM starts faster with the C1-only JIT "
    "and the serial collector)",
    "policy_file": "version policy file extending or overriding the shipped default ([policy](policy.md)); unset: "
    "the default",
    "clusters[]": "the Kafka clusters to watch: one entry per cluster",
    "clusters[].name": "the cluster's name: the `kafka_cluster` label of every series",
    "clusters[].bootstrap_servers": "`host:port` of brokers to bootstrap from: the cluster is then polled over the "
    "Kafka protocol (metadata, ApiVersions, client-metrics subscriptions) and its brokers are discovered",
    "clusters[].security": "how the Kafka-protocol side connects; default PLAINTEXT",
    "clusters[].security.protocol": "the listener's security protocol",
    "clusters[].security.sasl.password": "the SASL password inline (prefer `password_file`)",
    "clusters[].security.sasl.mechanism": "the SASL mechanism",
    "clusters[].security.sasl.username": "the SASL user (PLAIN, SCRAM)",
    "clusters[].security.sasl.token_file": "OAUTHBEARER: file holding the bearer token, re-read for each new "
    "connection (a sidecar or a projected token may refresh it)",
    "clusters[].security.sasl.kerberos_service_name": "GSSAPI: the brokers' Kerberos service name",
    "clusters[].security.sasl.kerberos_domain_name": "GSSAPI: the brokers' Kerberos domain, when not their host's",
    "clusters[].security.tls": "TLS of the Kafka-protocol side (protocol SSL or SASL_SSL)",
    "clusters[].security.tls.key_file": "the client certificate's key (mutual TLS)",
    "clusters[].security.tls.key_password": "the key's password inline (prefer `key_password_file`)",
    "clusters[].security.tls.key_password_file": "file holding the key's password",
    "clusters[].security.tls.crl_file": "certificate revocation list to check the brokers' certificates against",
    "clusters[].security.tls.check_hostname": "the broker certificate must name the host dialled",
    "clusters[].jmx.password": "the JMX password inline (prefer `password_file`); never in logs or `/metrics`",
    "clusters[].jmx.username": "the JMX user (the brokers' `jmxremote.access`)",
    "clusters[].jmx.tls.trust_store_type": "type of `trust_store`",
    "clusters[].jmx.tls.key_store_type": "type of `key_store`",
    "clusters[].prometheus.mapping.software_name_label": "label holding the client software name",
    "clusters[].prometheus.mapping.software_version_label": "label holding the client software version",
    "clusters[].prometheus.mapping.listener_label": "label holding the listener",
    "clusters[].prometheus.mapping.network_processor_label": "label holding the network processor",
    "clusters[].prometheus.mapping.deprecated.request_label": "label holding the request (API) name",
    "clusters[].prometheus.mapping.deprecated.version_label": "label holding the request version",
    "clusters[].prometheus.mapping.deprecated.software_name_label": "label holding the client software name",
    "clusters[].prometheus.mapping.deprecated.software_version_label": "label holding the client software version",
    "clusters[].prometheus.scheme": "scheme of the endpoints built from host and port",
    "clusters[].prometheus.tls": "TLS of `https` endpoints",
    "clusters[].prometheus.tls.key_file": "the client certificate's key (mutual TLS)",
    "clusters[].prometheus.tls.check_hostname": "the endpoint's certificate must name the host dialled",
    "clusters[].prometheus.basic_auth": "HTTP basic auth of the endpoints",
    "clusters[].prometheus.basic_auth.password": "the password inline (prefer `password_file`)",
    "clusters[].prometheus.basic_auth.username": "the user",
    "clusters[].brokers[]": "brokers listed by hand; without it they are discovered from cluster metadata",
    "clusters[].brokers[].id": "the broker's node id: the `broker` label",
    "clusters[].brokers[].jmx_url": "the broker's JMX service URL, e.g. "
    "`service:jmx:rmi:///jndi/rmi://kafka-0.example:9999/jmxrmi`",
    "clusters[].inventory": "who runs each connected version "
    "([inventory](inventory.md#the-exporter-reads-the-inventory))",
}


@dataclass(frozen=True)
class Field:
    key: str
    type: str
    default: str
    description: str


@dataclass(frozen=True)
class Section:
    path: str  # dotted, `[]` after a list; "" for the top level
    description: str
    environment: str
    fields: tuple[Field, ...]


def sections() -> list[Section]:
    """Every section of the configuration, depth first in the model's order."""
    schema = config_json_schema()
    found: list[Section] = []
    _walk(schema, schema["$defs"], "", None, found, Settings)
    return found


def _models(model: type[BaseModel]) -> dict[str, type[BaseModel]]:
    """The section models reachable from ``model`` by the names the schema's definitions carry."""
    found: dict[str, type[BaseModel]] = {}
    pending = [model]
    while pending:
        current = pending.pop()
        for field in current.model_fields.values():
            for candidate in _annotation_models(field.annotation):
                if candidate.__name__ not in found:
                    found[candidate.__name__] = candidate
                    pending.append(candidate)
    return found


def _annotation_models(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for argument in getattr(annotation, "__args__", ()):
        yield from _annotation_models(argument)


def _factory_default(model: type[BaseModel], key: str) -> str | None:
    """A default made by a factory, which the JSON schema leaves out (a list of JVM options, an empty list)."""
    field = model.model_fields.get(key)
    if field is None or field.default_factory is None:
        return None
    value = field.get_default(call_default_factory=True)
    return None if value is PydanticUndefined else f"`{json.dumps(value)}`"


def _walk(
    node: dict[str, Any],
    defs: dict[str, Any],
    path: str,
    in_list: str | None,
    out: list[Section],
    model: type[BaseModel],
) -> None:
    models = _models(Settings)
    rows: list[Field] = []
    nested: list[tuple[str, str, str | None]] = []
    required = set(node.get("required", []))
    for key, spec in node.get("properties", {}).items():
        child = f"{path}.{key}" if path else key
        reference, is_list = _reference(spec)
        if reference is not None:
            child_path = child + ("[]" if is_list else "")
            nested.append((child_path, reference, in_list or (child_path if is_list else None)))
            continue
        default = "required" if key in required else (_factory_default(model, key) or _default(spec))
        rows.append(Field(key=f"`{key}`", type=_type(spec), default=default, description=_description(child, spec)))
    if rows:
        out.append(Section(path, _section_description(path, node), _environment(path, in_list), tuple(rows)))
    for child_path, reference, child_list in nested:
        _walk(defs[reference], defs, child_path, child_list, out, models[reference])


def _reference(spec: dict[str, Any]) -> tuple[str | None, bool]:
    """The definition a property holds (a section, or a list of them), and whether it is a list."""
    for option in [spec, *spec.get("anyOf", [])]:
        if "$ref" in option:
            return option["$ref"].removeprefix(_DEFS), False
        if "$ref" in option.get("items", {}):
            return option["items"]["$ref"].removeprefix(_DEFS), True
    return None, False


def _description(path: str, spec: dict[str, Any]) -> str:
    own = spec.get("description")
    if own is None:
        own = NOTES.get(path, "")
    return own


def _section_description(path: str, node: dict[str, Any]) -> str:
    note = NOTES.get(path)
    own = " ".join(node.get("description", "").split())
    if note and own:
        return f"{note}. {own}"
    return note or own


def _environment(path: str, in_list: str | None) -> str:
    if in_list is not None:
        variable = ENV_PREFIX + in_list.split("[]")[0].replace(".", "__").upper()
        return f"only as part of `{variable}` (the whole list, JSON)"
    if not path:
        return f"`{ENV_PREFIX}<KEY>`, e.g. `{ENV_PREFIX}LOG_LEVEL=debug`"
    return f"`{ENV_PREFIX}{path.replace('.', '__').upper()}__<KEY>`"


def _type(spec: dict[str, Any]) -> str:
    options = [option for option in spec.get("anyOf", [spec]) if option.get("type") != "null"]
    return " or ".join(_one_type(option) for option in options)


def _one_type(spec: dict[str, Any]) -> str:
    if "enum" in spec:
        return "one of " + ", ".join(f"`{value}`" for value in spec["enum"])
    kind = spec.get("type", "any")
    if kind == "array":
        return f"list of {_one_type(spec.get('items', {}))}"
    if spec.get("format") == "path":
        return "path"
    if spec.get("format") == "password" or spec.get("writeOnly"):
        return "string (secret)"
    return kind + "".join(_bounds(spec))


def _bounds(spec: dict[str, Any]) -> Iterator[str]:
    if "minimum" in spec and "maximum" in spec:
        yield f", {_number(spec['minimum'])} to {_number(spec['maximum'])}"
    else:
        limits = (("exclusiveMinimum", ">"), ("minimum", "≥"), ("exclusiveMaximum", "<"), ("maximum", "≤"))
        found = [f"{sign} {_number(spec[keyword])}" for keyword, sign in limits if keyword in spec]
        if found:
            yield ", " + " and ".join(found)
    if "minLength" in spec:
        yield f", at least {spec['minLength']} character" + ("s" if spec["minLength"] > 1 else "")
    if "pattern" in spec:
        yield f" matching `{spec['pattern']}`"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _default(spec: dict[str, Any]) -> str:
    if "default" not in spec or spec["default"] is None:
        return "unset"
    value = spec["default"]
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float):
        return f"`{_number(value)}`"
    if isinstance(value, str):
        return f"`{value}`"
    return f"`{json.dumps(value)}`"


def render() -> str:
    parts: list[str] = []
    for section in sections():
        parts.append(f"### `{section.path}`" if section.path else "### Top level")
        parts.append("")
        if section.description:
            parts.append(section.description[0].upper() + section.description[1:].rstrip(".") + ".")
            parts.append("")
        parts.append(f"Environment: {section.environment}.")
        parts.append("")
        parts.append(
            table(
                ("key", "type", "default", "meaning"),
                [(f.key, f.type, f.default, f.description) for f in section.fields],
            )
        )
        parts.append("")
    return "\n".join(parts)


def described_paths() -> tuple[set[str], set[str]]:
    """(every section and field path of the model, those without a description from the model or NOTES)."""
    every: set[str] = set()
    bare: set[str] = set()
    for section in sections():
        if section.path:
            every.add(section.path)
            if not section.description:
                bare.add(section.path)
        for field in section.fields:
            path = f"{section.path}.{field.key.strip('`')}" if section.path else field.key.strip("`")
            every.add(path)
            if not field.description:
                bare.add(path)
    return every, bare
