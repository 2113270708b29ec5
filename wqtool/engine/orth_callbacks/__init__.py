"""Orth / XXL-JOB callback retry files (``orth-callbacks``): an executor's ``callbacklogs/`` (and the older release
lines' ``callbacklog/`` and ``xxl-job-callback.log``). Spec: docs/formats/orth-logs.md §1, 2 and 7; declarations in
``wqtool.formats.orth``; the Java codecs (Gson, Java serialization, Hessian 2, Jackson) in ``wqtool.engine.javacodec``.
The executor log folders of the same logPath are the ``orth-executor-logs`` format
(``wqtool.engine.orth_executor_logs``).

    from wqtool.engine.orth_callbacks import send, writer
    writer.write_retry_file(log_path, entries)           # callbacklogs/orth-callback-{md5}.log, atomically
    send.send(log, url, ...)                             # replay --send: deliver to an admin, delete once accepted
"""
