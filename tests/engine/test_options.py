"""Typed options (engine/options.py): each format's settings are a dataclass, ``-O`` strings converted to the
field's type with a one-line error naming the option; nothing travels in a side channel."""
from __future__ import annotations

import dataclasses

import pytest

from wqtool.engine.format import Options, PackOptions, RepairOptions, formats, get
from wqtool.engine.options import Settings, setting
from wqtool.errors import UsageError


@dataclasses.dataclass(frozen=True)
class _Toy(Settings):
    flag: bool = setting(False, help="a flag")
    count: int | None = setting(None, expected="a count", help="a count")
    seconds: float = setting(1.5, help="seconds")
    name: str = setting("x")          # no help: a command flag or the API only, not -O


def test_strings_convert_to_the_field_types():
    s = _Toy.parse({"flag": "TRUE", "count": "7", "seconds": "2.25", "name": "y", "other_formats_key": "z"})
    assert s == _Toy(flag=True, count=7, seconds=2.25, name="y")
    assert _Toy.parse({"flag": False, "count": 3}) == _Toy(flag=False, count=3)      # typed values pass
    assert _Toy.parse({}) == _Toy()
    assert _Toy.options() == {"flag": "a flag", "count": "a count", "seconds": "seconds"}


@pytest.mark.parametrize("raw, message", [
    ({"flag": "yes"}, "-O flag: expected true or false, got 'yes'"),
    ({"count": "many"}, "-O count: expected a count, got 'many'"),
    ({"seconds": "soon"}, "-O seconds: expected float, got 'soon'"),
])
def test_a_bad_value_names_the_option(raw, message):
    with pytest.raises(UsageError) as e:
        _Toy.parse(raw)
    assert str(e.value.message if hasattr(e.value, "message") else e.value) == message


def test_every_format_declares_typed_settings_and_reads_its_own():
    for f in formats():
        assert issubclass(f.settings, Settings), f.name
        f.settings.parse({})            # the defaults make a valid instance
    assert Options(0, settings={"kestrel_version": "2.x", "keep_open": True}).of(get("kestrel")) \
        .kestrel_version == "2.x"
    assert Options(0, settings={"timeout": "2.5"}).of(get("orth-callbacks")).timeout == 2.5
    assert Options(0, settings={"start_date_offset_us": "5"}).of(get("snaplist")).start_date_offset_us == 5
    # the -O names: what --help and the known-option check use
    names = {k for f in formats() for k in f.settings.options()}
    assert {"access_token", "tz", "timezone", "jdbc_driver", "jdbc_jar", "evtj_byte_order",
            "start_date_offset_us"} <= names
    assert "kestrel_version" not in names          # a command flag (--kestrel-version), not -O


def test_command_options_are_their_own_dataclasses():
    p = PackOptions(5, drop_expired=True, segment_size=300)
    r = RepairOptions(5, salvage=True, truncate_to_ns=9)
    assert (p.as_of_ns, p.drop_expired, p.segment_size, p.salvage) == (5, True, 300, False)
    assert (r.salvage, r.drop_invalid, r.truncate_to_ns) == (True, False, 9)
    assert {f.name for f in dataclasses.fields(Options)} == {
        "as_of_ns", "horizon", "settings", "as_of_word", "given", "detected", "shared"}


def test_an_unknown_o_key_is_refused_and_a_declared_one_accepted(tmp_path):
    from wqtool.engine.format import resolve
    d = tmp_path / "t"
    d.mkdir()
    with pytest.raises(UsageError, match="-O nonsense: no format takes this option"):
        resolve([str(d)], "auto", Options(0, settings={"nonsense": "1"}, given=("nonsense",)))
