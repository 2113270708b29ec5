"""The Orth job-log table ``orth_job_log`` and its neighbour ``orth_job_registry``: the single declaration.

Spec: ``docs/formats/orth-logs.md`` §5 (the table, the row lifecycle, the UI's status derivation, the report
counts), §6 (the lost-job monitor), §7 (the admin's callback update rules). Declarations only: the columns in DDL
order with their types, the status rules and the SQL conditions of the admin as data (``Cond`` trees). The engine
evaluates them in Python (``wqtool.engine.orth_joblog.rules``) and translates the same trees to SQL for Spark and
the databases, so there is one truth for every rule.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Union

#: Table names: Orth's, and xxl-job's before ``mysql/db/update.sql`` renames it (same columns minus schedule_time).
TABLE = "orth_job_log"
TABLE_NAMES = ("orth_job_log", "xxl_job_log")
REGISTRY_TABLE = "orth_job_registry"
REGISTRY_TABLE_NAMES = ("orth_job_registry", "xxl_job_registry")


@dataclass(frozen=True)
class Column:
    """One column as ``mysql/db/tables_orth_job.sql`` declares it."""

    name: str
    ddl: str                  # the column's DDL text after its name (MySQL)
    kind: str                 # "int" | "str" | "datetime"
    nullable: bool
    bits: int | None = None   # int: signed width (bigint 64, int 32, tinyint 8)
    max_chars: int | None = None  # varchar(n): n characters
    max_bytes: int | None = None  # text: 65,535 bytes
    default: int | None = None

    @property
    def int_range(self) -> tuple[int, int]:
        b = self.bits or 64
        return -(1 << (b - 1)), (1 << (b - 1)) - 1


TEXT_MAX_BYTES = 65_535

#: ``orth_job_log`` in DDL order (spec §5).
COLUMNS: tuple[Column, ...] = (
    Column("id", "bigint(20) NOT NULL AUTO_INCREMENT", "int", False, bits=64),
    Column("job_group", "int(11) NOT NULL", "int", False, bits=32),
    Column("job_id", "int(11) NOT NULL", "int", False, bits=32),
    Column("executor_address", "varchar(255) DEFAULT NULL", "str", True, max_chars=255),
    Column("executor_handler", "varchar(255) DEFAULT NULL", "str", True, max_chars=255),
    Column("executor_param", "varchar(512) DEFAULT NULL", "str", True, max_chars=512),
    Column("executor_sharding_param", "varchar(20) DEFAULT NULL", "str", True, max_chars=20),
    Column("executor_fail_retry_count", "int(11) NOT NULL DEFAULT '0'", "int", False, bits=32, default=0),
    Column("trigger_time", "datetime DEFAULT NULL", "datetime", True),
    Column("schedule_time", "datetime DEFAULT NULL", "datetime", True),
    Column("trigger_code", "int(11) NOT NULL", "int", False, bits=32),
    Column("trigger_msg", "text", "str", True, max_bytes=TEXT_MAX_BYTES),
    Column("handle_time", "datetime DEFAULT NULL", "datetime", True),
    Column("handle_code", "int(11) NOT NULL", "int", False, bits=32),
    Column("handle_msg", "text", "str", True, max_bytes=TEXT_MAX_BYTES),
    Column("alarm_status", "tinyint(4) NOT NULL DEFAULT '0'", "int", False, bits=8, default=0),
)
COLUMN_NAMES: tuple[str, ...] = tuple(c.name for c in COLUMNS)
BY_NAME: dict[str, Column] = {c.name: c for c in COLUMNS}
#: Columns a row may lack (xxl-job's table has no schedule_time): read as NULL.
OPTIONAL_COLUMNS = frozenset({"schedule_time"})
INDEXES = (("I_trigger_time", ("trigger_time",)), ("I_handle_code", ("handle_code",)),
           ("I_jobid_jobgroup", ("job_id", "job_group")), ("I_job_id", ("job_id",)))

#: ``orth_job_registry`` (spec §5): the executors the lost-job monitor joins against.
REGISTRY_COLUMNS: tuple[Column, ...] = (
    Column("id", "int(11) NOT NULL AUTO_INCREMENT", "int", False, bits=32),
    Column("registry_group", "varchar(50) NOT NULL", "str", False, max_chars=50),
    Column("registry_key", "varchar(255) NOT NULL", "str", False, max_chars=255),
    Column("registry_value", "varchar(255) NOT NULL", "str", False, max_chars=255),
    Column("update_time", "datetime DEFAULT NULL", "datetime", True),
)
REGISTRY_COLUMN_NAMES = tuple(c.name for c in REGISTRY_COLUMNS)

#: ``datetime`` text as MySQL prints it (second precision, no zone).
DATETIME_FORMAT = "%Y-%m-%d %H:%M:%S"


def create_table_sql(table: str = TABLE, columns: tuple[Column, ...] = COLUMNS, *, quote: str = "`",
                     mysql: bool = True) -> str:
    """The CREATE TABLE statement of a declared table (MySQL dialect, or a portable one for SQLite)."""
    q = quote
    lines = []
    for c in columns:
        if mysql:
            lines.append(f"  {q}{c.name}{q} {c.ddl}")
        else:
            t = {"int": "INTEGER", "str": "TEXT", "datetime": "TEXT"}[c.kind]
            pk = " PRIMARY KEY" if c.name == "id" else ""
            lines.append(f"  {q}{c.name}{q} {t}{'' if c.nullable else ' NOT NULL'}{pk}")
    if mysql:
        lines.append(f"  PRIMARY KEY ({q}id{q})")
        if table in TABLE_NAMES:
            lines += [f"  KEY {q}{n}{q} ({', '.join(q + x + q for x in cols)})" for n, cols in INDEXES]
        tail = ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
    else:
        tail = ")"
    return f"CREATE TABLE {q}{table}{q} (\n" + ",\n".join(lines) + "\n" + tail


# ---------------------------------------------------------------- codes and their meaning (spec §5, §7)
class TriggerCode(enum.IntEnum):
    INIT = 0          # saved, /run not answered yet
    QUEUED = 200      # the executor queued the trigger
    FAILED = 500      # routing failure, HTTP error, unknown handler, DISCARD_LATER, duplicate logId, bad glue type


class HandleCode(enum.IntEnum):
    NONE = 0          # no callback yet
    SUCCESS = 200
    FAIL = 500
    TIMEOUT = 502


class AlarmStatus(enum.IntEnum):
    LOCKED = -1       # JobFailAlarmMonitorHelper holds the row (in flight)
    DEFAULT = 0
    NOT_NEEDED = 1    # the job was deleted
    SENT = 2
    SEND_FAILED = 3


class Status(str, enum.Enum):
    """The UI's status of a row (``orth-ui/src/utils/constants.ts`` ``getLogStatus``); values are the labels
    wqtool prints and ``dump --type`` takes."""

    INIT = "init"
    PENDING = "pending"
    SUCCESS = "success"
    TIMEOUT = "timeout"
    TRIGGER_FAILED = "trigger-failed"
    FAILED = "failed"

    @property
    def ui(self) -> str:
        return _UI[self]


_UI = {Status.INIT: "Init", Status.PENDING: "Pending (running)", Status.SUCCESS: "Success",
       Status.TIMEOUT: "Timeout", Status.TRIGGER_FAILED: "Trigger Failed", Status.FAILED: "Failed"}


# ---------------------------------------------------------------- conditions as data
@dataclass(frozen=True)
class In:
    """``column IN (values)`` (``negate``: NOT IN) over an int column."""

    column: str
    values: tuple[int, ...]
    negate: bool = False


@dataclass(frozen=True)
class All:
    terms: tuple["Cond", ...]


@dataclass(frozen=True)
class AnyOf:
    terms: tuple["Cond", ...]


@dataclass(frozen=True)
class Not:
    term: "Cond"


Cond = Union[In, All, AnyOf, Not]
TRUE = All(())

#: §5.2, applied in order: the first rule whose condition holds gives the status.
STATUS_RULES: tuple[tuple[Status, Cond], ...] = (
    (Status.INIT, In("trigger_code", (0,))),
    (Status.PENDING, All((In("trigger_code", (200,)), In("handle_code", (0,))))),
    (Status.SUCCESS, In("handle_code", (200,))),
    (Status.TIMEOUT, In("handle_code", (502,))),
    (Status.TRIGGER_FAILED, In("trigger_code", (200,), negate=True)),
    (Status.FAILED, TRUE),
)


#: Orth's table: its status rules, one per row, the UI's ``getLogStatus`` precedence (§5.2).
ORTH_STATUS_RULES: tuple[tuple[str, Cond], ...] = tuple((s.value, c) for s, c in STATUS_RULES)

# ---------------------------------------------------------------- xxl-job's own table (§5.4)
#: xxl-job 3.2.0's admin list filters (``xxl-job-admin/src/main/resources/mapper/XxlJobLogMapper.xml:63-75``,
#: ``pageList``; the same at :97-109 for ``pageListCount``): logStatus 1 Success, 2 Fail, 3 Running; -1 All.
XXL_FILTER_SUCCESS: Cond = In("handle_code", (200,))
XXL_FILTER_FAIL: Cond = AnyOf((In("trigger_code", (0, 200), negate=True), In("handle_code", (0, 200), negate=True)))
XXL_FILTER_RUNNING: Cond = All((In("trigger_code", (200,)), In("handle_code", (0,))))

#: xxl-job has no combined status: its list shows the trigger and handle results in two columns and filters rows
#: with the three conditions above, which overlap (trigger_code 500 with handle_code 200 is under Success and under
#: Fail) and leave (0, 0) under All only. A row's label here is the set of filters that list it, so each row has
#: exactly one: the first rule that holds.
XXL_STATUS_RULES: tuple[tuple[str, Cond], ...] = (
    ("running", XXL_FILTER_RUNNING),
    ("success+fail", All((XXL_FILTER_SUCCESS, XXL_FILTER_FAIL))),
    ("success", XXL_FILTER_SUCCESS),
    ("failed", XXL_FILTER_FAIL),
    ("init", TRUE),
)
#: What each xxl-job label means in its admin (``message_en.properties:164-166``: joblog_status_suc / _fail /
#: _running).
_XXL_UI = {"running": "Running", "success+fail": "Success + Fail", "success": "Success", "failed": "Fail",
           "init": "No result (All only)"}
#: The list's "Trigger Result" column (``joblog.index.1.js:96-109``; ``message_en.properties:17-18``): 200 success,
#: 500 fail, 0 blank; any other code is shown as the number.
XXL_TRIGGER_RESULTS: dict[int, str] = {200: "success", 500: "fail", 0: ""}
#: The list's "Handle Result" column (``joblog.index.1.js:124-140``; ``message_en.properties:187-189``).
XXL_HANDLE_RESULTS: dict[int, str] = {200: "Success", 500: "Fail", 502: "Timeout", 0: ""}


@dataclass(frozen=True)
class RuleSet:
    """One job-log table's status semantics: which admin wrote the rows decides how they read. ``status_rules``:
    (label, condition), first that holds; ``ui``: label -> the admin's words; ``success`` / ``failed`` /
    ``running``: the labels the per-executor rates add up; ``alarm_quiet``: labels ``findFailJobLogIds`` never
    picks (an alarm_status other than 0 / -1 on them is unexpected); ``trigger_results`` / ``handle_results``: the
    admin's separate result columns (None: the admin shows only the combined status)."""

    table: str
    admin: str
    status_rules: tuple[tuple[str, Cond], ...]
    ui: dict
    success: tuple[str, ...]
    failed: tuple[str, ...]
    running: tuple[str, ...]
    alarm_quiet: tuple[str, ...]
    trigger_results: dict | None = None
    handle_results: dict | None = None
    pending_word: str = "Pending"   # what the admin calls trigger_code 200, handle_code 0
    init_word: str = "Init"         # ... and a row whose trigger has no result (trigger_code 0)

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(s for s, _ in self.status_rules)

    def trigger_result(self, code: int) -> str | None:
        return None if self.trigger_results is None else self.trigger_results.get(code, str(code))

    def handle_result(self, code: int) -> str | None:
        return None if self.handle_results is None else self.handle_results.get(code, str(code))


ORTH_RULES = RuleSet("orth_job_log", "Orth", ORTH_STATUS_RULES, {s.value: s.ui for s in Status},
                     success=("success",), failed=("timeout", "trigger-failed", "failed"),
                     running=("init", "pending"), alarm_quiet=("pending", "success"))
XXL_RULES = RuleSet("xxl_job_log", "xxl-job", XXL_STATUS_RULES, _XXL_UI,
                    success=("success", "success+fail"), failed=("failed",), running=("running", "init"),
                    alarm_quiet=("running", "success+fail", "success", "init"),
                    trigger_results=XXL_TRIGGER_RESULTS, handle_results=XXL_HANDLE_RESULTS, pending_word="Running",
                    init_word="no trigger result")
RULE_SETS: dict[str, RuleSet] = {r.table: r for r in (ORTH_RULES, XXL_RULES)}
#: Every label of every rule set, in a fixed order (the columnar paths hold a row's label as its index here).
ALL_LABELS: tuple[str, ...] = tuple(dict.fromkeys(s for r in RULE_SETS.values() for s in r.labels))


def rules_for_table(name: str | None) -> RuleSet:
    """The rule set of a job-log table by its name: ``xxl_job_log`` (any ``xxl_`` table) xxl-job's, else Orth's."""
    return XXL_RULES if (name or "").lower().startswith("xxl_") else ORTH_RULES


def holds(cond: "Cond", row) -> bool:
    """Whether a condition holds for ``row`` (a mapping of column -> int): the declarations' meaning, as the engine's
    compiled predicates and the generated SQL apply it (tests prove the three agree)."""
    if isinstance(cond, In):
        return (row[cond.column] in cond.values) is not cond.negate
    if isinstance(cond, All):
        return all(holds(t, row) for t in cond.terms)
    if isinstance(cond, AnyOf):
        return any(holds(t, row) for t in cond.terms)
    if isinstance(cond, Not):
        return not holds(cond.term, row)
    raise TypeError(f"not a condition: {cond!r}")


#: §5.3 JobLogReportHelper / findLogReport: running (Init rows count as running), success; fail = the rest.
REPORT_RUNNING: Cond = All((In("trigger_code", (0, 200)), In("handle_code", (0,))))
REPORT_SUCCESS: Cond = In("handle_code", (200,))
#: The UI list filter "failed" (logStatus=2): includes 502.
LIST_FILTER_FAILED: Cond = AnyOf((In("trigger_code", (0, 200), negate=True), In("handle_code", (0, 200), negate=True)))
#: The alarm scanner ``findFailJobLogIds`` (and alarm_status = 0).
ALARM_FAILED: Cond = All((Not(AnyOf((REPORT_RUNNING, REPORT_SUCCESS))), In("alarm_status", (0,))))
#: §6 findLostJobIds, the code part (plus trigger_time <= now - LOST_AFTER_S and the address not registered).
LOST_CODES: Cond = All((In("trigger_code", (200,)), In("handle_code", (0,))))

#: §6: lostTime = now - 10 min (the admin's clock, bound as a JDBC parameter).
LOST_AFTER_S = 600
#: §6: the monitor runs every 60 s (first 50 ms after start).
LOST_MONITOR_PERIOD_S = 60
#: JobRegistryHelper: registry rows disappear when update_time < now - 90 s (3 x 30 s beats).
REGISTRY_DEAD_TIMEOUT_S = 90
#: What processLostJobs writes (overwriting handle_msg), per orth.job.i18n.
LOST_HANDLE_CODE = 500
LOST_MESSAGES = {"zh_CN": "任务结果丢失，标记失败", "en": "Job result lost, marked as failure"}
#: JobCompleter.complete truncates handle_msg to this many Java chars (UTF-16 code units), no ellipsis.
HANDLE_MSG_MAX_CHARS = 15_000
#: §5 retention (JobLogReportHelper): orth.job.logretentiondays, < 3 disables.
RETENTION_MIN_DAYS = 3
