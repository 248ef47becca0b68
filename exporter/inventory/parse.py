"""Request-log lines -> one typed row per line, with JVM-native expressions only (no Python UDFs).

Both formats are read in one pass: the 2.8+ JSON form through ``from_json`` with an explicit schema (only the
fields the inventory needs; Jackson skips the rest), the 2.x text form through ``regexp_extract`` with the
patterns in ``log_format``. Every line gets either its fields or a ``reason`` saying why it was not usable.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from exporter.inventory import log_format as lf
from exporter.inventory.api_catalog import api_keys_by_enum_name

_STR = T.StringType()
_INT = T.IntegerType()


def _fields(*names: str, kind: T.DataType = _STR) -> list[T.StructField]:
    return [T.StructField(name, kind) for name in names]


#: A JSON line is parsed without its bodies, so a typical line (a Fetch or Produce with large bodies) costs one
#: small from_json: the head up to ``,"request":`` joined to the tail from the last ``,"connection":`` (keys are
#: written in a fixed order, and a raw ``"`` cannot occur inside a JSON string, so both cuts are structural).
#: Only ApiVersions, JoinGroup and SyncGroup lines, whose bodies the inventory reads, are parsed whole.
JSON_HEAD_SCHEMA = T.StructType(
    [
        T.StructField(
            "requestHeader",
            T.StructType(
                [*_fields("requestApiKey", "requestApiVersion", kind=_INT), *_fields("clientId", "requestApiKeyName")]
            ),
        )
    ]
)
JSON_FRAME_SCHEMA = T.StructType(
    [
        *JSON_HEAD_SCHEMA.fields,
        *_fields("connection", "principal", "listener"),
        T.StructField("clientInformation", T.StructType(_fields("softwareName", "softwareVersion"))),
    ]
)
#: ``request``/``response`` are ``""`` when not captured: from_json then leaves that field null.
JSON_BODY_SCHEMA = T.StructType(
    [
        T.StructField(
            "request",
            T.StructType(
                [
                    *_fields("clientSoftwareName", "clientSoftwareVersion", "groupId", "protocolType", "protocolName"),
                    T.StructField("protocols", T.ArrayType(T.StructType(_fields("name")))),
                ]
            ),
        ),
        T.StructField(
            "response", T.StructType([*_fields("errorCode", kind=_INT), *_fields("protocolType", "protocolName")])
        ),
    ]
)
BODY_KEYS = (lf.API_VERSIONS_KEY, *lf.GROUP_KEYS)

#: The software struct compared per connection (highest wins): priority, then name, then version.
SOFTWARE_TYPE = T.StructType([T.StructField("priority", _INT), *_fields("name", "version")])


def read_lines(spark: SparkSession, inputs: Sequence[str]) -> DataFrame:
    """``line`` and ``file`` of every ``kafka-request.log*`` file under the inputs (files, directories, globs;
    any Hadoop file system; ``.gz`` decompressed by extension)."""
    return (
        spark.read.option("recursiveFileLookup", "true")
        .option("pathGlobFilter", lf.FILE_GLOB)
        .text(list(inputs))
        .select(F.col("value").alias("line"), F.col("_metadata.file_path").alias("file"))
    )


def _known(value: Column) -> Column:
    # The broker records an empty or missing name/version as "unknown".
    return F.coalesce(F.nullif(value, F.lit("")), F.lit(lf.UNKNOWN))


def _blank_to_null(value: Column) -> Column:
    return F.nullif(value, F.lit(""))


def _json_payload(line: Column) -> Column:
    start = F.instr(line, lf.COMPLETED) + len(lf.COMPLETED)
    rest = F.length(line) - start + 1
    return F.when(line.endswith(lf.LOGGER_SUFFIX), line.substr(start, rest - len(lf.LOGGER_SUFFIX))).otherwise(
        line.substr(start, rest)
    )


def _api_key_map() -> Column:
    pairs = [item for name, key in sorted(api_keys_by_enum_name().items()) for item in (F.lit(name), F.lit(key))]
    return F.create_map(*pairs)


def parse_lines(lines: DataFrame) -> DataFrame:
    """Columns: reason (null when usable), line, file, ts, api_key, api_version, client_id, connection,
    principal, listener, software (SOFTWARE_TYPE), group_id, protocol_type, protocol_name, offered_protocols.

    Built in projections that each compute an expensive value once (from_json, regexes, the reason) and refer
    to it by column afterwards, so the optimizer does not inline it into every consumer.
    """
    line = F.col("line")
    is_json = F.instr(line, lf.JSON_MARKER) > 0
    is_text = ~is_json & (F.instr(line, lf.TEXT_MARKER) > 0)
    payload = _json_payload(line)
    # JSON: the head (requestHeader) and the tail (from the last "connection" key on) as one small object. Cut
    # from the line itself: character-indexed substr over a whole line is what costs here. from_json stops at
    # the end of the object, so the " (kafka.request.logger)" after it is never read.
    json_frame = F.concat(
        F.substring_index(F.substring_index(line, ',"request":', 1), lf.COMPLETED, -1),
        F.lit(',"connection":'),
        F.substring_index(line, ',"connection":', -1),
    )
    # Text: one regex run rewrites the line into its fields; an unmatched line comes back without the marker.
    replacement = lf.TEXT_MATCHED + lf.TEXT_SEPARATOR.join(f"${i}" for i in range(1, lf.TEXT_FIELDS + 1))
    rewritten = F.regexp_replace(line, lf.TEXT_LINE, replacement)

    first = lines.select(
        "line",
        "file",
        is_json.alias("is_json"),
        is_text.alias("is_text"),
        F.regexp_extract(line, lf.TIMESTAMP, 1).alias("ts"),
        F.from_json(F.when(is_json, json_frame), JSON_FRAME_SCHEMA).alias("j"),
        F.when(is_text, rewritten).alias("t"),
    )
    t = F.col("t")
    t_fields = F.when(t.startswith(lf.TEXT_MATCHED), F.split(F.substr(t, F.lit(2)), lf.TEXT_SEPARATOR))
    second = first.select("*", t_fields.alias("t_fields"))

    def field(index: int) -> Column:
        return F.try_element_at(F.col("t_fields"), F.lit(index))

    stage = second.select(
        "line",
        "file",
        "is_json",
        "is_text",
        "ts",
        "j",
        F.coalesce(field(1), F.lit("")).alias("t_api"),
        field(2).alias("t_version"),
        field(3).alias("t_client_id"),
        F.coalesce(field(4), F.lit("")).alias("t_connection"),
        field(5).alias("t_principal"),
        field(6).alias("t_listener"),
        field(7).alias("t_info_name"),
        field(8).alias("t_info_version"),
    )
    is_j, is_t = F.col("is_json"), F.col("is_text")
    j = F.col("j")
    keyed = stage.select(
        "*",
        F.when(is_j, j.requestHeader.requestApiKey)
        .otherwise(F.try_element_at(_api_key_map(), F.col("t_api")))
        .alias("api_key"),
    )
    api_key = F.col("api_key")
    needs_body = is_j & api_key.isin(*BODY_KEYS)
    json_ok = j.requestHeader.requestApiKey.isNotNull() & j.requestHeader.requestApiVersion.isNotNull()
    json_ok = json_ok & j.connection.isNotNull() & (~needs_body | F.col("jb").isNotNull())
    t_matched = (F.col("t_api") != "") & (F.col("t_connection") != "")
    reason = (
        F.when(~is_j & ~is_t, F.lit(lf.REASON_NOT_REQUEST_LINE))
        .when(F.col("ts") == "", F.lit(lf.REASON_NO_TIMESTAMP))
        .when(is_j & ~json_ok, F.lit(lf.REASON_BAD_JSON))
        .when(is_t & ~t_matched, F.lit(lf.REASON_BAD_TEXT))
        .when(is_t & api_key.isNull(), F.lit(lf.REASON_UNKNOWN_API))
    )
    with_body = keyed.select("*", F.from_json(F.when(needs_body, payload), JSON_BODY_SCHEMA).alias("jb"))
    judged = with_body.select("*", reason.alias("reason"))
    return judged.select(
        "reason",
        "line",
        "file",
        *_usable_columns(F.col("reason").isNull()),
    )


def _usable_columns(usable: Column) -> list[Column]:
    line, api_key = F.col("line"), F.col("api_key")
    is_j = F.col("is_json")
    j, jb = F.col("j"), F.col("jb")
    is_api_versions = api_key == lf.API_VERSIONS_KEY
    is_group = api_key.isin(*lf.GROUP_KEYS)

    def text_when(condition: Column, pattern: str, group: int = 1) -> Column:
        return F.when(condition, F.regexp_extract(line, pattern, group))

    body_name = F.when(is_j, jb.request.clientSoftwareName).otherwise(
        text_when(is_api_versions, lf.TEXT_API_VERSIONS_REQUEST)
    )
    body_version = F.when(is_j, jb.request.clientSoftwareVersion).otherwise(
        text_when(is_api_versions, lf.TEXT_API_VERSIONS_REQUEST, 2)
    )
    accepted = F.when(is_j, jb.response.errorCode == 0).otherwise(
        text_when(is_api_versions, lf.TEXT_RESPONSE_ERROR_CODE) == "0"
    )
    info_name = _known(F.when(is_j, j.clientInformation.softwareName).otherwise(F.col("t_info_name")))
    info_version = _known(F.when(is_j, j.clientInformation.softwareVersion).otherwise(F.col("t_info_version")))
    software = (
        F.when(
            is_api_versions & accepted & (F.length(body_name) > 0),
            F.struct(F.lit(lf.PRIORITY_API_VERSIONS_BODY), body_name, _known(body_version)),
        )
        .when(
            (info_name != lf.UNKNOWN) | (info_version != lf.UNKNOWN),
            F.struct(F.lit(lf.PRIORITY_CLIENT_INFORMATION), info_name, info_version),
        )
        .otherwise(F.struct(F.lit(lf.PRIORITY_UNKNOWN), F.lit(lf.UNKNOWN), F.lit(lf.UNKNOWN)))
        .cast(SOFTWARE_TYPE)
    )

    group_id = F.when(is_j, jb.request.groupId).otherwise(text_when(is_group, lf.TEXT_GROUP_ID))
    protocol_type = F.when(is_j, F.coalesce(jb.request.protocolType, jb.response.protocolType)).otherwise(
        text_when(is_group, lf.TEXT_PROTOCOL_TYPE)
    )
    protocol_name = F.when(
        is_j, F.coalesce(_blank_to_null(jb.request.protocolName), _blank_to_null(jb.response.protocolName))
    ).otherwise(
        F.coalesce(
            _blank_to_null(text_when(is_group, lf.TEXT_REQUEST_PROTOCOL_NAME)),
            _blank_to_null(text_when(is_group, lf.TEXT_RESPONSE_PROTOCOL_NAME)),
        )
    )
    offered = F.when(is_j, F.array_join(jb.request.protocols.getField("name"), ",")).otherwise(
        F.when(is_group, F.array_join(F.regexp_extract_all(line, F.lit(lf.TEXT_OFFERED_PROTOCOL), F.lit(1)), ","))
    )
    client_id = F.when(is_j, j.requestHeader.clientId).otherwise(
        F.when(F.col("t_client_id") != "null", F.col("t_client_id"))
    )
    api_version = F.when(is_j, j.requestHeader.requestApiVersion).otherwise(F.col("t_version").try_cast(_INT))

    def only_groups(value: Column) -> Column:
        return F.when(is_group, _blank_to_null(value))

    columns = {
        "ts": F.col("ts"),
        "api_key": api_key,
        "api_version": api_version,
        "client_id": client_id,
        "connection": F.when(is_j, j.connection).otherwise(F.col("t_connection")),
        "principal": F.when(is_j, j.principal).otherwise(F.col("t_principal")),
        "listener": F.when(is_j, j.listener).otherwise(F.col("t_listener")),
        "software": software,
        "group_id": only_groups(group_id),
        "protocol_type": only_groups(protocol_type),
        "protocol_name": only_groups(protocol_name),
        "offered_protocols": only_groups(offered),
    }
    return [F.when(usable, value).alias(name) for name, value in columns.items()]
