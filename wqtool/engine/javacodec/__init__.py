"""The Java encodings of an Orth / XXL-JOB executor's callbacks, read and written byte-exactly without a JVM: a
library, not a format: the ``orth-callbacks`` format reads and writes retry files with it (no other format imports
it, and it imports no format; pyproject.toml's import-linter contracts). The byte layouts are declared in
``wqtool.formats.orth``.

    from wqtool.engine.javacodec import gson, hessian, jackson, javaser
    gson.encode(entries) / gson.parse_lenient(data)      # Orth's exact retry-file bytes / what its Gson accepts
    javaser.parse_legacy(data) / javaser.encode_legacy(entries)   # xxl-job <= 3.2 Java streams
    hessian.parse_hessian(data) / hessian.encode_params(...)      # xxl-job 2.0.2-2.1.x Hessian 2
    jackson.parse_jackson_line(text, off)                # xxl-job 2.0.0-2.0.1 Jackson JSON lines
"""
