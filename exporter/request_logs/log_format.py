"""What a ``kafka.request.logger`` "Completed request:" line looks like (docs/kafka-facts/request-log.md).

The patterns are written in the common subset of Java and Python regular expressions (numbered groups only),
so the Spark job (``regexp_extract``, Java) and the reference parser (``re``) read lines identically.
"""

from __future__ import annotations

#: File names the broker's appenders write (``kafka-request.log`` and its hourly roll-overs, maybe gzipped).
FILE_GLOB = "kafka-request.log*"

COMPLETED = "Completed request:"
JSON_MARKER = COMPLETED + "{"
TEXT_MARKER = COMPLETED + "RequestHeader("
#: How the lines of brokers before 1.0 go on after "Completed request:": 0.10 and 0.11 write the request header as a
#: Struct (``{api_key=0,api_version=2,correlation_id=1,client_id=x} -- <body>``) or, for the requests still read into
#: Scala objects (ControlledShutdown; Fetch too before 0.10.2), ``Name: <class>; Version: ...``
#: (docs/kafka-facts/request-log.md#before-10). They carry no response (1.0+) and no clientInformation (2.5+); the
#: job does not read them, and says so (``REASON_OLDER_FORM``). 1.0 brought the form the job reads, ``TEXT_LINE``.
OLDER_FORM_STARTS = ("{api_key=", "Name: ")
#: The release that wrote a line of an older form, as the job's message names it.
OLDER_FORM_RELEASES = "Kafka 0.10 or 0.11"
LOGGER_SUFFIX = " (kafka.request.logger)"
CONNECTION_MARKER = " from connection "

#: ``[yyyy-MM-dd HH:mm:ss,SSS] LEVEL `` at the start of every log4j line; group 1 is the timestamp.
#: Month, day, hour, minute and second in their ranges (a line whose time is no date is malformed, not a crash).
#: The timestamp as one group (also read from server.log by ``server_log``).
TIMESTAMP_GROUP = _TS = r"(\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01]) (?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d,\d{3})"
TIMESTAMP = r"^\[" + _TS + r"\] [A-Z]+ "
TIMESTAMP_FORMAT = "yyyy-MM-dd HH:mm:ss,SSS"
#: Where the level starts (1-based) on a line that begins with ``TIMESTAMP``: after "[", 23 characters and "] ".
LEVEL_START = 27
#: The characters dropped from a timestamp to read it as one number (yyyyMMddHHmmssSSS), which orders like time.
TIMESTAMP_SEPARATORS = "- :,"

#: A whole 2.x text line, matched once: the greedy `` -- .*`` reaches the LAST " from connection " whose tail
#: fits the layout. Groups: 1 apiKey enum name, 2 apiVersion, 3 clientId (``null`` when absent), 4 connection
#: id, 5 principal (greedy: SSL distinguished names contain commas), 6 listener, 7/8 clientInformation (2.5+).
TEXT_LINE = (
    r"^\[[^\]]+\] [A-Z]+ Completed request:RequestHeader\(apiKey=([A-Z_]+), apiVersion=(-?\d+), clientId=(.*?), "
    r"correlationId=-?\d+\) -- .* from connection (\S+);totalTime:[-0-9.E]+,requestQueueTime:[-0-9.E]+,"
    r"localTime:[-0-9.E]+,remoteTime:[-0-9.E]+,throttleTime:[-0-9.E]+,responseQueueTime:[-0-9.E]+,"
    r"sendTime:[-0-9.E]+,securityProtocol:[A-Z_]+,principal:(.*),listener:([^,]+?)"
    r"(?:,clientInformation:ClientInformation\(softwareName=(.*?), softwareVersion=(.*?)\))?"
    r"(?:,temporaryMemoryBytes:\d+)?(?:,messageConversionsTime:[-0-9.E]+)? \(kafka\.request\.logger\)$"
)
TEXT_FIELDS = 8  # groups of TEXT_LINE, in the order above
#: The Spark job rewrites a matching line into its groups joined by this separator (one regex run per line);
#: the leading marker tells a rewritten line from an unmatched one, which regexp_replace returns unchanged.
TEXT_SEPARATOR = "\u0001"
TEXT_MATCHED = "\u0002"

#: The fast path. A line's header and tail are cut out with plain string search (the header ends at the first
#: cut, the tail starts after the last) and matched on their own: a regular expression over a whole ~1 KB line is
#: what costs. The patterns admit only the plain case (JSON strings without escapes, the documented key order,
#: numbers that fit); a line they do not match is read by the general path (``TEXT_LINE``, ``from_json``), so
#: they only decide how fast a line is read, never what is read from it.
JSON_HEAD_END = ',"request":'
JSON_TAIL_START = ',"connection":'
TEXT_HEAD_END = ") -- "
TEXT_TAIL_START = CONNECTION_MARKER
_JSON_STRING = r'"([^"\\]*)"'
#: JSON's own number grammar (a number Jackson would reject must not pass the fast path either).
_MS = r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?"
_SHORT = r"(-?(?:0|[1-9]\d{0,4}))"
#: Groups: 1 timestamp, 2 API key, 3 API version, 4 clientId as written (``null``, a quoted string, or empty
#: when the header has none).
JSON_HEAD = (
    r"^\[" + _TS + r"\] [A-Z]+ Completed request:\{\"isForwarded\":(?:true|false),\"requestHeader\":\{"
    r'"requestApiKey":'
    + _SHORT
    + r',"requestApiVersion":'
    + _SHORT
    + r',"correlationId":'
    + _MS
    + r'(?:,"clientId":(null|"[^"\\]*"))?,"requestApiKeyName":"[A-Z_]+"(?:,"requestApiVersionDeprecated":true)?\}$'
)
#: Groups: 1 connection, 2 principal, 3 listener, 4/5 clientInformation name and version.
JSON_TAIL = "".join(
    [
        "^" + _JSON_STRING,
        *(f',"{key}":{_MS}' for key in ("totalTimeMs", "requestQueueTimeMs", "localTimeMs", "remoteTimeMs")),
        *(f',"{key}":{_MS}' for key in ("throttleTimeMs", "responseQueueTimeMs", "sendTimeMs")),
        r',"securityProtocol":"[A-Z_]+","principal":' + _JSON_STRING + r',"listener":' + _JSON_STRING,
        r',"clientInformation":\{"softwareName":' + _JSON_STRING + r',"softwareVersion":' + _JSON_STRING + r"\}",
        f'(?:,"temporaryMemoryBytes":{_MS})?(?:,"messageConversionsTime":{_MS})?' + r"\}",
        r"(?: \(kafka\.request\.logger\))?$",
    ]
)
#: Groups: 1 timestamp, 2 apiKey enum name, 3 apiVersion, 4 clientId.
TEXT_HEAD = (
    r"^\[" + _TS + r"\] [A-Z]+ Completed request:RequestHeader\(apiKey=([A-Z_]+), apiVersion=(-?\d+), "
    r"clientId=(.*), correlationId=-?\d+$"
)
#: The tail of ``TEXT_LINE`` from the connection id on; groups as TEXT_LINE's 4 to 8.
TEXT_TAIL = "^" + TEXT_LINE[TEXT_LINE.index(CONNECTION_MARKER) + len(CONNECTION_MARKER) :]
HEAD_GROUPS = 4  # JSON_HEAD / TEXT_HEAD: timestamp, API, version, clientId
TAIL_GROUPS = 5  # JSON_TAIL / TEXT_TAIL: connection, principal, listener, software name, software version

#: Text bodies (``Struct.toString()``), matched on the whole line, only for the APIs that need them.
TEXT_API_VERSIONS_REQUEST = r" -- \{client_software_name=([^,}]*),client_software_version=([^,}]*)"
TEXT_RESPONSE_ERROR_CODE = r",response:\{error_code=(-?\d+)"
TEXT_GROUP_ID = r" -- \{group_id=([^,}]*)"
TEXT_PROTOCOL_TYPE = r" -- \{[^ ]*?protocol_type=([^,}]*)"
TEXT_OFFERED_PROTOCOL = r"\{name=([^,}]*)"
# JoinGroup answers with the chosen protocol; SyncGroup v5+ repeats it in the request.
TEXT_REQUEST_PROTOCOL_NAME = r" -- \{[^ ]*?protocol_name=([^,}]*)"
TEXT_RESPONSE_PROTOCOL_NAME = r",response:\{[^ ]*?protocol_name=([^,}]*)"

#: Connection id: ``<localIp>:<localPort>-<remoteIp>:<remotePort>-[<processor>-]<index>``; IPv6 addresses have
#: no brackets (and no ``-``), so the host is everything before the last ``:`` of the second segment.
CONNECTION = r"^[^-]+:\d+-([^-]+):\d+-\d+(?:-\d+)?$"

API_VERSIONS_KEY = 18
JOIN_GROUP_KEY = 11
SYNC_GROUP_KEY = 14
GROUP_KEYS = (JOIN_GROUP_KEY, SYNC_GROUP_KEY)

UNKNOWN = "unknown"

# Software priority per line: an ApiVersions request body names the software for its connection even when the
# line's own clientInformation still says unknown (registration happens after the context is captured);
# later lines carry what was registered.
PRIORITY_API_VERSIONS_BODY = 2
PRIORITY_CLIENT_INFORMATION = 1
PRIORITY_UNKNOWN = 0

# Why a line was not used (the ``malformed`` table's ``reason``).
REASON_NOT_REQUEST_LINE = "not a 'Completed request:' line of kafka.request.logger"
REASON_NO_TIMESTAMP = "no valid [yyyy-MM-dd HH:mm:ss,SSS] timestamp at the start"
REASON_UNREADABLE_FILE = "file cut off, corrupt or deleted while read: skipped whole (read again once complete)"
REASON_BAD_JSON = "JSON form: the JSON is cut off or invalid, or lacks requestHeader/connection"
REASON_BAD_TEXT = "text form: the header or the ';totalTime:...' tail does not match the 2.x layout"
REASON_UNKNOWN_API = "text form: apiKey names no API known in any release"
REASON_OLDER_FORM = (
    f"written by {OLDER_FORM_RELEASES} (before 1.0), whose form this job does not read: it reads the text form of "
    "Kafka 1.0 to 2.7 and the JSON form of 2.8 and later"
)
#: Not malformed, and not a client's request on its own connection either: a broker sent it on to its controller in
#: an Envelope (KRaft: CreateTopics of auto-creation or of an Admin, config and ACL changes). The controller logs it
#: with the client's clientId and principal but on the broker's CONTROLLER connection, whose software is the
#: broker's; the request the client really sent (if any: auto-creation's CreateTopics is the broker's own) is in
#: the log of the broker it reached. Counted as a line read, left out of every table.
REASON_FORWARDED = "forwarded by a broker to its controller (isForwarded)"
#: How a forwarded request's JSON line starts after the "Completed request:" (3.0+ log it; 2.x text lines never).
FORWARDED_MARKER = JSON_MARKER + '"isForwarded":true,'
#: A line's forwarded marker is within its first characters: timestamp, level, "Completed request:".
FORWARDED_PREFIX_CHARS = 96

MALFORMED_SAMPLE_BUCKETS = 20  # at most this many sample lines per reason
MALFORMED_SAMPLE_CHARS = 2000


def older_form(line: str) -> bool:
    """Whether ``line`` is a request line of a broker before 1.0 (``OLDER_FORM_STARTS``): what the Spark job's parse
    tells with the same constants, for a reader without Spark."""
    at = line.find(COMPLETED)
    return at >= 0 and line.startswith(OLDER_FORM_STARTS, at + len(COMPLETED))
