"""A whole format in one file, registered in-process and driven through the CLI: proof that a new format needs
no change in commands, render or the registry's callers.

The toy format: a file whose first line is ``TOY1``, then one record per line ``<op> <key>`` with op ``set`` or
``del``; a line that is not a record is damage. Its replay is the set of keys alive at the end.
"""
from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest

from tests.conftest import cli
from wqtool.engine import format as registry
from wqtool.engine.findings import ERROR, NOTE, WARNING
from wqtool.engine.format import REQUIRED, Evidence, Format, Options
from tests.engine.toy_format import ToyFormat, ToyLog


@pytest.fixture
def toy(tmp_path):
    fmt = registry.register(ToyFormat())
    p = tmp_path / "things.toy"
    p.write_bytes(b"TOY1\nset a\nset b\ndel a\ndel zz\nset c\n")
    yield str(p)
    registry.unregister("toy")


def test_dump_verify_replay_through_the_cli(toy):
    r = cli("dump", toy)
    assert r.code == 0 and r.out.splitlines() == ["  offset  op   key", "       5  set  a", "      11  set  b",
                                                  "      17  del  a", "      23  del  zz", "      30  set  c"]
    rows = [json.loads(line) for line in cli("dump", "-o", "jsonl", "--type", "del", toy).out.splitlines()[:-1]]
    assert [(x["op"], x["key"]) for x in rows] == [("del", "a"), ("del", "zz")]
    v = cli("verify", "-o", "json", toy)
    assert v.code == 0
    doc = json.loads(v.out)["logs"][0]
    assert doc["verdict"] == "clean" and doc["counts"] == {"TOY-NOTE": 1, "TOY-UNKNOWN-KEY": 1}
    rp = json.loads(cli("replay", "-o", "json", "--format", "toy", toy).out)
    assert rp["keys"] == [{"key": "b"}, {"key": "c"}] and rp["keys_alive"] == 2 and rp["exit_code"] == 0
    assert cli("replay", toy).out.splitlines()[:3] == ["key", "b", "c"]   # the default table
    s = json.loads(cli("stats", "-o", "json", toy).out)
    assert s["total"]["by_type"] == {"del": {"records": 2, "bytes": 13}, "set": {"records": 3, "bytes": 18}}


def test_damage_gives_the_exit_codes_and_the_format_is_a_choice(toy):
    with open(toy, "ab") as f:
        f.write(b"garbage here\nset d\nhalf")
    v = cli("verify", toy)
    assert v.code == 3 and "TOY-BAD-LINE" in v.out
    assert cli("verify", "--format", "nosuch", toy).code == 2
    assert "toy" in registry.names()


# ---------------------------------------------------------------- formats that share a directory
def _dir_format(name: str, suffix: str, shares: frozenset[str]):
    """A toy format that reads the one ``*<suffix>`` file of a directory (its code prefix: the name upper-cased)."""
    code = name.upper()

    class DirToy(ToyFormat):
        codes = {f"{code}-BAD-LINE": (ERROR, "a line that is not a record"),
                 f"{code}-UNKNOWN-KEY": (WARNING, "del of a key that is not set"), f"{code}-NOTE": (NOTE, "alive")}
        about = replace(ToyFormat.about, plural=f"{name} logs", shares_dir_with=shares,
                        replay_codes=frozenset({f"{code}-UNKNOWN-KEY", f"{code}-NOTE"}))

        def _file(self, path):
            mine = sorted(n for n in os.listdir(path) if n.endswith(suffix)) if os.path.isdir(path) else []
            return os.path.join(path, mine[0]) if mine else None

        def detect(self, path):
            f = self._file(path)
            if f is not None and open(f, "rb").read(5) == b"TOY1\n":
                return Evidence(True, f"a directory holding {os.path.basename(f)}")
            return None

        def discover(self, paths, opts):
            return [ToyLog(p, self._file(p), is_dir=True) for p in paths]

    DirToy.name, DirToy.title = name, f"{name} log"
    return DirToy()


@pytest.fixture
def shared_dir(tmp_path):
    a = registry.register(_dir_format("toya", ".toya", frozenset({"toyb"})))
    b = registry.register(_dir_format("toyb", ".toyb", frozenset({"toya"})))
    c = registry.register(_dir_format("toyc", ".toyc", frozenset()))        # claims strongly, shares nothing
    d = tmp_path / "spool"
    d.mkdir()
    (d / "one.toya").write_bytes(b"TOY1\nset a\n")
    (d / "two.toyb").write_bytes(b"TOY1\nset b\nnot a record\nset c\n")
    yield str(d)
    for f in (a, b, c):
        registry.unregister(f.name)


def test_a_directory_formats_share_is_a_log_of_each_with_its_own_verdict(shared_dir):
    assert [f.name for f, _ in registry.detect_all(shared_dir)] == ["toya", "toyb"]
    v = cli("verify", "-o", "json", shared_dir)
    assert v.code == 3
    assert [(x["root"], x["verdict"]) for x in json.loads(v.out)["logs"]] == [(shared_dir, "clean"),
                                                                             (shared_dir, "CORRUPT")]
    assert cli("verify", "--format", "toya", shared_dir).code == 0          # a forced format reads only itself
    r = cli("replay", shared_dir)
    assert r.code == 3 and r.out.count("== ") == 2 and "toya log ==" in r.out and "toyb log ==" in r.out
    assert cli("replay", "--format", "toyb", shared_dir).out.count("== ") == 0
    s = json.loads(cli("stats", "-o", "json", shared_dir).out)
    assert len(s["logs"]) == 2
    rows = cli("dump", "-o", "jsonl", shared_dir).out.splitlines()[:-1]
    assert [json.loads(x)["key"] for x in rows if '"key"' in x] == ["a", "b", "c"]
    p = cli("pack", shared_dir)
    assert p.code == 2 and "holds 2 (toya, toyb): pass --format NAME" in p.err


def test_sharing_needs_both_formats_to_declare_it(shared_dir):
    os.rename(os.path.join(shared_dir, "one.toya"), os.path.join(shared_dir, "one.toyc"))
    # toyc claims the directory strongly too, but neither it nor toyb names the other: toyb's log alone
    assert [f.name for f, _ in registry.detect_all(shared_dir)] == ["toyb"]
    assert [x["verdict"] for x in json.loads(cli("verify", "-o", "json", shared_dir).out)["logs"]] == ["CORRUPT"]


# ---------------------------------------------------------------- the contract itself
def test_the_format_contract_is_small():
    """Everything a format may supply is a member of ``Format`` (what it must) or of one of its parts
    (``engine.caps``): at most 20 members, the toy format above needs 11 of them."""
    members = {m for m in vars(Format) if not m.startswith("_")} | set(Format.__annotations__)
    assert len(members) <= 20, sorted(members)
    assert sorted(Format.__abstractmethods__) == ["detect", "discover", "facts", "files", "run", "state_view"]


def test_register_names_what_a_format_lacks():
    parts = {m: getattr(ToyFormat, m) for m in Format.__abstractmethods__}
    bare = type("Bare", (Format,), {"name": "bare", "record_cls": object, **parts})()
    with pytest.raises(TypeError, match=r"format Bare lacks title, codes, about, record_view: a format declares"):
        registry.register(bare)
    assert "bare" not in registry.names()
    assert set(REQUIRED) == {"name", "title", "codes", "about", "record_cls", "record_view"}


def test_resolving_a_path_asks_each_format_once(shared_dir, monkeypatch):
    """One straight line from PATH to logs: each format's ``detect`` is asked at most once per PATH, also for a
    directory two formats share (the claim that found it is reused, not asked again)."""
    asked: dict[str, int] = {}
    for f in registry.formats():
        real = f.detect

        def counted(path, _real=real, _name=f.name):
            asked[_name] = asked.get(_name, 0) + 1
            return _real(path)
        monkeypatch.setattr(f, "detect", counted)
    logs = registry.resolve([shared_dir], "auto", Options(0))
    assert [lg.fmt.name for lg in logs] == ["toya", "toyb"]
    assert asked and max(asked.values()) == 1, asked


@pytest.mark.parametrize("fixture", ["workq/sample-clean/log", "kestrel/rotated-set-with-pack/queue",
                                     "orth/legacy-callbacklog/logpath"])
def test_detection_and_discovery_list_a_directory_once(fixture, monkeypatch):
    """What detection read of a directory is what discovery reads: the listing is made once per command
    (``fileio.listing_once``), whichever formats ask for it."""
    from tests.conftest import ROOT
    path = os.path.join(ROOT, "fixtures", fixture)
    listed: list[str] = []
    real_listdir = os.listdir
    monkeypatch.setattr(os, "listdir", lambda p=".": listed.append(os.path.abspath(p)) or real_listdir(p))
    assert registry.resolve([path], "auto", Options(0))
    assert listed.count(os.path.abspath(path)) == 1, listed


def test_a_sharing_format_that_claimed_weakly_first_is_not_asked_again(tmp_path):
    """Registry order puts a sharing format that only claims weakly before the one that claims strongly: the
    second's strong claim is the PATH's, and the first's weak answer, already given, is reused rather than asked
    again when the shared directory's other logs are looked for."""
    weak = _dir_format("toyw", ".toyw", frozenset({"toyx"}))
    strong = registry.register(_dir_format("toyx", ".toyx", frozenset({"toyw"})))
    asked = []
    real = weak.detect

    def weakly(path):
        asked.append(path)
        return Evidence(False, "named like one") if real(path) is not None else None
    weak.detect = weakly
    registry.unregister("toyx")
    registry.register(weak)
    registry.register(strong)
    try:
        d = tmp_path / "spool"
        d.mkdir()
        (d / "one.toyw").write_bytes(b"TOY1\nset a\n")
        (d / "two.toyx").write_bytes(b"TOY1\nset b\n")
        assert [f.name for f, _ in registry.detect_all(str(d))] == ["toyx"]
        assert asked == [str(d)]
    finally:
        registry.unregister("toyw")
        registry.unregister("toyx")
