"""Request-log lines -> one typed row per line, with JVM-native expressions only (no Python UDFs).

Both formats are read in one pass: the 2.8+ JSON form through ``from_json`` with an explicit schema (only the
fields the inventory needs; Jackson skips the rest), the 1.0-2.7 text form through ``regexp_extract`` with the
patterns in ``log_format``. Every line gets either its fields or a ``reason`` saying why it was not usable (a line of
a broker before 1.0 is told apart by its form, ``log_format.REASON_OLDER_FORM``).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from exporter.kafka_releases.table import api_keys_by_enum_name
from exporter.request_logs import log_format as lf

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


def no_lines(spark: SparkSession) -> DataFrame:
    """``read_lines``' columns without a row (a run with no request log to read), made in the JVM."""
    return spark.range(0).select(F.lit(None).cast(_STR).alias("line"), F.lit(None).cast(_STR).alias("file"))


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


def _groups(value: Column, pattern: str, count: int) -> Column:
    """One regex run: ``value`` rewritten into the pattern's groups, or (unmatched) returned unchanged."""
    return F.regexp_replace(
        value, pattern, lf.TEXT_MATCHED + lf.TEXT_SEPARATOR.join(f"${i}" for i in range(1, count + 1))
    )


def _split_groups(rewritten: str, source: Column, count: int) -> Column:
    """The groups of a ``_groups`` column as an array, or null when the pattern did not match."""
    value = F.col(rewritten)
    fields = F.split(F.substr(value, F.lit(2)), lf.TEXT_SEPARATOR)
    matched = value.startswith(lf.TEXT_MATCHED) & ~source.startswith(lf.TEXT_MATCHED)
    return F.when(matched & (F.size(fields) == count), fields)


def _fast_fields(lines: DataFrame, enabled: bool = True) -> DataFrame:
    """Adds ``is_json``/``is_text``/``is_older`` (what follows the first "Completed request:": the JSON form, the
    text form, or a form of a broker before 1.0) and ``fast``: the header's
    then the tail's groups (``log_format.HEAD_GROUPS`` + ``TAIL_GROUPS`` strings) of a line the fast-path
    patterns read, null for any other line."""
    line = F.col("line")
    completed = F.instr(line, lf.COMPLETED)
    text_start = lf.TEXT_MARKER[len(lf.COMPLETED) :]
    after = F.when(completed > 0, F.substr(line, completed + len(lf.COMPLETED), F.lit(len(text_start))))
    older = F.lit(False)
    for start in lf.OLDER_FORM_STARTS:
        older = older | after.startswith(start)
    classified = lines.select(
        "line",
        "file",
        F.coalesce(after.startswith("{") & ~older, F.lit(False)).alias("is_json"),
        F.coalesce(after == text_start, F.lit(False)).alias("is_text"),
        F.coalesce(older, F.lit(False)).alias("is_older"),
    )
    is_j, is_t = F.col("is_json"), F.col("is_text")
    json_head = F.substring_index(line, lf.JSON_HEAD_END, 1)
    json_tail = F.substring_index(line, lf.JSON_TAIL_START, -1)
    text_head = F.substring_index(line, lf.TEXT_HEAD_END, 1)
    text_tail = F.substring_index(line, lf.TEXT_TAIL_START, -1)
    cut = classified.select(
        "*",
        F.when(is_j, json_head).otherwise(F.when(is_t, text_head)).alias("head"),
        F.when(is_j, json_tail).otherwise(F.when(is_t, text_tail)).alias("tail"),
    )
    head, tail = F.col("head"), F.col("tail")
    rewritten = cut.select(
        "line",
        "file",
        "is_json",
        "is_text",
        "is_older",
        "head",
        "tail",
        F.when(is_j, _groups(head, lf.JSON_HEAD, lf.HEAD_GROUPS))
        .otherwise(_groups(head, lf.TEXT_HEAD, lf.HEAD_GROUPS))
        .alias("head_groups"),
        F.when(is_j, _groups(tail, lf.JSON_TAIL, lf.TAIL_GROUPS))
        .otherwise(_groups(tail, lf.TEXT_TAIL, lf.TAIL_GROUPS))
        .alias("tail_groups"),
    )
    fast = F.concat(
        _split_groups("head_groups", head, lf.HEAD_GROUPS), _split_groups("tail_groups", tail, lf.TAIL_GROUPS)
    )
    if not enabled:
        fast = F.lit(None).cast(T.ArrayType(_STR))
    return rewritten.select("line", "file", "is_json", "is_text", "is_older", fast.alias("fast"))


def parse_lines(lines: DataFrame, fast_path: bool = True) -> DataFrame:
    """Columns: reason (null when usable), sample_line and sample_file (set only when not usable), ts, level, api_key,
    api_version, client_id, connection, principal, listener, software (SOFTWARE_TYPE), group_id, protocol_type,
    protocol_name, offered_protocols.

    Most lines are read by the fast path (``log_format.JSON_HEAD`` etc.); the others by the general path below,
    which is what defines the result (the fast patterns only admit lines it reads the same way). Built in
    projections that each compute an expensive value once (regexes, from_json, the reason) and refer to it by
    column afterwards, so the optimizer does not inline it into every consumer. ``fast_path=False`` reads every
    line the general way (the tests compare both).
    """
    line = F.col("line")
    payload = _json_payload(line)
    fast = F.col("fast")
    slow = fast.isNull()
    # JSON: the head (requestHeader) and the tail (from the last "connection" key on) as one small object. Cut
    # from the line itself: character-indexed substr over a whole line is what costs here. from_json stops at
    # the end of the object, so the " (kafka.request.logger)" after it is never read.
    json_frame = F.concat(
        F.substring_index(F.substring_index(line, lf.JSON_HEAD_END, 1), lf.COMPLETED, -1),
        F.lit(lf.JSON_TAIL_START),
        F.substring_index(line, lf.JSON_TAIL_START, -1),
    )
    # Text: one regex run rewrites the line into its fields; an unmatched line comes back without the marker.
    rewritten = _groups(line, lf.TEXT_LINE, lf.TEXT_FIELDS)

    is_j, is_t = F.col("is_json"), F.col("is_text")
    first = _fast_fields(lines, fast_path).select(
        "line",
        "file",
        "is_json",
        "is_text",
        "is_older",
        "fast",
        F.when(slow, F.regexp_extract(line, lf.TIMESTAMP, 1)).alias("slow_ts"),
        F.from_json(F.when(slow & is_j, json_frame), JSON_FRAME_SCHEMA).alias("j"),
        F.when(slow & is_t, rewritten).alias("t"),
    )
    t = F.col("t")
    t_fields = F.when(t.startswith(lf.TEXT_MATCHED), F.split(F.substr(t, F.lit(2)), lf.TEXT_SEPARATOR))
    second = first.select("*", t_fields.alias("t_fields"))

    def field(index: int) -> Column:
        return F.try_element_at(F.col("t_fields"), F.lit(index))

    def fast_field(index: int) -> Column:
        return F.try_element_at(fast, F.lit(index))

    j = F.col("j")
    json_client_id = fast_field(4)
    # Written as null, as a quoted string, or not at all (header v0); the fast path admits no escapes.
    json_client_id = F.when(
        json_client_id.startswith('"'), F.substr(json_client_id, F.lit(2), F.length(json_client_id) - 2)
    )

    def pick(json_slow: Column, text_slow: Column, fast_value: Column) -> Column:
        return F.when(is_j, F.when(slow, json_slow).otherwise(fast_value)).otherwise(
            F.when(slow, text_slow).otherwise(fast_value)
        )

    stage = second.select(
        "line",
        "file",
        "is_json",
        "is_text",
        "is_older",
        F.when(slow, F.col("slow_ts")).otherwise(fast_field(1)).alias("ts"),
        F.when(is_j, F.when(slow, j.requestHeader.requestApiKey).otherwise(fast_field(2).try_cast(_INT))).alias(
            "json_api_key"
        ),
        F.when(is_t, F.coalesce(F.when(slow, field(1)).otherwise(fast_field(2)), F.lit(""))).alias("t_api"),
        pick(j.requestHeader.requestApiVersion, field(2).try_cast(_INT), fast_field(3).try_cast(_INT)).alias(
            "api_version"
        ),
        F.when(is_j, F.when(slow, j.requestHeader.clientId).otherwise(json_client_id))
        .otherwise(F.when(slow, field(3)).otherwise(fast_field(4)))
        .alias("raw_client_id"),
        pick(j.connection, F.coalesce(field(4), F.lit("")), fast_field(5)).alias("connection"),
        pick(j.principal, field(5), fast_field(6)).alias("principal"),
        pick(j.listener, field(6), fast_field(7)).alias("listener"),
        pick(j.clientInformation.softwareName, field(7), fast_field(8)).alias("info_name"),
        pick(j.clientInformation.softwareVersion, field(8), fast_field(9)).alias("info_version"),
        (
            ~slow
            | (
                j.requestHeader.requestApiKey.isNotNull()
                & j.requestHeader.requestApiVersion.isNotNull()
                & j.connection.isNotNull()
            )
        ).alias("json_header_ok"),
    )
    keyed = stage.select(
        "*",
        F.when(is_j, F.col("json_api_key"))
        .otherwise(F.try_element_at(_api_key_map(), F.col("t_api")))
        .alias("api_key"),
    )
    api_key = F.col("api_key")
    needs_body = is_j & api_key.isin(*BODY_KEYS)
    json_ok = F.col("json_header_ok") & (~needs_body | F.col("jb").isNotNull())
    t_matched = (F.col("t_api") != "") & (F.col("connection") != "")
    reason = (
        F.when(
            ~is_j & ~is_t,
            F.when(F.col("is_older"), F.lit(lf.REASON_OLDER_FORM)).otherwise(F.lit(lf.REASON_NOT_REQUEST_LINE)),
        )
        .when(F.col("ts") == "", F.lit(lf.REASON_NO_TIMESTAMP))
        .when(is_j & ~json_ok, F.lit(lf.REASON_BAD_JSON))
        .when(is_t & ~t_matched, F.lit(lf.REASON_BAD_TEXT))
        .when(is_t & api_key.isNull(), F.lit(lf.REASON_UNKNOWN_API))
        .when(
            is_j & (F.instr(line.substr(1, lf.FORWARDED_PREFIX_CHARS), lf.FORWARDED_MARKER) > 0),
            F.lit(lf.REASON_FORWARDED),
        )
    )
    with_body = keyed.select("*", F.from_json(F.when(needs_body, payload), JSON_BODY_SCHEMA).alias("jb"))
    return _usable(with_body.select("*", reason.alias("reason")))


def _usable(judged: DataFrame) -> DataFrame:
    """The output columns of ``parse_lines``: null on a line that did not parse, and the request bodies read
    only on the ApiVersions/JoinGroup/SyncGroup lines (their own projection, so no other line evaluates them)."""
    line, api_key = F.col("line"), F.col("api_key")
    is_j = F.col("is_json")
    jb = F.col("jb")
    is_api_versions = api_key == lf.API_VERSIONS_KEY
    is_group = api_key.isin(*lf.GROUP_KEYS)

    def text(pattern: str, group: int = 1) -> Column:
        return F.regexp_extract(line, pattern, group)

    def api_versions_body(json_value: Column, text_value: Column) -> Column:
        return F.when(is_api_versions, F.when(is_j, json_value).otherwise(text_value))

    def group_body(json_value: Column, text_value: Column) -> Column:
        return F.when(is_group, _blank_to_null(F.when(is_j, json_value).otherwise(text_value)))

    with_bodies = judged.select(
        "*",
        api_versions_body(jb.request.clientSoftwareName, text(lf.TEXT_API_VERSIONS_REQUEST)).alias("body_name"),
        api_versions_body(jb.request.clientSoftwareVersion, text(lf.TEXT_API_VERSIONS_REQUEST, 2)).alias(
            "body_version"
        ),
        api_versions_body(jb.response.errorCode == 0, text(lf.TEXT_RESPONSE_ERROR_CODE) == "0").alias("accepted"),
        group_body(jb.request.groupId, text(lf.TEXT_GROUP_ID)).alias("group_id"),
        group_body(F.coalesce(jb.request.protocolType, jb.response.protocolType), text(lf.TEXT_PROTOCOL_TYPE)).alias(
            "protocol_type"
        ),
        group_body(
            F.coalesce(_blank_to_null(jb.request.protocolName), _blank_to_null(jb.response.protocolName)),
            F.coalesce(
                _blank_to_null(text(lf.TEXT_REQUEST_PROTOCOL_NAME)),
                _blank_to_null(text(lf.TEXT_RESPONSE_PROTOCOL_NAME)),
            ),
        ).alias("protocol_name"),
        group_body(
            F.array_join(jb.request.protocols.getField("name"), ","),
            F.array_join(F.regexp_extract_all(line, F.lit(lf.TEXT_OFFERED_PROTOCOL), F.lit(1)), ","),
        ).alias("offered_protocols"),
    )
    body_name = F.col("body_name")
    info_name = _known(F.col("info_name"))
    info_version = _known(F.col("info_version"))

    def software_of(priority: int, name: Column, version: Column) -> Column:
        return F.struct(F.lit(priority).alias("priority"), name.alias("name"), version.alias("version"))

    software = (
        F.when(
            F.coalesce(F.col("accepted"), F.lit(False)) & (body_name != ""),
            software_of(lf.PRIORITY_API_VERSIONS_BODY, body_name, _known(F.col("body_version"))),
        )
        .when(
            (info_name != lf.UNKNOWN) | (info_version != lf.UNKNOWN),
            software_of(lf.PRIORITY_CLIENT_INFORMATION, info_name, info_version),
        )
        .otherwise(software_of(lf.PRIORITY_UNKNOWN, F.lit(lf.UNKNOWN), F.lit(lf.UNKNOWN)))
        .cast(SOFTWARE_TYPE)
    )
    raw_client_id = F.col("raw_client_id")
    client_id = F.when(is_j, raw_client_id).otherwise(F.when(raw_client_id != "null", raw_client_id))
    # A forwarded line parsed: it is grouped like a usable one (no sample kept), and left out by its reason.
    bad = F.col("reason").isNotNull() & (F.col("reason") != lf.REASON_FORWARDED)
    columns = {
        "ts": F.col("ts"),
        # A usable line starts with a timestamp of fixed width ("[yyyy-MM-dd HH:mm:ss,SSS] "), so its level is
        # cut out by position: a regex over every line would cost more than the rest of this projection.
        "level": F.substring_index(F.substr(line, F.lit(lf.LEVEL_START), F.lit(8)), " ", 1),
        "api_key": api_key,
        "api_version": F.col("api_version"),
        "client_id": client_id,
        "connection": F.col("connection"),
        "principal": F.col("principal"),
        "listener": F.col("listener"),
        "software": software,
        **{name: F.col(name) for name in ("group_id", "protocol_type", "protocol_name", "offered_protocols")},
    }
    return with_bodies.select(
        "reason",
        "file",  # only an incremental run groups by it (per-file state); a full run's plan prunes it
        F.when(bad, F.substring(line, 1, lf.MALFORMED_SAMPLE_CHARS)).alias("sample_line"),
        F.when(bad, F.col("file")).alias("sample_file"),
        *[F.when(~bad, value).alias(name) for name, value in columns.items()],
    )
