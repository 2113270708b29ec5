"""Writers of Orth retry files (fixtures, tests, benchmarks): the bytes Orth writes, named as Orth names them, but
each file written atomically (temp + fsync + rename + directory fsync), which Orth itself does not do.

* ``write_retry_file(dir, entries)``: ``callbacklogs/orth-callback-{md5}.log`` (``appendFailCallbackFile``);
* ``write_legacy_file(dir, entries, ms)``: ``callbacklog/xxl-job-callback-{ms}.log`` (xxl-job <= 3.2);
* ``write_atomic(path, data)``: any file so (the older release lines' retry files of the fixture scripts).

The executor log folders' writers are ``tests.writers.orth_executor_logs``.
"""
from __future__ import annotations

import hashlib
import os

from wqtool.formats.orth import CALLBACK_DIR, LEGACY_CALLBACK_DIR
from wqtool.engine.fsops import fsync_dir, write_new
from wqtool.engine.javacodec.gson import Entry, encode
from wqtool.engine.javacodec.javaser import encode_legacy


def write_atomic(path: str, data: bytes) -> str:
    d = os.path.dirname(path) or "."
    os.makedirs(d, exist_ok=True)
    tmp = os.path.join(d, f".{os.path.basename(path)}.tmp")
    if os.path.exists(tmp):
        os.unlink(tmp)
    write_new(tmp, [data])
    os.replace(tmp, path)
    fsync_dir(d)
    return path


def write_retry_file(log_path: str, entries: list[Entry], *, prefix: str = "orth") -> str:
    data = encode(entries)
    return write_atomic(os.path.join(log_path, CALLBACK_DIR, f"{prefix}-callback-{hashlib.md5(data).hexdigest()}.log"),
                        data)


def write_legacy_file(log_path: str, entries: list[Entry], ms: int, *, same_object=None, i: int | None = None) -> str:
    name = f"xxl-job-callback-{ms}" + (f"-{i}" if i is not None else "") + ".log"
    return write_atomic(os.path.join(log_path, LEGACY_CALLBACK_DIR, name), encode_legacy(entries, same_object))
