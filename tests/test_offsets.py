"""Offsets one way (issue 20 item 3): one formatter (``wqtool.offsets.at``) for every table and finding, one
parser (``parse_at``) for every option that takes an offset; what a table prints is accepted back as it is."""
from __future__ import annotations

import json
import os
import re

import pytest
from hypothesis import given, strategies as st

from tests.conftest import ROOT, cli, fixture_log
from wqtool.offsets import At, at, parse_at

CRC = fixture_log("crc-mismatch-mid-segment")

names = st.text(st.characters(blacklist_characters="@/\x00", blacklist_categories=("Cs",)), min_size=1,
                max_size=20).filter(lambda s: s.strip() == s and s not in (".", ".."))


@given(names, st.integers(0, (1 << 63) - 1))
def test_what_at_prints_parse_at_reads_back(name, offset):
    assert parse_at(at("/some/dir/" + name, offset)) == At(name, offset)
    assert parse_at(f"0x{offset:x}") == parse_at(f"@0x{offset:X}") == parse_at(str(offset)) == At(None, offset)


@pytest.mark.parametrize("bad", ["", "x", "0x", "@", "file@", "-1", "0x-1", "a@b@0x1"])
def test_parse_at_refuses_in_plain_words(bad):
    with pytest.raises(ValueError, match="expected a byte offset as wqtool prints it"):
        parse_at(bad)


def test_dump_tables_print_offsets_as_findings_do(in_root):
    """Every format's dump table: the position column is FILE@0xHEX, as in findings."""
    for path in (CRC, "fixtures/kestrel/clean-journal/queue", "fixtures/evtj/live-and-done/journal"):
        lines = cli("dump", "-n", "3", path).out.splitlines()
        assert lines[0].startswith("at ")
        assert all(re.match(r"\S+@0x[0-9a-f]+ ", line) for line in lines[1:]), lines


def test_a_printed_position_is_accepted_back(in_root):
    """The table's FILE@0xHEX pasted into --from-offset / --to-offset: a position in the log (that file from the
    offset on, and every file after it); 0x / @0x / decimal still mean the offset in every file."""
    table = cli("dump", CRC).out.splitlines()[1:]
    first_of_2 = next(line.split()[0] for line in table if line.startswith("000000002.log@"))
    third = table[3].split()[0]
    assert third == "000000001.log@0x194" or third.startswith("000000001.log@")
    rows = [json.loads(x) for x in cli("dump", "-o", "jsonl", "--from-offset", third, CRC).out.splitlines()[:-1]]
    want = [r for r in (json.loads(x) for x in cli("dump", "-o", "jsonl", CRC).out.splitlines()[:-1])
            if (os.path.basename(r["file"]), r["offset"]) >= ("000000001.log", parse_at(third).offset)]
    assert rows == want and len(rows) > 3
    upto = cli("dump", "--to-offset", first_of_2, CRC).out.splitlines()[1:]
    assert upto and all(line.startswith("000000001.log@") for line in upto)
    r = cli("dump", "--from-offset", "000000009.log@0x8", CRC)
    assert r.code == 2 and "000000009.log is not a file of" in r.err and r.out == ""   # no header before it


def test_plans_print_ranges_with_the_same_formatter(in_root):
    r = cli("repair", "--salvage", "--as-of", "2026-11-21T23:30:00Z", CRC)
    assert "cut 000000001.log@0x11c-0x194 (120 bytes)" in r.out


def test_replay_tables_print_positions_alike(in_root):
    """EVTJ's replay table (the one replay table with a position column) prints FILE@0xHEX too."""
    lines = cli("replay", "--as-of", "2026-01-30T03:30:00Z", "fixtures/evtj/live-and-done/journal").out.splitlines()
    assert " at " in lines[0] and "journal-0.events@0x3e " in lines[2]
