"""``make test-clock``: the test suite on a moved wall clock. On PYTHONPATH, Python imports this at start-up in
every process (pytest, its workers, every ``python -m wqtool`` it runs): ``time.time`` / ``time.time_ns`` start
at ``WQTOOL_FAKE_NOW`` (Unix seconds) and run on from there; ``WQTOOL_FAKE_REAL0`` (set by the first process, and
inherited) keeps every process on one clock. A test that reads the wall clock where it meant a fixed ``--as-of``
fails here instead of in CI on some later day or hour (a snaplist test failed in CI at 03:xx UTC)."""
import os
import time

_now = os.environ.get("WQTOOL_FAKE_NOW")
if _now is not None:
    _real_ns = time.time_ns
    os.environ.setdefault("WQTOOL_FAKE_REAL0", str(_real_ns()))
    _off = int(float(_now) * 1e9) - int(os.environ["WQTOOL_FAKE_REAL0"])
    time.time_ns = lambda: _real_ns() + _off
    _real = time.time
    time.time = lambda: _real() + _off / 1e9
