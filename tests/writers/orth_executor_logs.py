"""Writers of Orth executor log folders (fixtures, tests, benchmarks): the lines Orth writes, where Orth writes them.
The retry files' writers are ``tests.writers.orth_callbacks``.

* ``ExecutorLogWriter``: ``{logPath}/{yyyy-MM-dd}/{logId}.log`` lines with the markers of ``JobThread`` and
  ``TriggerCallbackThread`` (date directory and times in the executor's zone);
* ``XxlJobLogWriter``: the same for xxl-job 2.x-3.x (``\\r\\n`` line ends, its markers).
"""
from __future__ import annotations

import datetime as dt
import os

from wqtool.formats.orth import LINE_TIME_FORMAT

JOB_THREAD = "com.abyss.orth.core.thread.JobThread"
CALLBACK_THREAD = "com.abyss.orth.core.thread.TriggerCallbackThread"


class ExecutorLogWriter:
    """Appends executor log lines as ``OrthJobHelper.log`` does (one ``\\n``-terminated line per call, the message
    may hold more lines)."""

    eol = "\n"

    def __init__(self, log_path: str, tz: dt.tzinfo = dt.timezone.utc):
        self.log_path = log_path
        self.tz = tz

    def path(self, log_id: int, trigger_ms: int) -> str:
        day = dt.datetime.fromtimestamp(trigger_ms / 1000, self.tz).strftime("%Y-%m-%d")
        return os.path.join(self.log_path, day, f"{log_id}.log")

    def raw(self, log_id: int, trigger_ms: int, data: bytes) -> None:
        p = self.path(log_id, trigger_ms)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "ab") as f:
            f.write(data)

    def line(self, log_id: int, trigger_ms: int, at_ms: int, message: str, *, cls: str = JOB_THREAD,
             method: str = "run", src_line: int = 1, thread: str | None = None) -> None:
        t = dt.datetime.fromtimestamp(at_ms / 1000, self.tz).strftime(LINE_TIME_FORMAT)
        thread = thread or f"orth-job-thread-{log_id % 97}-{trigger_ms}"
        self.raw(log_id, trigger_ms, f"{t} [{cls}#{method}]-[{src_line}]-[{thread}] {message}{self.eol}"
                 .encode("utf-8"))

    # the markers (spec §3.3)
    def start(self, log_id, trigger_ms, at_ms, param="") -> None:
        self.line(log_id, trigger_ms, at_ms, "<br>----------- Orth job execute start -----------<br>----------- "
                  f"Param: {param}", method="runSerial", src_line=202)

    def finish(self, log_id, trigger_ms, at_ms, code=200, msg=None) -> None:
        self.line(log_id, trigger_ms, at_ms, "<br>----------- Orth job execute end(finish) -----------<br>----------- "
                  f"Result: handleCode={code}, handleMsg={'null' if msg is None else msg}", method="runSerial",
                  src_line=241)

    def error(self, log_id, trigger_ms, at_ms, trace: str) -> None:
        self.line(log_id, trigger_ms, at_ms, f"<br>----------- JobThread Exception: {trace}<br>----------- Orth job "
                  "execute end(error) -----------", method="runSerial", src_line=236)

    def timeout(self, log_id, trigger_ms, at_ms) -> None:
        self.line(log_id, trigger_ms, at_ms, "<br>----------- Orth job execute timeout", method="lambda$runSerial$0",
                  src_line=-1, thread="Thread-3")
        self.raw(log_id, trigger_ms, b"java.util.concurrent.TimeoutException\n\tat java.base/java.util.concurrent."
                 b"FutureTask.get(FutureTask.java:204)\n")

    def stopped(self, log_id, trigger_ms, at_ms, reason="Admin scheduler kill request") -> None:
        self.line(log_id, trigger_ms, at_ms, f"<br>----------- JobThread stopped, reason: {reason}",
                  method="toStop", src_line=120)

    def callback(self, log_id, trigger_ms, at_ms, outcome="success", detail="") -> None:
        msg = {"success": "<br>----------- Orth callback success",
               "failed": f"<br>----------- Orth callback failed, response: {detail or 'Response{code=500, msg=' + chr(39) + 'admin down' + chr(39) + ', data=null}'}",
               "error": f"<br>----------- Orth callback error: {detail or 'Connection refused'}"}[outcome]
        self.line(log_id, trigger_ms, at_ms, msg, cls=CALLBACK_THREAD, method="callbackLog", src_line=180,
                  thread="orth-callback-thread")


XXL_JOB_THREAD = "com.xxl.job.core.thread.JobThread"
XXL_CALLBACK_THREAD = "com.xxl.job.core.thread.TriggerCallbackThread"


class XxlJobLogWriter(ExecutorLogWriter):
    """xxl-job 2.x-3.x executor logs: ``XxlJobFileAppender.appendLog`` ends every line with ``\\r\\n`` (3.2.0
    ``XxlJobFileAppender.java:110``); the markers of 3.2.0 ``JobThread.java:134,157,180,195,205`` and
    ``TriggerCallbackThread.java:170,174,177`` (logged from ``callbackLog``, line 198). ``returnt=True``: the
    2.0.0-2.2.x end(finish) marker (``XxlJobLogger.log("... ReturnT:" + executeResult)``, v2.0.0
    ``JobThread.java:158``), ``ReturnT [code=C, msg=M, content=null]``."""

    eol = "\r\n"

    def __init__(self, log_path: str, tz: dt.tzinfo = dt.timezone.utc, *, returnt: bool = False, job_id: int = 1):
        super().__init__(log_path, tz)
        self.returnt = returnt
        self.job_id = job_id

    def _jt(self, log_id, trigger_ms, at_ms, message, src_line) -> None:
        self.line(log_id, trigger_ms, at_ms, message, cls=XXL_JOB_THREAD, method="run", src_line=src_line,
                  thread=f"xxl-job, JobThread-{self.job_id}-{trigger_ms - 5000}")

    def start(self, log_id, trigger_ms, at_ms, param="") -> None:
        self._jt(log_id, trigger_ms, at_ms, "<br>----------- xxl-job job execute start -----------<br>----------- "
                 f"Param:{param}", 134)

    def finish(self, log_id, trigger_ms, at_ms, code=200, msg=None) -> None:
        m = "null" if msg is None else msg
        if self.returnt:
            text = f"ReturnT:ReturnT [code={code}, msg={m}, content=null]"
        else:
            text = f"Result: handleCode={code}, handleMsg = {m}"
        self._jt(log_id, trigger_ms, at_ms, "<br>----------- xxl-job job execute end(finish) -----------<br>"
                 f"----------- {text}", 180)

    def error(self, log_id, trigger_ms, at_ms, trace: str) -> None:
        self._jt(log_id, trigger_ms, at_ms, f"<br>----------- JobThread Exception:{trace}<br>----------- xxl-job "
                 "job execute end(error) -----------", 205)

    def timeout(self, log_id, trigger_ms, at_ms) -> None:
        """The timeout marker, ``XxlJobHelper.log(e)`` of the TimeoutException, then end(finish) with 502."""
        self._jt(log_id, trigger_ms, at_ms, "<br>----------- xxl-job job execute timeout", 157)
        self._jt(log_id, trigger_ms, at_ms, "java.util.concurrent.TimeoutException\n\tat java.base/java.util."
                 "concurrent.FutureTask.get(FutureTask.java:204)\n", 158)     # printStackTrace: the JVM's \\n
        self.finish(log_id, trigger_ms, at_ms, 502, "job execute timeout ")

    def stopped(self, log_id, trigger_ms, at_ms, reason="scheduling center kill job.") -> None:
        """A kill while running: the toStop line, then the exception's end(error) (3.2.0 ``JobThread.java:195,
        205``)."""
        self._jt(log_id, trigger_ms, at_ms, f"<br>----------- JobThread toStop, stopReason:{reason}", 195)
        self.error(log_id, trigger_ms, at_ms, "java.lang.InterruptedException: sleep interrupted\n\tat "
                   "java.base/java.lang.Thread.sleep(Native Method)\n")

    def callback(self, log_id, trigger_ms, at_ms, outcome="success", detail="") -> None:
        msg = {"success": "<br>----------- xxl-job job callback finish.",
               "failed": "<br>----------- xxl-job job callback fail, callbackResult:"
                         + (detail or "ReturnT [code=500, msg=admin down, content=null]"),
               "error": f"<br>----------- xxl-job job callback error, errorMsg:{detail or 'Connection refused'}"}[outcome]
        self.line(log_id, trigger_ms, at_ms, msg, cls=XXL_CALLBACK_THREAD, method="callbackLog", src_line=198,
                  thread="xxl-job, executor TriggerCallbackThread")
