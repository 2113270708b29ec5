"""EVTJ ``pack -o``: every file of the new directory is written through the template's checked write and fsynced
before pack reports it written (journal.conf, counters.seq and the attachments were copied with
``shutil.copyfile``: never fsynced, so a power cut after "written" could leave them empty)."""
from __future__ import annotations

import os

from tests.writers.evtj import EvtjWriter
from wqtool.engine.evtj.pack import pack_plan
from wqtool.engine.format import Options, get

S = 1_000_000_000
AS_OF = 1_769_743_800 * S
T = AS_OF - 3600 * S


def test_pack_out_fsyncs_every_file_it_writes(tmp_path, monkeypatch):
    src = tmp_path / "journal"
    src.mkdir()
    with EvtjWriter(str(src / "journal-0.events")) as w:
        w.add(b"a", T, [b"i", b"x" * 4096])      # inline data, and an external attachment: 1.bin
        w.add(b"b", T + S, [b"y"])
    (src / "counters.seq").write_bytes(b"\x02\x00\x00\x00\x00\x00\x00\x00")
    (log,) = get("evtj").discover([str(src)], Options(AS_OF))
    plan = pack_plan(log)
    synced = set()
    real_fsync = os.fsync

    def fsync(fd):
        synced.add(os.path.realpath(f"/proc/self/fd/{fd}"))
        return real_fsync(fd)
    monkeypatch.setattr(os, "fsync", fsync)
    out = tmp_path / "out"
    res = plan.write(str(out))
    names = sorted(os.listdir(out))
    assert names == ["1.bin", "counters.seq", "journal-0.events"], names
    assert {os.path.realpath(out / n) for n in names} <= synced
    assert (out / "1.bin").read_bytes() == (src / "1.bin").read_bytes()
    assert (out / "counters.seq").read_bytes() == (src / "counters.seq").read_bytes()
    assert res.bytes == os.path.getsize(out / "journal-0.events")      # the attachments are not counted, as before
