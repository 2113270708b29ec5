"""The hot codec for EVTJ events: ``struct`` layouts proven equal to ``wqtool.formats.evtj.schemas(order).event``
and ``.event_header`` by hypothesis (same values, same bytes, both directions)."""
from __future__ import annotations

import struct
from functools import lru_cache

from ...formats.evtj import (ATTACHMENT_OFFSET_SIZE, EVENT_HEADER_SIZE, EVENT_MAGIC, EVTJ_MAGIC,
                             EVTJ_MAJOR_VERSION, EVTJ_MINOR_VERSION, EXTERNAL_ATTACHMENT, ATTACHMENT_ID_MASK)


@lru_cache(maxsize=4)
def layouts(byteorder: str) -> tuple[struct.Struct, struct.Struct, str]:
    p = "<" if byteorder == "little" else ">"
    return struct.Struct(p + "2sBBIQQB7s"), struct.Struct(p + "4sBBH"), p


def decode_header(buf, pos: int, byteorder: str) -> tuple:
    """(magic, status, request_id_size, size, tv_sec, tv_nsec, attachment_count, pad) of the 32 bytes at ``pos``."""
    return layouts(byteorder)[0].unpack_from(buf, pos)


def decode_offsets(buf, pos: int, count: int, byteorder: str) -> tuple[int, ...]:
    p = layouts(byteorder)[2]
    return struct.unpack_from(f"{p}{count}I", buf, pos) if count else ()


def encode_file_header(byteorder: str) -> bytes:
    return layouts(byteorder)[1].pack(EVTJ_MAGIC, EVTJ_MAJOR_VERSION, EVTJ_MINOR_VERSION, 0)


def encode_event(status: int, request_id: bytes, tv_sec: int, tv_nsec: int, offsets, data: bytes,
                 byteorder: str, *, size: int | None = None, magic: bytes = EVENT_MAGIC) -> bytes:
    """One event, as ``add_event`` writes it (``size``/``magic`` overrides build damaged events for tests)."""
    hdr, _, p = layouts(byteorder)
    offsets = tuple(offsets)
    n = EVENT_HEADER_SIZE + ATTACHMENT_OFFSET_SIZE * len(offsets) + len(request_id) + len(data)
    return (hdr.pack(magic, status, len(request_id), n if size is None else size, tv_sec, tv_nsec, len(offsets),
                     bytes(7))
            + struct.pack(f"{p}{len(offsets)}I", *offsets) + request_id + data)


def attachments_layout(offsets, size: int, data_start: int) -> tuple[tuple[int, ...], tuple[int, ...], str | None]:
    """(inline sizes, external ids, problem) of an event's attachment offsets: an inline attachment runs to the next
    inline offset, the last one to the event's end."""
    inline = [o for o in offsets if not o & EXTERNAL_ATTACHMENT]
    external = tuple(o & ATTACHMENT_ID_MASK for o in offsets if o & EXTERNAL_ATTACHMENT)
    problem = None
    sizes = []
    for i, o in enumerate(inline):
        end = inline[i + 1] if i + 1 < len(inline) else size
        if o < data_start or o > size or end < o:
            problem = (f"inline attachment {i} at offset {o} is outside the event's data "
                       f"({data_start}..{size}) or out of order")
            break
        sizes.append(end - o)
    if problem is None and inline and inline[0] != data_start:
        problem = f"the first inline attachment starts at {inline[0]}, the data at {data_start}"
    return tuple(sizes), external, problem
