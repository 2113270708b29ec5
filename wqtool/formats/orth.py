"""Orth (XXL-JOB 3.3 derivative) executor-side files — spec: docs/formats/orth-logs.md, sections 1-4.

Declarations only (no I/O, no loops over files): the names Orth gives its files and directories, the retry files'
JSON (key order, Java types, Gson's escaping), the legacy XXL-JOB <= 3.2 retry files' Java serialization stream
(one construct schema per element of the exact stream ``ObjectOutputStream.writeObject(ArrayList<
HandleCallbackParam>)`` writes), the executor log line grammar and markers, the retention rule's constants and the
UI's status precedence. The engine (``wqtool.engine.orth_callbacks``, ``wqtool.engine.orth_executor_logs``) owns every loop over a file.
"""
from __future__ import annotations

import re
from enum import IntEnum, unique

from ._common import declared_on_first_use
from .orth_joblog import STATUS_RULES as _JL_STATUS_RULES, Status as _JLStatus, holds as _jl_holds

_JL_STATUS_LABEL = {st: st.ui.replace(" (running)", "") for st in _JLStatus}

# ---------------------------------------------------------------- layout of {logPath} (spec §1.1, §2, §3.1)
#: Default ``orth.job.executor.logpath``.
DEFAULT_LOG_PATH = "/data/applogs/orth/jobhandler"
#: Orth / xxl-job 3.3+: the retry directory (plural). **DOC≠CODE**: the design doc says ``callbacklog``.
CALLBACK_DIR = "callbacklogs"
#: xxl-job <= 3.2: the legacy retry directory (singular), Java-serialized files.
LEGACY_CALLBACK_DIR = "callbacklog"
#: Glue scripts (``{jobId}_{glueUpdatetimeMs}{.sh|.py|...}``): not logs, never cleaned.
GLUE_DIR = "gluesource"
#: Children of ``logPath`` that are not date directories (retention never touches them).
KNOWN_DIRS = (CALLBACK_DIR, LEGACY_CALLBACK_DIR, GLUE_DIR)

#: ``orth-callback-{md5}.log`` (Orth) and ``xxl-job-callback-{md5}.log`` (xxl-job 3.3-3.4): md5 = 32 lowercase hex
#: digits of the file's exact bytes (``Md5Tool.md5`` + ``HexTool``).
CALLBACK_NAME = re.compile(r"^(?P<prefix>orth|xxl-job)-callback-(?P<md5>[0-9a-f]{32})\.log$")
#: xxl-job <= 3.2: ``xxl-job-callback-{System.currentTimeMillis()}[-i].log`` (i in 0..99 when the name was taken).
LEGACY_NAME = re.compile(r"^xxl-job-callback-(?P<ms>\d{1,19})(?:-(?P<i>\d{1,2}))?\.log$")
#: Anything named like a retry file, however damaged (for detection and ``callbacklogs`` membership).
ANY_CALLBACK_NAME = re.compile(r"^(?:orth|xxl-job)-callback-.*\.log$")

#: A date directory as Orth names it: ``SimpleDateFormat("yyyy-MM-dd")`` of the trigger time (executor's zone).
DATE_DIR = re.compile(r"^(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})$")
#: ``String.format("%s%s%d.log", dir, sep, logId)``: a Java long in decimal, no leading zeros.
LOG_FILE = re.compile(r"^(?P<id>-?(?:0|[1-9]\d{0,18}))\.log$")
JAVA_LONG_MIN, JAVA_LONG_MAX = -(1 << 63), (1 << 63) - 1
JAVA_INT_MIN, JAVA_INT_MAX = -(1 << 31), (1 << 31) - 1


# ---------------------------------------------------------------- callback retry files: JSON (spec §1.2)
@unique
class HandleCode(IntEnum):
    """``handleCode`` values executors send (``handle_code`` column)."""

    SUCCESS = 200
    FAIL = 500
    TIMEOUT = 502


#: ``CallbackRequest`` fields in declaration order = Gson's key order: (JSON key, Java type).
#: ``logDateTim`` (sic) is the real key. ``handleMsg`` is omitted when null (``serializeNulls`` off).
CALLBACK_FIELDS: tuple[tuple[str, str], ...] = (
    ("logId", "long"),
    ("logDateTim", "long"),
    ("handleCode", "int"),
    ("handleMsg", "String"),
)
CALLBACK_KEYS = tuple(k for k, _ in CALLBACK_FIELDS)

#: Gson ``JsonWriter`` with ``disableHtmlEscaping()``: REPLACEMENT_CHARS (U+0000-U+001F as ``\\u00xx`` lowercase
#: hex, except the five short escapes), ``"`` and ``\\``; plus U+2028 / U+2029, which Gson always escapes.
#: Everything else (``< > & = '``, DEL, all other non-ASCII) is written raw, encoded UTF-8.
GSON_ESCAPES: dict[str, str] = {chr(c): "\\u%04x" % c for c in range(0x20)}
GSON_ESCAPES.update({"\t": "\\t", "\b": "\\b", "\n": "\\n", "\r": "\\r", "\f": "\\f", '"': '\\"', "\\": "\\\\",
                     "\u2028": "\\u2028", "\u2029": "\\u2029"})
#: What Java's UTF-8 encoder writes for an unpaired surrogate (``FileTool.writeString`` -> replacement).
JAVA_UNPAIRED_SURROGATE = b"?"
#: ``StringTool.isBlank``: ``trim().isEmpty()``; ``String.trim`` strips every char <= U+0020.
JAVA_TRIM_MAX = 0x20
#: Gson's lenient ``JsonReader`` skips this prefix at the start of a document (``consumeNonExecutePrefix``).
GSON_NON_EXECUTE_PREFIX = b")]}'\n"
UTF8_BOM = b"\xef\xbb\xbf"

# ---------------------------------------------------------------- legacy retry files: Java serialization (spec §2)
STREAM_MAGIC = 0xACED
STREAM_VERSION = 5
STREAM_HEAD = b"\xac\xed\x00\x05"
TC_NULL = 0x70
TC_REFERENCE = 0x71
TC_CLASSDESC = 0x72
TC_OBJECT = 0x73
TC_STRING = 0x74
TC_BLOCKDATA = 0x77
TC_ENDBLOCKDATA = 0x78
TC_LONGSTRING = 0x7C
BASE_WIRE_HANDLE = 0x7E0000
SC_WRITE_METHOD = 0x01
SC_SERIALIZABLE = 0x02

ARRAYLIST_CLASS = "java.util.ArrayList"
ARRAYLIST_UID = 8683452581122892189
PARAM_CLASS = "com.xxl.job.core.biz.model.HandleCallbackParam"
PARAM_UID = 42
STRING_TYPE = "Ljava/lang/String;"
#: ``HandleCallbackParam``'s serializable fields as ``ObjectStreamClass`` orders them: primitives sorted by name,
#: then objects sorted by name: (type code, name).
PARAM_FIELDS: tuple[tuple[str, str], ...] = (("I", "handleCode"), ("J", "logDateTim"), ("J", "logId"),
                                             ("L", "handleMsg"))
#: Sizes the bounded parser checks against the bytes left before it allocates anything.
#: A list element is at least TC_OBJECT + TC_REFERENCE handle + 4 + 8 + 8 + TC_NULL bytes.
MIN_ELEMENT_BYTES = 1 + 5 + 4 + 8 + 8 + 1


def mutf8_decode(data: bytes) -> str:
    """Java's modified UTF-8 (``DataInput.readUTF``): 1-3 byte forms only (NUL as C0 80, supplementary characters
    as two 3-byte surrogates). Raises ValueError("malformed input around byte N") as Java's
    UTFDataFormatException does."""
    units: list[int] = []
    i, n = 0, len(data)
    while i < n:
        c = data[i]
        if c < 0x80:
            units.append(c)
            i += 1
        elif c >> 5 == 0b110:
            if i + 1 >= n:
                raise ValueError(f"malformed input: partial character at end (byte {i})")
            c2 = data[i + 1]
            if c2 & 0xC0 != 0x80:
                raise ValueError(f"malformed input around byte {i + 1}")
            units.append(((c & 0x1F) << 6) | (c2 & 0x3F))
            i += 2
        elif c >> 4 == 0b1110:
            if i + 2 >= n:
                raise ValueError(f"malformed input: partial character at end (byte {i})")
            c2, c3 = data[i + 1], data[i + 2]
            if c2 & 0xC0 != 0x80 or c3 & 0xC0 != 0x80:
                raise ValueError(f"malformed input around byte {i + 2}")
            units.append(((c & 0x0F) << 12) | ((c2 & 0x3F) << 6) | (c3 & 0x3F))
            i += 3
        else:
            raise ValueError(f"malformed input around byte {i}")
    return utf16_units_to_str(units)


def utf16_units_to_str(units) -> str:
    """A Java string (UTF-16 code units) as a Python str: surrogate pairs joined, lone surrogates kept as is."""
    if all(u < 0xD800 or u > 0xDFFF for u in units):
        return "".join(map(chr, units))
    raw = b"".join(u.to_bytes(2, "little") for u in units)
    return raw.decode("utf-16-le", "surrogatepass")


def mutf8_encode(s: str) -> bytes:
    """``DataOutput.writeUTF``'s bytes for a Java string (a str whose supplementary characters are two units)."""
    return units_utf8(java_units(s), nul_in_two=True)


def units_utf8(units: list[int], *, nul_in_two: bool) -> bytes:
    """UTF-16 code units, each written as UTF-8 would write it alone (1-3 bytes; a surrogate on its own), as Java's
    writers do: modified UTF-8 (``writeUTF``, ``nul_in_two``: U+0000 as C0 80) or Hessian's strings (U+0000 as
    one byte)."""
    out = bytearray()
    for u in units:
        if u < 0x80 and (u or not nul_in_two):
            out.append(u)
        elif u < 0x800:
            out += bytes((0xC0 | (u >> 6), 0x80 | (u & 0x3F)))
        else:
            out += bytes((0xE0 | (u >> 12), 0x80 | ((u >> 6) & 0x3F), 0x80 | (u & 0x3F)))
    return bytes(out)


def java_units(s: str) -> list[int]:
    """The UTF-16 code units of a str (lone surrogates pass through)."""
    b = s.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(b[i:i + 2], "little") for i in range(0, len(b), 2)]


# ---------------------------------------------------------------- executor log files (spec §3.2, §3.3)
#: One prefixed line: time (executor zone, no designator), caller class#method, source line, thread, message.
LINE_PREFIX = re.compile(rb"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}) \[([^#\]]+)#([^\]]*)\]-\[(-?\d+)\]-\[(.*?)\] (.*)$",
                         re.DOTALL)
LINE_TIME_FORMAT = "%Y-%m-%d %H:%M:%S"

#: Markers (``JobThread`` / ``TriggerCallbackThread`` messages), checked in this order on a prefixed line's message
#: (``{}`` placeholders are free text): (kind, regex). Orth's wording and xxl-job 2.x-3.x's (3.2.0
#: ``JobThread.java:134,157,180,195,205``, ``TriggerCallbackThread.java:170,174,177``; 2.0.0-2.2.x end(finish)
#: prints ``ReturnT:`` + ``ReturnT.toString()``, v2.0.0 ``JobThread.java:158``): the same kinds.
MARKERS: tuple[tuple[str, re.Pattern], ...] = (
    ("start", re.compile(r"^<br>----------- (?:Orth|xxl-job) job execute start -----------<br>----------- Param:",
                         re.S)),
    ("end-finish", re.compile(r"^<br>----------- (?:Orth|xxl-job) job execute end\(finish\) -----------<br>"
                              r"----------- (?:Result: handleCode=(?P<code>-?\d+), handleMsg(?:=| = )(?P<msg>.*)"
                              r"|ReturnT:(?:ReturnT \[code=(?P<rcode>-?\d+), msg=(?P<rmsg>.*), content=.*\]|.*))$",
                              re.S)),
    ("end-error", re.compile(r"^<br>----------- JobThread Exception: ?.*<br>----------- (?:Orth|xxl-job) job execute "
                             r"end\(error\) -----------", re.S)),
    ("timeout", re.compile(r"^<br>----------- (?:Orth|xxl-job) job execute timeout", re.S)),
    ("stopped", re.compile(r"^<br>----------- JobThread (?:stopped, reason: |toStop, stopReason:)(?P<reason>.*)$",
                           re.S)),
    ("callback-success", re.compile(r"^<br>----------- (?:Orth callback success|xxl-job job callback finish\.)",
                                    re.S)),
    ("callback-failed", re.compile(r"^<br>----------- (?:Orth callback failed, response: |xxl-job job callback fail, "
                                   r"callbackResult:)(?P<response>.*)$", re.S)),
    ("callback-error", re.compile(r"^<br>----------- (?:Orth callback error: |xxl-job job callback error, "
                                  r"errorMsg:)(?P<error>.*)$", re.S)),
    ("glue", re.compile(r"^----------- glue\.version: ?", re.S)),
    ("script", re.compile(r"^(?:----------- (?:orth )?script file: ?|orth script file (?:created|cached) )", re.S)),
)
#: Which release line wrote a log, from its markers: (release line, regex on a marker's message), first match.
EXECUTOR_RELEASES: tuple[tuple[str, re.Pattern], ...] = (
    ("xxl-job 2.0-2.2", re.compile(r"^<br>----------- xxl-job job execute end\(finish\) -----------<br>"
                                   r"----------- ReturnT:")),
    ("xxl-job 2.3-3.x", re.compile(r"^<br>----------- xxl-job job execute end\(finish\) -----------<br>"
                                   r"----------- Result: handleCode=")),
    ("xxl-job 2.x-3.x", re.compile(r"^<br>----------- xxl-job job ")),      # a run without end(finish)
    ("orth", re.compile(r"^<br>----------- Orth ")),
)
#: The kinds a log entry can have: the markers, an ordinary logged line, and text before any prefixed line.
ENTRY_KINDS = tuple(k for k, _ in MARKERS) + ("log", "text")
CALLBACK_MARKERS = ("callback-success", "callback-failed", "callback-error")
END_MARKERS = ("end-finish", "end-error", "timeout", "stopped")
#: What a run's end calls back (``JobThread``): end(error) 500, timeout 502 ("Job execution timeout"), a stop 500.
END_HANDLE_CODE = {"end-error": 500, "timeout": 502, "stopped": 500}

#: ``readLog``: ``Files.newBufferedReader`` decodes strict UTF-8 in chunks of this many UTF-16 units; a malformed
#: byte fails the whole chunk it falls in (the lines before that chunk are returned).
READLOG_CHUNK_UNITS = 8192
READLOG_MISSING = "Log file does not exist"

# ---------------------------------------------------------------- retention (spec §4)
#: ``logretentiondays`` below this disables the cleaner.
MIN_RETENTION_DAYS = 3
#: The sample configuration's ``orth.job.executor.logretentiondays``.
SAMPLE_RETENTION_DAYS = 30
#: The retention rules (``clean -O retention_rule=``): which executor's ``JobLogFileCleanThread`` comparison deletes a
#: date directory. Both parse the name with lenient ``SimpleDateFormat`` and skip names without ``-``; both are
#: disabled below ``MIN_RETENTION_DAYS``. (rule, comparison, upstream file:line)
RETENTION_RULES: dict[str, tuple[str, str]] = {
    "orth": ("todayMidnight > parsedDate + N days (calendar days)",
             "Orth JobLogFileCleanThread (DateTool.addDays; the same in xxl-job 3.3.0 JobLogFileCleanThread.java:79)"),
    "xxl-job-3.2": ("todayMidnight - parsedDate >= N x 86,400,000 ms (local midnights: one day earlier than Orth; "
                    "a DST change in between moves it by the hour's difference)",
                    "xxl-job 2.0.0-3.2.0 JobLogFileCleanThread.java:77"),
}
DEFAULT_RETENTION_RULE = "orth"
DAY_MS = 86_400_000
#: What lenient ``SimpleDateFormat("yyyy-MM-dd").parse`` reads of a name: spaces / tabs before each number, a
#: minus sign allowed, any number of ASCII digits, literal ``-`` between; trailing text ignored.
LENIENT_DATE = re.compile(r"^[ \t]*(?P<y>-?\d+)-[ \t]*(?P<m>-?\d+)-[ \t]*(?P<d>-?\d+)")


# ---------------------------------------------------------------- status derivation (spec §5.2, the UI's order)
#: The rules are declared once, with the job-log table (``formats.orth_joblog.STATUS_RULES``): the executor-side
#: formats derive a log id's status from the same declaration, labelled as the UI's list shows them.
STATUSES = tuple(_JL_STATUS_LABEL[s] for s, _ in _JL_STATUS_RULES)


def log_status(trigger_code: int, handle_code: int) -> str:
    """The UI's status of a row with these codes (the first of ``orth_joblog.STATUS_RULES`` that holds)."""
    row = {"trigger_code": trigger_code, "handle_code": handle_code}
    for status, cond in _JL_STATUS_RULES:
        if _jl_holds(cond, row):
            return _JL_STATUS_LABEL[status]
    raise AssertionError("unreachable: the last rule matches everything")


# ---------------------------------------------------------------- the release lines of callback retry files (issue 19)
#: Which release wrote a retry file, told from the file itself: (id, what it is, folder/name, encoding, upstream).
#: The reader states the id (``Callback.release``); each finding's consequence is said for that release.
CALLBACK_RELEASES: tuple[tuple[str, str, str, str, str], ...] = (
    ("xxl-job-2.0.0", "xxl-job 2.0.0-2.0.1", "{logPath}/xxl-job-callback.log (one file, appended)",
     "Jackson JSON, one List<HandleCallbackParam> array per \\r\\n line: {logId,logDateTim,executeResult{code,msg,"
     "content}}", "v2.0.0 TriggerCallbackThread.java:183-188, FileUtil.java:47-70"),
    ("xxl-job-2.0.2", "xxl-job 2.0.2-2.1.x", "{logPath}/callbacklog/xxl-job-callback-{ms}[-i].log",
     "Hessian 2 (xxl-rpc HessianSerializer: Hessian2Output.writeObject) of List<HandleCallbackParam{logId,"
     "logDateTim,ReturnT executeResult}>", "commit 80b544b5 TriggerCallbackThread.java:192-213, 2.1.2 "
     "XxlJobExecutor.java:112"),
    ("xxl-job-2.2.0", "xxl-job 2.2.0", "{logPath}/callbacklog/xxl-job-callback-{ms}[-i].log",
     "Java serialization (JdkSerializeTool) of ArrayList<HandleCallbackParam{logId,logDateTim,ReturnT<String> "
     "executeResult}>", "v2.2.0 HandleCallbackParam.java:9-14, TriggerCallbackThread.java:203-211"),
    ("xxl-job-2.3", "xxl-job 2.3.0-3.2.0", "{logPath}/callbacklog/xxl-job-callback-{ms}[-i].log",
     "Java serialization of ArrayList<HandleCallbackParam{logId,logDateTim,handleCode,handleMsg}>",
     "3.2.0 TriggerCallbackThread.java:204-225"),
    ("orth", "Orth / xxl-job 3.3.0-3.4.x", "{logPath}/callbacklogs/{orth|xxl-job}-callback-{md5}.log "
     "(xxl-job 3.3.0-3.3.2: /data/applogs/xxl-job/jobhandler/callbacklogs whatever logPath is, 3.3.0 "
     "XxlJobFileAppender.java:36-53; fixed in 3.4.1)",
     "Gson JSON [{logId,logDateTim,handleCode,handleMsg}], md5 of the bytes in the name",
     "3.3.0 TriggerCallbackThread.java (appendFailCallbackFile)"),
    ("xxl-job-head", "xxl-job 3.5.0-SNAPSHOT (HEAD)", "{logPath}/callbacklogs/xxl-job-callback-{md5}.log",
     "Gson JSON of CallbackData [{logId,logDateTime,handleCode,handleMsg}]",
     "HEAD CallbackData.java:8-15, TriggerCallbackThreadHelper.java:224-233"),
)
RELEASE_TITLE = {r[0]: r[1] for r in CALLBACK_RELEASES}
#: xxl-job 2.0.0-2.0.1's one retry file, directly in logPath.
JACKSON_CALLBACK_FILE = "xxl-job-callback.log"
#: HEAD's key for the trigger time (``CallbackData.logDateTime``); Orth / 3.3-3.4 write ``logDateTim``.
HEAD_DATE_KEY = "logDateTime"

# ---------------------------------------------------------------- Hessian 2.0 (spec: hessian-serialization.html)
#: The subset xxl-job 2.0.2-2.1.x files use, as Hessian2Output (hessian 4.0.60/4.0.63) writes it: byte codes.
HS_NULL = 0x4E                  # 'N'
HS_TRUE, HS_FALSE = 0x54, 0x46  # 'T', 'F'
HS_INT = 0x49                   # 'I' + int32
HS_INT_DIRECT = (0x80, 0xBF, 0x90)      # first, last, zero: value = b - 0x90 (-16..47)
HS_INT_BYTE = (0xC0, 0xCF, 0xC8)        # value = (b - 0xc8) << 8 | b1 (-2048..2047)
HS_INT_SHORT = (0xD0, 0xD7, 0xD4)       # value = (b - 0xd4) << 16 | b1 << 8 | b2 (-262144..262143)
HS_LONG = 0x4C                  # 'L' + int64
HS_LONG_INT = 0x59              # 'Y' + int32 (a long that fits an int)
HS_LONG_DIRECT = (0xD8, 0xEF, 0xE0)     # value = b - 0xe0 (-8..15)
HS_LONG_BYTE = (0xF0, 0xFF, 0xF8)       # value = (b - 0xf8) << 8 | b1 (-2048..2047)
HS_LONG_SHORT = (0x38, 0x3F, 0x3C)      # value = (b - 0x3c) << 16 | b1 << 8 | b2
HS_STRING_DIRECT_MAX = 0x1F     # 0x00-0x1f: length (UTF-16 units) then the characters
HS_STRING_SHORT = (0x30, 0x33)  # length = (b - 0x30) << 8 | b1 (0..1023)
HS_STRING_FINAL, HS_STRING_CHUNK = 0x53, 0x52   # 'S' / 'R' + u16 length: the last / a non-final chunk
HS_LIST_FIXED_UNTYPED = 0x58    # 'X' + int length (ArrayList: no type)
HS_LIST_DIRECT_UNTYPED = (0x78, 0x7F)   # length = b - 0x78 (0..7)
HS_LIST_FIXED_TYPED = 0x56      # 'V' type int length
HS_LIST_DIRECT_TYPED = (0x70, 0x77)
HS_LIST_VAR_TYPED, HS_LIST_VAR_UNTYPED, HS_LIST_END = 0x55, 0x57, 0x5A   # 'U' type ... 'Z', 'W' ... 'Z'
HS_CLASS_DEF = 0x43             # 'C' string(class) int(count) string(field)*
HS_OBJECT = 0x4F                # 'O' int(definition)
HS_OBJECT_DIRECT = (0x60, 0x6F) # definition = b - 0x60
HS_REF = 0x51                   # 'Q' int(reference to an earlier list or object)
#: The first bytes a Hessian list can start with (detection).
HS_LIST_STARTS = frozenset([HS_LIST_FIXED_UNTYPED, HS_LIST_FIXED_TYPED, HS_LIST_VAR_TYPED, HS_LIST_VAR_UNTYPED,
                            *range(0x70, 0x80)])
RETURNT_CLASS = "com.xxl.job.core.biz.model.ReturnT"
#: Hessian's JavaSerializer field order: "primitive" fields (primitives and java.lang.* but Object) in declaration
#: order, then the others: HandleCallbackParam (logId, logDateTim, executeResult), ReturnT (code, msg, content).
HESSIAN_PARAM_FIELDS = ("logId", "logDateTim", "executeResult")
HESSIAN_RETURNT_FIELDS = ("code", "msg", "content")

# ---------------------------------------------------------------- xxl-rpc: how a 2.0.0-2.1.0 executor reaches its admin
#: An xxl-job 2.0.0-2.1.0 executor calls ``AdminBiz.callback(List<HandleCallbackParam>)`` through xxl-rpc: an HTTP
#: POST of the Hessian 2 ``XxlRpcRequest`` to ``{admin}/api`` (2.0.2 XxlJobExecutor.java:116-132: NETTY_HTTP,
#: HESSIAN, ``address + AdminBiz.MAPPING``; 2.0.0/2.0.1: JETTY, the same bytes; AdminBiz.java:14 MAPPING "/api"),
#: the token inside the request; the admin answers a Hessian 2 ``XxlRpcResponse`` (2.0.2 JobApiController.java:27-31
#: -> XxlJobDynamicScheduler.java:97-121 -> xxl-rpc 1.4.0 ServletServerHandler.java:48-63). From 2.1.1 on, the
#: executor posts JSON to ``{admin}/api/callback`` (2.1.1 AdminBizClient.java:35-36) and the admin reads that.
RPC_MAPPING = "/api"
RPC_REQUEST_CLASS = "com.xxl.rpc.remoting.net.params.XxlRpcRequest"
#: xxl-rpc 1.4.0 XxlRpcRequest.java:14-23 in Hessian's field order (java.lang and primitives first, then the rest).
RPC_REQUEST_FIELDS = ("requestId", "createMillisTime", "accessToken", "className", "methodName", "version",
                      "parameterTypes", "parameters")
RPC_RESPONSE_CLASS = "com.xxl.rpc.remoting.net.params.XxlRpcResponse"
RPC_RESPONSE_FIELDS = ("requestId", "errorMsg", "result")          # xxl-rpc 1.4.0 XxlRpcResponse.java:14-16
#: The service and method the executor calls (XxlRpcReferenceBean.java:201-208: className = the interface,
#: methodName, parameterTypes = Method.getParameterTypes(); version never set, so null).
ADMIN_BIZ_CLASS = "com.xxl.job.core.biz.AdminBiz"
CALLBACK_METHOD = "callback"
CALLBACK_PARAM_TYPE = "java.util.List"
JAVA_CLASS_CLASS, JAVA_CLASS_FIELDS = "java.lang.Class", ("name",)   # hessian ClassSerializer: {name}
CLASS_ARRAY_TYPE, OBJECT_ARRAY_TYPE = "[java.lang.Class", "[object"  # hessian's types of Class[] and Object[]
#: The admin refuses a request older than this (XxlRpcProviderFactory.java:201).
RPC_MAX_AGE_MS = 3 * 60 * 1000


def hs_ascii(s: str) -> bytes:
    """A Hessian 2 string of at most 1023 ASCII characters (a name): direct up to 31, else short."""
    n = len(s)
    head = bytes((n,)) if n <= HS_STRING_DIRECT_MAX else bytes((HS_STRING_SHORT[0] + (n >> 8), n & 0xFF))
    return head + s.encode("ascii")


def hs_class_def(cls: str, fields: tuple[str, ...]) -> bytes:
    """'C' class-name field-count field-name*: a Hessian 2 class definition (field counts below 48: direct ints)."""
    return bytes((HS_CLASS_DEF,)) + hs_ascii(cls) + bytes((HS_INT_DIRECT[2] + len(fields),)) \
        + b"".join(hs_ascii(f) for f in fields)


def _direct_list(n: int, type_name: str) -> bytes:
    return bytes((HS_LIST_DIRECT_TYPED[0] + n,)) + hs_ascii(type_name)


RPC_REQUEST_CLASSES = (RPC_REQUEST_CLASS, JAVA_CLASS_CLASS)     # defined before the callback list's classes
RPC_REQUEST_REFS = 4                                            # references taken before the ArrayList

# ---------------------------------------------------------------- xxl-job 2.2.0 Java serialization
#: ``HandleCallbackParam`` 2.2.0 (v2.2.0 HandleCallbackParam.java:9-14) and ``ReturnT`` (suid 42 both) as
#: ObjectStreamClass orders their fields: primitives by name, then objects by name.
PARAM220_FIELDS: tuple[tuple[str, str], ...] = (("J", "logDateTim"), ("J", "logId"), ("L", "executeResult"))
RETURNT_TYPE = "Lcom/xxl/job/core/biz/model/ReturnT;"
RETURNT_FIELDS: tuple[tuple[str, str], ...] = (("I", "code"), ("L", "content"), ("L", "msg"))
RETURNT_TYPES = {"content": "Ljava/lang/Object;", "msg": "Ljava/lang/String;"}
RETURNT_UID = 42


def _field_defs(fields, types) -> bytes:
    out = b""
    for t, n in fields:
        out += t.encode() + len(n).to_bytes(2, "big") + n.encode()
        if t == "L":
            out += bytes((TC_STRING,)) + len(types[n]).to_bytes(2, "big") + types[n].encode()
    return out


# ---------------------------------------------------------------- construct declarations (built on first use)
def _declare() -> dict:
    """This module's construct declarations (``DECLARED``): the Java serialization stream's elements (current and
    2.2.0) and the xxl-rpc Hessian heads."""
    from construct import Adapter, Const, GreedyBytes, Int8ub, Int16ub, Int32sb, Int64sb, Int64ub, Prefixed, Struct

    class JavaUtf(Adapter):
        """Modified UTF-8 bytes <-> str."""

        def _decode(self, obj, context, path):
            return mutf8_decode(obj)

        def _encode(self, obj, context, path):
            return mutf8_encode(obj)

    #: ``writeUTF``: u16 length + modified UTF-8 (class and field names, TC_STRING bodies).
    java_utf = JavaUtf(Prefixed(Int16ub, GreedyBytes))

    #: ``writeLongUTF`` (TC_LONGSTRING, strings of more than 65535 bytes): u64 length + modified UTF-8.
    java_long_utf = JavaUtf(Prefixed(Int64ub, GreedyBytes))

    #: The stream header and the ``ArrayList`` object as ``ObjectOutputStream`` writes it (handles 0 and 1), up to the
    #: first element: class descriptor, the ``size`` field, then ``writeObject``'s block data (the capacity int).
    arraylist_head = Struct(
        "magic" / Const(STREAM_HEAD),
        "tc_object" / Const(TC_OBJECT, Int8ub),
        "tc_classdesc" / Const(TC_CLASSDESC, Int8ub),
        "class_name" / Const(b"\x00\x13" + ARRAYLIST_CLASS.encode()),
        "suid" / Const(ARRAYLIST_UID, Int64sb),
        "flags" / Const(SC_SERIALIZABLE | SC_WRITE_METHOD, Int8ub),
        "field_count" / Const(1, Int16ub),
        "field" / Const(b"I\x00\x04size"),
        "end_annotation" / Const(TC_ENDBLOCKDATA, Int8ub),
        "super_desc" / Const(TC_NULL, Int8ub),
        "size" / Int32sb,
        "tc_blockdata" / Const(TC_BLOCKDATA, Int8ub),
        "block_length" / Const(4, Int8ub),
        "capacity" / Int32sb,
    )

    #: ``HandleCallbackParam``'s class descriptor, written once, before the first element's values (handles 2 and 3:
    #: the descriptor, then the type string of ``handleMsg``).
    param_desc = Struct(
        "tc_classdesc" / Const(TC_CLASSDESC, Int8ub),
        "class_name" / Const(len(PARAM_CLASS).to_bytes(2, "big") + PARAM_CLASS.encode()),
        "suid" / Const(PARAM_UID, Int64sb),
        "flags" / Const(SC_SERIALIZABLE, Int8ub),
        "field_count" / Const(len(PARAM_FIELDS), Int16ub),
        "fields" / Const(b"".join(t.encode() + len(n).to_bytes(2, "big") + n.encode() for t, n in PARAM_FIELDS[:3])
                         + b"L\x00\x09handleMsg"),
        "type_tag" / Const(TC_STRING, Int8ub),
        "type_name" / Const(len(STRING_TYPE).to_bytes(2, "big") + STRING_TYPE.encode()),
        "end_annotation" / Const(TC_ENDBLOCKDATA, Int8ub),
        "super_desc" / Const(TC_NULL, Int8ub),
    )

    #: A back reference to an earlier object (the class descriptor, a string): ``TC_REFERENCE`` + u32 handle.
    reference = Struct("tc_reference" / Const(TC_REFERENCE, Int8ub), "handle" / Int32sb)

    #: One element's field values, in descriptor order (after ``TC_OBJECT`` + its descriptor or a reference to it);
    #: ``handleMsg`` follows as TC_NULL, TC_STRING, TC_LONGSTRING or TC_REFERENCE.
    param_values = Struct(
        "handleCode" / Int32sb,
        "logDateTim" / Int64sb,
        "logId" / Int64sb,
    )

    string_body = java_utf            # after TC_STRING

    long_string_body = java_long_utf  # after TC_LONGSTRING

    #: ``writeObject``'s end: the list's block data ends after the last element.
    stream_end = Const(TC_ENDBLOCKDATA, Int8ub)

    #: The request's fixed bytes, in the order Hessian2Output writes them (checked byte for byte against real
    #: hessian 4.0.38 by tests/engine/orth/test_xxlrpc.py). Class definitions: 0 XxlRpcRequest, 1 java.lang.Class,
    #: 2 HandleCallbackParam, 3 ReturnT; references: 0 the request, 1 parameterTypes, 2 List.class, 3 parameters,
    #: 4 the ArrayList, then the params and their ReturnTs.
    rpc_request_head = Struct(
        "class_def" / Const(hs_class_def(RPC_REQUEST_CLASS, RPC_REQUEST_FIELDS)),
        "object" / Const(bytes((HS_OBJECT_DIRECT[0],))),
    )

    #: After version: ``parameterTypes = {List.class}`` (a typed list of one java.lang.Class) and the head of
    #: ``parameters`` (a typed list of one Object: the ArrayList follows, as the retry files' writer writes it).
    rpc_callback_params_head = Struct(
        "parameter_types" / Const(_direct_list(1, CLASS_ARRAY_TYPE) + hs_class_def(JAVA_CLASS_CLASS, JAVA_CLASS_FIELDS)
                                  + bytes((HS_OBJECT_DIRECT[0] + 1,)) + hs_ascii(CALLBACK_PARAM_TYPE)),
        "parameters" / Const(_direct_list(1, OBJECT_ARRAY_TYPE)),
    )

    rpc_response_head = Struct(
        "class_def" / Const(hs_class_def(RPC_RESPONSE_CLASS, RPC_RESPONSE_FIELDS)),
        "object" / Const(bytes((HS_OBJECT_DIRECT[0],))),
    )

    #: 2.2.0 ``HandleCallbackParam``'s class descriptor (handles: the descriptor, then ReturnT's type string).
    param220_desc = Struct(
        "tc_classdesc" / Const(TC_CLASSDESC, Int8ub),
        "class_name" / Const(len(PARAM_CLASS).to_bytes(2, "big") + PARAM_CLASS.encode()),
        "suid" / Const(PARAM_UID, Int64sb),
        "flags" / Const(SC_SERIALIZABLE, Int8ub),
        "field_count" / Const(len(PARAM220_FIELDS), Int16ub),
        "fields" / Const(_field_defs(PARAM220_FIELDS, {"executeResult": RETURNT_TYPE})),
        "end_annotation" / Const(TC_ENDBLOCKDATA, Int8ub),
        "super_desc" / Const(TC_NULL, Int8ub),
    )

    #: ``ReturnT``'s class descriptor (handles: the descriptor, then the Object and String type strings).
    returnt_desc = Struct(
        "tc_classdesc" / Const(TC_CLASSDESC, Int8ub),
        "class_name" / Const(len(RETURNT_CLASS).to_bytes(2, "big") + RETURNT_CLASS.encode()),
        "suid" / Const(RETURNT_UID, Int64sb),
        "flags" / Const(SC_SERIALIZABLE, Int8ub),
        "field_count" / Const(len(RETURNT_FIELDS), Int16ub),
        "fields" / Const(_field_defs(RETURNT_FIELDS, RETURNT_TYPES)),
        "end_annotation" / Const(TC_ENDBLOCKDATA, Int8ub),
        "super_desc" / Const(TC_NULL, Int8ub),
    )

    #: 2.2.0 element values after the descriptor: logDateTim, logId (then executeResult: null, a reference, or an
    #: object).
    param220_values = Struct("logDateTim" / Int64sb, "logId" / Int64sb)

    #: ReturnT's values after its descriptor: code (then content and msg: null, a string, or a reference).
    returnt_values = Struct("code" / Int32sb)

    return locals()


DECLARED = ("JavaUtf", "java_utf", "java_long_utf", "arraylist_head", "param_desc", "reference", "param_values",
            "string_body", "long_string_body", "stream_end", "rpc_request_head", "rpc_callback_params_head",
            "rpc_response_head", "param220_desc", "returnt_desc", "param220_values", "returnt_values")
__getattr__, __dir__ = declared_on_first_use(globals(), _declare, DECLARED)
