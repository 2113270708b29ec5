"""Orth / XXL-JOB executor log folders (``orth-executor-logs``): ``{logPath}/{yyyy-MM-dd}/{logId}.log``.
Spec: docs/formats/orth-logs.md §3-4; declarations in ``wqtool.formats.orth``. The retry files of the same logPath
are the ``orth-callbacks`` format (``wqtool.engine.orth_callbacks``).

    from wqtool.engine.orth_executor_logs import readlog, writer
    readlog.read_log(path, from_line)                    # the executor's /log answer
    writer.ExecutorLogWriter(log_path).start(...)        # the lines Orth writes (fixtures, tests)
"""
