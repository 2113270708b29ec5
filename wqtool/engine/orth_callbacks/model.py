"""The record of the Orth retry files (``orth-callbacks``)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class Callback:
    """One entry of a retry file (``CallbackRequest`` / ``HandleCallbackParam``) where it lies."""

    path: str
    offset: int
    length: int
    index: int                  # in the log (the retry directory)
    entry: int                  # in its batch (file)
    source: str                 # "json" | "java" | "hessian" | "jackson" (the file's encoding)
    log_id: int
    log_date_tim: int           # ms since epoch (trigger time)
    handle_code: int
    handle_msg: str | None
    file_state: str = "pending"  # pending | stuck | stranded | refused | null (what Orth does with its file)
    release: str = "orth"       # formats.orth.CALLBACK_RELEASES: which release line wrote the file
