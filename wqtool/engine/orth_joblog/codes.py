"""Stable finding codes of the orth_job_log table (``OJL-``): code -> (severity, meaning).

Reading (the export or dump itself): errors are corrupt (exit 3), or a torn tail (exit 1) when the last file ends
inside a row or statement with nothing after it. History (rows the admin could not have written): errors are
invalid history (exit 4). Warnings and notes never change the exit code.
"""
from __future__ import annotations

from ...engine.findings import ERROR, NOTE, WARNING, Codes

JOBLOG_CODES: Codes = {
    # reading the export / dump / table
    "OJL-PARSE": (ERROR, "a row or statement that does not parse (CSV fields, JSON, SQL), with valid rows after it"),
    "OJL-TRUNCATED": (ERROR, "the last file ends inside a row or INSERT statement (an interrupted export or dump)"),
    "OJL-TOO-LARGE": (ERROR, "a row or value beyond the reader's cap (no table row is that large): skipped"),
    "OJL-ENCODING": (ERROR, "a row that is not valid UTF-8 (the table is utf8mb4)"),
    "OJL-HEADER": (ERROR, "a CSV header / dump column list without the table's required columns"),
    "OJL-NULL": (ERROR, "a NOT NULL column that is NULL or missing: no table row holds that"),
    "OJL-TYPE": (ERROR, "a value that does not fit its column (not an integer, out of range, not a datetime, "
                 "longer than varchar(n) or text)"),
    "OJL-EXTRA-COLUMN": (WARNING, "a column the table does not declare (ignored)"),
    "OJL-OLD-SCHEMA": (NOTE, "xxl-job's table without schedule_time (read as NULL)"),
    "OJL-TABLE": (NOTE, "rows of xxl_job_log: xxl-job's own status semantics apply (list filters, separate trigger "
                  "and handle results), not Orth's"),
    "OJL-NO-ROWS": (WARNING, "no orth_job_log rows in this input"),
    "OJL-DUMP-INCOMPLETE": (WARNING, "a mysqldump without its '-- Dump completed' trailer: it did not finish"),
    "OJL-REGISTRY-ROW": (WARNING, "an orth_job_registry row that cannot be read (left out of the registry)"),
    # rows the admin could not have written (exit 4)
    "OJL-DUPLICATE-ID": (ERROR, "an id seen before (the primary key): the first row is kept"),
    "OJL-BAD-ID": (ERROR, "id < 1 (AUTO_INCREMENT starts at 1)"),
    "OJL-NO-TRIGGER-TIME": (ERROR, "trigger_time NULL: JobTrigger's save() always writes it"),
    "OJL-HANDLED-NO-TIME": (ERROR, "handle_code set but handle_time NULL: every callback and the lost-job monitor "
                            "write handle_time"),
    "OJL-QUEUED-NO-ADDRESS": (ERROR, "trigger_code 200 without executor_address: a queued trigger had an address"),
    "OJL-MSG-TOO-LONG": (ERROR, "handle_msg longer than 15,000 Java chars: JobCompleter truncates it"),
    "OJL-ALARM-STATUS": (ERROR, "alarm_status outside -1..3"),
    # oddities the admin can produce (warnings)
    "OJL-UNKNOWN-TRIGGER-CODE": (WARNING, "trigger_code other than 0, 200, 500 (an executor's own Response code)"),
    "OJL-UNKNOWN-HANDLE-CODE": (WARNING, "handle_code other than 0, 200, 500, 502 (stored unvalidated; a negative "
                                "code shows Failed and the row still accepts callbacks)"),
    "OJL-INIT-HANDLED": (WARNING, "trigger_code 0 with a handle_code: the UI shows Init whatever the callback said"),
    "OJL-ZERO-CALLBACK": (WARNING, "handle_time set with handle_code 0: a callback with handleCode 0 was accepted; "
                          "the row stays Pending and still accepts callbacks"),
    "OJL-HANDLED-EARLY": (WARNING, "handle_time before trigger_time (admin clocks apart)"),
    "OJL-ALARM-UNEXPECTED": (WARNING, "alarm_status set on a row the alarm scanner never takes (Pending or Success)"),
    "OJL-ALARM-LOCKED": (WARNING, "alarm_status -1: an alarm in flight, or the admin died mid-alarm (no alarm sent)"),
    "OJL-FUTURE-TIME": (WARNING, "a time after --as-of"),
    "OJL-LOST": (WARNING, "a lost job (spec §6): trigger 200, handle 0, triggered 10+ min before --as-of, its "
                 "executor_address not in the registry: the monitor marks it failed within 60 s"),
    "OJL-INIT-STUCK": (WARNING, "an Init row (0/0) 10+ min old: the admin died before updateTriggerInfo; nothing "
                       "ever touches it and the report counts it running"),
    # closing notes (per log)
    "OJL-MARKED-LOST": (NOTE, "rows the lost-job monitor already marked failed (500, its message)"),
    "OJL-PENDING-ONLINE": (NOTE, "Pending rows 10+ min old on a registered executor: never marked lost (long jobs, "
                           "or callbacks lost while the executor stays online)"),
    "OJL-REGISTRY": (NOTE, "the executor registry the lost-job check used (and the time zone of the table)"),
}

#: Codes only the replay of the whole log raises (the per-row history checks need the registry and --as-of; the
#: duplicate check needs every row); the others come from reading one file.
JOBLOG_REPLAY_CODES: frozenset[str] = frozenset({
    "OJL-DUPLICATE-ID", "OJL-BAD-ID", "OJL-NO-TRIGGER-TIME", "OJL-HANDLED-NO-TIME", "OJL-QUEUED-NO-ADDRESS",
    "OJL-MSG-TOO-LONG", "OJL-ALARM-STATUS", "OJL-UNKNOWN-TRIGGER-CODE", "OJL-UNKNOWN-HANDLE-CODE",
    "OJL-INIT-HANDLED", "OJL-ZERO-CALLBACK", "OJL-HANDLED-EARLY", "OJL-ALARM-UNEXPECTED", "OJL-ALARM-LOCKED",
    "OJL-FUTURE-TIME", "OJL-LOST", "OJL-INIT-STUCK", "OJL-MARKED-LOST", "OJL-PENDING-ONLINE", "OJL-REGISTRY",
})

# --explain: per code (what the admin does with such a row, whether data is at risk, what fixes it); "what happened"
# is the code's meaning above. wqtool only reads job-log tables: fixes are SQL or a new export. tests/engine/
# test_explain.py: every code has all four.
_INPUT = ("the admin never reads exports: this is the export or dump", "the rows it affects are not checked",
          "none in wqtool: export or dump the table again")
_ROW = ("the admin stores and shows the row as it is", "the job's recorded outcome may be wrong",
        "none in wqtool (read-only for tables): correct the row with SQL")
_OK = ("the admin works as usual", "no", "nothing to fix")
JOBLOG_EXPLAIN: dict[str, tuple[str, str, str]] = {
    "OJL-PARSE": _INPUT, "OJL-TRUNCATED": _INPUT, "OJL-TOO-LARGE": _INPUT, "OJL-ENCODING": _INPUT,
    "OJL-HEADER": _INPUT, "OJL-DUMP-INCOMPLETE": _INPUT, "OJL-NO-ROWS": _INPUT,
    "OJL-NULL": _ROW, "OJL-TYPE": _ROW, "OJL-DUPLICATE-ID": _ROW, "OJL-BAD-ID": _ROW, "OJL-NO-TRIGGER-TIME": _ROW,
    "OJL-HANDLED-NO-TIME": _ROW, "OJL-QUEUED-NO-ADDRESS": _ROW, "OJL-MSG-TOO-LONG": _ROW, "OJL-ALARM-STATUS": _ROW,
    "OJL-UNKNOWN-TRIGGER-CODE": _ROW, "OJL-UNKNOWN-HANDLE-CODE": _ROW, "OJL-INIT-HANDLED": _ROW,
    "OJL-ZERO-CALLBACK": ("the row stays Pending and still accepts callbacks", "the result may be overwritten",
                          _ROW[2]),
    "OJL-HANDLED-EARLY": ("the admin shows the times as stored", "no", "none: align the admins' clocks"),
    "OJL-ALARM-UNEXPECTED": ("the alarm scanner never takes the row", "no", "nothing to fix"),
    "OJL-ALARM-LOCKED": ("no alarm is sent for the row", "an alarm may be missing", _ROW[2]),
    "OJL-FUTURE-TIME": ("the admin shows it", "no", "none: check the clocks, or --as-of"),
    "OJL-LOST": ("the lost-job monitor marks it failed within 60 s", "the run's real result is unknown",
                 "none: check the executor; the monitor closes the row"),
    "OJL-INIT-STUCK": ("nothing ever touches the row; the report counts it running", "the trigger never ran",
                       _ROW[2]),
    "OJL-EXTRA-COLUMN": ("the admin ignores the column", "no", "nothing to fix"),
    "OJL-REGISTRY-ROW": ("the admin skips the registry row", "no", "none: correct the registry row with SQL"),
    "OJL-OLD-SCHEMA": _OK, "OJL-TABLE": _OK, "OJL-MARKED-LOST": _OK, "OJL-PENDING-ONLINE": _OK,
    "OJL-REGISTRY": _OK,
}
