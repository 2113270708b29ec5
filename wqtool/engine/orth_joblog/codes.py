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
