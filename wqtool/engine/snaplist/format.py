"""The snapwebsites list client journal behind the Format interface (``wqtool.engine.format``)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from typing import Iterator, Sequence

from ...errors import InputError, UsageError
from ...formats.snaplist import HOUR_FILE, LIST_PROCESSING_LATENCY_US, MAX_START_DATE_OFFSET_US
from ..fileio import listdir, read_head
from ..caps import About, bound, Passes, Dump, Plans, Live, Spark
from ..format import Evidence, Format, Options, PackOptions, RecordFacts, SendReport, StateView, register
from ..run import ReplayPass
from ..options import Settings, setting
from ..live import describe_holders, holders
from .codes import SNAPLIST_CODES, SNAPLIST_REPLAY_CODES, SNAPLIST_EXPLAIN
from .fastpath import tokenize
from .model import KINDS, Line, ListJournal


#: How much of a file detection reads (the first line must fit).
DETECT_BYTES = 64 * 1024


def _at(log: ListJournal, opts: Options) -> ListJournal:
    """``log`` as of ``opts.as_of_ns``: the current hour (and so the reading order and which hours a writer may
    still append to) is fixed at discovery; a later time (``--as-of last|first``, settled per log) discovers the
    journal again at that time."""
    from .reader import discover
    if opts.as_of_ns == log.as_of_ns:
        return log
    paths = [log.root] if log.is_dir else [f.path for f in log.files]
    return discover(paths, opts.as_of_ns, start_date_offset_us=log.start_date_offset_us)[0]


@dataclass(frozen=True)
class SnaplistSettings(Settings):
    start_date_offset_us: int = setting(LIST_PROCESSING_LATENCY_US, expected="microseconds",
                                        help="snaplist: the list plugin's start-date offset in µs (default 10000000 = "
                                             "LIST_PROCESSING_LATENCY): which hour file a line belongs in")


def _offset(opts: Options) -> int:
    raw = opts.of(FORMAT).start_date_offset_us
    try:
        v = int(raw)
    except (TypeError, ValueError):
        raise UsageError(f"-O start_date_offset_us: expected microseconds, got {raw!r}") from None
    if not 0 <= v <= MAX_START_DATE_OFFSET_US:
        raise UsageError(f"-O start_date_offset_us: {v} is outside 0..{MAX_START_DATE_OFFSET_US} (upstream clamps it "
                         "to 10 s .. 24 h)")
    return v


def _first_line_evidence(path: str) -> Evidence | None:
    """Strong: a line in the first 64 KiB that upstream's reader accepts (uri, priority and key_start_date
    present); weak: the hour file name alone (every line acknowledged, or none parses)."""
    try:
        head = read_head(path, DETECT_BYTES)
    except InputError:
        return None
    name = os.path.basename(path)
    lines = head.split(b"\n")[:-1]          # whole lines only
    for line in lines:
        if line and not tokenize(line).missing:
            return Evidence(True, f"{name}: an hour file with a line that parses")
    return Evidence(False, f"{name}: an hour file name, no line that parses in its first {DETECT_BYTES} bytes")


class SnaplistPasses(Passes):
    def file_events(self, log: ListJournal, i: int, start_index: int = 0) -> Iterator:
        from .reader import ListReader
        return ListReader(log, first_index=start_index, with_discovery=False).file_events(log.files[i])

    def time_span(self, log: ListJournal, end: str | None = None) -> tuple[int | None, int | None]:
        """(first, newest) time over every file: the reading order is a ring that starts after the current hour
        of discovery, so the first and last files depend on the clock; ``--as-of last`` must not."""
        times = [t for i in range(len(log.files)) for t in self._file_times(log, i)]
        return (min(times), max(times)) if times else (None, None)

    def series_probe(self, replay):
        """The list's pending entries after each line (``ListState.entries``)."""
        from ..series import SizeProbe      # report and stats --chart|--timeline only
        return SizeProbe({"pending entries": lambda: len(replay.state.entries)})


class SnaplistDump(Dump):
    kind_noun = "journal line"
    record_kinds = KINDS
    filters = frozenset({"time"})


class SnaplistPlans(Plans):
    # -- plans

    def pack(self, log: ListJournal, opts: PackOptions):
        from .pack import pack_plan
        return pack_plan(_at(log, opts))

    def clean(self, log: ListJournal, opts: Options):
        from .clean import clean_plan
        return clean_plan(_at(log, opts))


class SnaplistLive(Live):
    def writer(self, log: ListJournal) -> str | None:
        found = holders(self.fmt.files(log), writing=True)
        return describe_holders(found) if found else None


class SnaplistSpark(Spark):
    def options(self, o: dict) -> dict:
        return {"start_date_offset_us": o.get("start_date_offset_us")} if o.get("start_date_offset_us") else {}


class SnaplistFormat(Format):
    name = "snaplist"
    title = "snapwebsites list client journal"
    codes = SNAPLIST_CODES
    about = About(
        plural="list journals",
        file_expected="a list journal hour file (<0-23>.msg, lines priority=…;key_start_date=…;uri=…)",
        dir_expected="a list journal directory (no <0-23>.msg file)",
        manual="""The snapwebsites list plugin's client journal (list.cpp): a directory (default
/var/lib/snapwebsites/list/journal) of hour files 0.msg ... 23.msg. A request goes to the file of the UTC hour of its
start date, one ASCII line appended under flock(LOCK_EX) in one write():

  priority=<0-255>;key_start_date=<µs since the epoch>;uri=<page key, ';' written as %3A>\\n

key_start_date is the start date plus the start-date offset (10 s by default: -O start_date_offset_us=), plus 1 h
with priority 180 while the site is updating. The reader (snapbackend listjournal) visits the hours E+1 ... 23,
0 ... E (E: the current hour at --as-of), skips the leading run of \\n, tokenizes each line on ';' (spaces
trimmed, unknown names ignored, the last of a repeated name wins), sends it, and once acknowledged overwrites the
line and its \\n with \\n bytes in place. A finished file is unlinked unless it is the current or the previous
hour's.

dump shows pending lines, blank runs (acknowledged) and skipped lines; replay gives one entry per uri (the largest
key_start_date wins), in the General Sort Index order <domain>:<priority>:<key_start_date>, due or waiting at
--as-of. pack drops the blank runs and keeps every other byte; clean unlinks exhausted hour files but the current
and previous hour's, under each file's flock. replay --send fastjournal://HOST:PORT forwards the pending lines to
a fastjournal daemon (per the unimplemented libfastjournal design), blanking each only once acknowledged.""",
        explain=SNAPLIST_EXPLAIN,
        replay_codes=SNAPLIST_REPLAY_CODES)
    settings = SnaplistSettings
    record_cls = Line

    passes = bound(SnaplistPasses)
    dump = bound(SnaplistDump)
    plans = bound(SnaplistPlans)
    live = bound(SnaplistLive)
    spark = bound(SnaplistSpark)

    @cached_property
    def record_view(self):
        from .serialize import SnaplistRecordView
        return SnaplistRecordView()

    def detect(self, path: str) -> Evidence | None:
        if os.path.isdir(path):
            weak = None
            try:
                names = sorted(listdir(path))
            except OSError:
                return None
            for n in names:
                p = os.path.join(path, n)
                if HOUR_FILE.match(n) and os.path.isfile(p):
                    ev = _first_line_evidence(p)
                    if ev is not None and ev.strong:
                        return ev
                    weak = weak or ev
            return weak
        if HOUR_FILE.match(os.path.basename(path)):
            return _first_line_evidence(path)
        return None

    def discover(self, paths: Sequence[str], opts: Options) -> list[ListJournal]:
        from .reader import discover
        return discover(paths, opts.as_of_ns, start_date_offset_us=_offset(opts))

    def files(self, log: ListJournal) -> list[str]:
        return [f.path for f in log.files]

    def run(self, log: ListJournal, opts: Options, *, limit: int | None = None) -> ReplayPass:
        from .verify import ListRun
        return ListRun(_at(log, opts), limit=limit)

    def facts(self, rec: Line) -> RecordFacts:
        t = rec.key_start_date
        return RecordFacts(rec.kind, rec.length, t * 1000 if t is not None else None, rec.uri)

    def state_view(self, state, log: ListJournal | None = None) -> StateView:
        from .serialize import SnaplistStateView
        return SnaplistStateView(state)

    def send(self, log: ListJournal, target: str, opts: Options, *, dry_run: bool = False,
             progress=None) -> SendReport:
        from .send import forward
        from .send import SCHEME
        if not target.startswith(SCHEME + "://"):
            raise UsageError(f"--send: list journals are forwarded to a fastjournal daemon ({SCHEME}://HOST:PORT), "
                             f"not {target!r}")
        return forward(log, target, dry_run=dry_run, progress=progress)


FORMAT = register(SnaplistFormat())

