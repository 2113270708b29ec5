"""Which retry files the admin already acknowledged, as far as the job logs show it (for ``clean``).

A retry file exists because a callback attempt failed on every admin (its job logs got a ``callback failed`` or
``callback error`` line). If, for every entry of the file, the job log's callback lines end with ``Orth callback
success`` after such a failed one, a later attempt got through: the file is a leftover (``replay --send`` was
stopped between the admin's answer and the deletion, or a copy was put back). Anything less certain — no job log,
no failed line, a failure last, a file that does not parse — is kept.

The retry files are read by the orth-callbacks format, through the registry (this package never imports it).
"""
from __future__ import annotations

import datetime as dt

from ...formats.orth import CALLBACK_MARKERS
from ..findings import ERROR
from ..format import get
from ..options import Options
from .model import LogEntry
from .reader import ExecutorLogSet, ExecutorReader


def _callback_history(s: ExecutorLogSet, i: int) -> list[str]:
    return [ev.kind for ev in ExecutorReader(s, only=i, discovery=False).events()
            if ev.__class__ is LogEntry and ev.kind in CALLBACK_MARKERS]


def _acknowledged(kinds: list[str]) -> bool:
    if not kinds or kinds[-1] != "callback-success":
        return False
    return any(k in ("callback-failed", "callback-error") for k in kinds[:-1])


def delivered_files(s: ExecutorLogSet) -> list[tuple[str, str]]:
    if not s.log_path:
        return []
    by_id: dict[int, list[int]] = {}
    for i, f in enumerate(s.files):
        by_id.setdefault(f.log_id, []).append(i)
    history: dict[int, list[str]] = {}
    out = []
    callbacks = get("orth-callbacks")
    for cs in callbacks.discover([s.log_path], Options(as_of_ns=0)):
        for k, path in enumerate(callbacks.files(cs)):
            entries, bad = [], False
            for ev in callbacks.passes.file_events(cs, k):
                if ev.__class__ is callbacks.record_cls:
                    entries.append(ev)
                elif ev.severity == ERROR:
                    bad = True
            if bad or not entries:
                continue
            ok = True
            for e in entries:
                day = dt.datetime.fromtimestamp(e.log_date_tim / 1000, dt.timezone.utc).date() \
                    if -62135596800000 < e.log_date_tim < 253402300799000 else None
                cands = [i for i in by_id.get(e.log_id, ())
                         if day is not None and _near(s.files[i].date_dir, day)]
                if not cands:
                    ok = False
                    break
                hist = []
                for i in cands:
                    if i not in history:
                        history[i] = _callback_history(s, i)
                    hist += history[i]
                if not _acknowledged(hist):
                    ok = False
                    break
            if ok:
                out.append((path, f"every one of its {len(entries)} callback(s) was acknowledged later (its job "
                            "log's last callback line is 'Orth callback success', after a failed attempt)"))
    return out


def _near(name: str, day: dt.date) -> bool:
    try:
        d = dt.date.fromisoformat(name)
    except ValueError:
        return False
    return abs((d - day).days) <= 1
