"""The Orth job-log table ``orth_job_log`` (spec: docs/formats/orth-logs.md §5-§7): rows from CSV / JSON
Lines / Parquet exports, mysqldump files, SQLite and MySQL / MariaDB tables; the UI's status of every log id, the
lost-job monitor's condition, the report counts and the analytics of ``stats``.

    from wqtool.engine.orth_joblog.format import FORMAT      # the Format (registered as "orth-joblog")
    from wqtool.engine.orth_joblog import reader, replay, writer, store
    from wqtool.engine.orth_joblog import fastpath   # the columnar fast path of stats / verify (pyarrow, numpy)
"""
