"""A PATH's directory is listed once per command (issue 23): detection and discovery share one listing
(``fileio.listing_once`` around ``format.resolve_each``) — for every format whose logs are directories."""
from __future__ import annotations

import os

import pytest

from tests.conftest import ROOT
from wqtool.engine import format as registry
from wqtool.engine.format import Options

DIRS = ["fixtures/workq/sample-clean/log", "fixtures/kestrel/clean-journal/queue", "fixtures/evtj/truncated/journal",
        "fixtures/fastjournal/torn-tail/journal", "fixtures/snaplist/torn-final-line/journal"]


@pytest.mark.parametrize("rel", DIRS)
def test_resolve_lists_the_log_directory_once(monkeypatch, rel):
    path = os.path.join(ROOT, rel)
    real = os.listdir
    seen: list[str] = []

    def counting(p="."):
        if os.path.abspath(p) == path:
            seen.append(p)
        return real(p)
    monkeypatch.setattr(os, "listdir", counting)
    [log] = registry.resolve([path], "auto", Options(0))
    assert log.files and len(seen) == 1, seen
