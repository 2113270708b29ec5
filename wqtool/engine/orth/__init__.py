"""Orth / XXL-JOB executor-side files: retry files (``orth-callbacks``) and executor log folders
(``orth-executor-logs``). Spec: docs/formats/orth-logs.md §1-4; declarations in ``wqtool.formats.orth``.

    from wqtool.engine.orth import gson, javaser, readlog
    gson.encode(entries) / gson.parse_lenient(data)      # Orth's exact retry-file bytes / what its Gson accepts
    javaser.parse_legacy(data) / javaser.encode_legacy(entries)   # xxl-job <= 3.2 Java streams, bounded
    readlog.read_log(path, from_line)                    # the executor's /log answer
"""
