"""Transitional: the Snap! declarations are one module per format now (issue 23), named as the engine packages —
``wqtool.formats.snaplist`` (the list client journal), ``wqtool.formats.evtj`` (prinbee EVTJ) and
``wqtool.formats.fastjournal`` (the libfastjournal design and wqtool's FJJL journal).

This name only re-exports them for ``wqtool/server/fastjournal/daemon.py``, outside this change's files; delete it
once that import names ``wqtool.formats.fastjournal``.
"""
from __future__ import annotations

from . import evtj, fastjournal, snaplist


def __getattr__(name: str):
    for module in (fastjournal, evtj, snaplist):
        if name in dir(module):
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
