"""Writing EVTJ files byte-exact (fixtures, tests): ``journal::add_event`` / ``update_event_status`` layouts.

``EvtjWriter.add`` places inline attachments (smaller than the threshold) back to back after the request id and
external ones as ``{id}.bin`` next to the file (offset: bit 31 + id); ``set_status`` rewrites the status byte in
place; ``end_marker`` writes the ``00 00`` that ends a compressed file. ``raw`` appends anything (damage).
"""
from __future__ import annotations

import os

from wqtool.formats.evtj import (ATTACHMENT_OFFSET_SIZE, CONF_DEFAULTS, END_MARKER, EVENT_HEADER_SIZE,
                             EXTERNAL_ATTACHMENT, Status)
from wqtool.engine.evtj.fastpath import encode_event, encode_file_header


def build_event(request_id: bytes, time_ns: int, attachments=(), *, status: int = Status.READY,
                byteorder: str = "little", threshold: int = CONF_DEFAULTS["inline_attachment_size_threshold"],
                external_ids=()) -> tuple[bytes, list[tuple[int, bytes]]]:
    """(event bytes, [(id, data)] of external attachments). ``attachments``: bytes each; one at or above
    ``threshold`` goes external with the next id of ``external_ids``."""
    ids = list(external_ids)
    inline, offsets_kind, external = [], [], []
    for a in attachments:
        if len(a) < threshold:
            offsets_kind.append(("inline", len(inline)))
            inline.append(a)
        else:
            i = ids.pop(0)
            offsets_kind.append(("external", i))
            external.append((i, a))
    start = EVENT_HEADER_SIZE + ATTACHMENT_OFFSET_SIZE * len(offsets_kind) + len(request_id)
    inline_at, at = [], start
    for a in inline:
        inline_at.append(at)
        at += len(a)
    offsets = [inline_at[k] if kind == "inline" else EXTERNAL_ATTACHMENT | k for kind, k in offsets_kind]
    sec, nsec = divmod(time_ns, 1_000_000_000)
    return encode_event(int(status), request_id, sec, nsec, offsets, b"".join(inline), byteorder), external


class EvtjWriter:
    def __init__(self, path: str, *, byteorder: str = "little", header: bool = True):
        self.path = path
        self.dir = os.path.dirname(path) or "."
        self.byteorder = byteorder
        self._f = open(path, "xb")
        if header:
            self._f.write(encode_file_header(byteorder))
        self._next_id = 1

    @property
    def offset(self) -> int:
        return self._f.tell()

    def add(self, request_id: bytes, time_ns: int, attachments=(), *, status: int = Status.READY,
            threshold: int = CONF_DEFAULTS["inline_attachment_size_threshold"]) -> int:
        n_ext = sum(1 for a in attachments if len(a) >= threshold)
        ids = list(range(self._next_id, self._next_id + n_ext))
        self._next_id += n_ext
        data, external = build_event(request_id, time_ns, attachments, status=status, byteorder=self.byteorder,
                                     threshold=threshold, external_ids=ids)
        for i, blob in external:
            with open(os.path.join(self.dir, f"{i}.bin"), "xb") as f:
                f.write(blob)
        at = self._f.tell()
        self._f.write(data)
        return at

    def raw(self, data: bytes) -> int:
        at = self._f.tell()
        self._f.write(data)
        return at

    def end_marker(self) -> int:
        return self.raw(END_MARKER)

    def set_status(self, offset: int, status: int) -> None:
        self._f.flush()
        os.pwrite(self._f.fileno(), bytes([int(status)]), offset + 2)

    def close(self) -> None:
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def write_conf(directory: str, settings: dict) -> str:
    path = os.path.join(directory, "journal.conf")
    with open(path, "x", encoding="utf-8") as f:
        for k, v in settings.items():
            f.write(f"{k}={v}\n")
    return path
