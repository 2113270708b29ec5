"""Record rows: the stable field set, times, payload renderings, damage rows."""
from __future__ import annotations

import os

from wqtool.engine.kestrel.codes import KESTREL_CODES
from wqtool.engine.kestrel.model import Record
from wqtool.engine.kestrel.reader import JournalReader
from wqtool.engine.kestrel.serialize import KESTREL_RECORD_FIELDS, damage_to_jsonable, record_to_jsonable

from .conftest import T, one_set, write_journal


def test_rows(qdir):
    write_journal(os.path.join(qdir, "q"), lambda w: (w.add(b"hi\xff", T, T + 60_000), w.remove_tentative(-3),
                                                       w.legacy_add(b"old", 1_300_000_060), w.remove(),
                                                       w.raw(b"\x0c")))
    evs = list(JournalReader(one_set(qdir)).events())
    recs = [e for e in evs if isinstance(e, Record)]
    rows = [record_to_jsonable(r, payload="hex") for r in recs]
    for row in rows:
        assert tuple(row) == KESTREL_RECORD_FIELDS
    assert rows[0]["op"] == "addx" and rows[0]["add_time"] == "2011-03-13T07:06:40Z"
    assert rows[0]["expiry"] == "2011-03-13T07:07:40Z" and rows[0]["payload"] == "6869ff"
    assert rows[0]["length"] == 24 and rows[0]["payload_len"] == 3
    assert rows[1]["op"] == "remove-tentative-xid" and rows[1]["xid"] == -3 and rows[1]["payload"] is None
    assert rows[2]["op"] == "add" and rows[2]["add_time"] is None and rows[2]["expiry"] == "2011-03-13T07:07:40Z"
    assert record_to_jsonable(recs[0], payload="text")["payload"] == "hi\\xff"
    assert record_to_jsonable(recs[0])["payload"] == "aGn/"
    dmg = [e for e in evs if not isinstance(e, Record) and e.severity == "error"][0]
    row = damage_to_jsonable(dmg)
    assert tuple(row) == KESTREL_RECORD_FIELDS and row["error"].startswith("KQ-BAD-OPCODE")


def test_codes_table_shape():
    from wqtool.engine.workq.codes import CODES
    for code, (sev, meaning) in KESTREL_CODES.items():
        assert code.startswith("KQ-") and sev in ("error", "warning", "note") and meaning
        assert code not in CODES or CODES[code] == (sev, meaning)
