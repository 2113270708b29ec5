"""wqtool — inspect, verify, replay and repair job-queue logs.

The public Python API (imported lazily: ``import wqtool`` costs nothing until it is used)::

    import wqtool
    log = wqtool.open("/var/lib/workq/cmdlog")      # any registered format; format="auto"
    log.records()                                    # dicts, as `wqtool dump -o jsonl`
    log.verify(as_of="2026-11-21T23:30:00Z")         # datetime or string; a Report
    log.replay(as_of="last")                         # a State: digest, rows, counts

(``wqtool.api`` documents it; ``discover``, ``verify`` and ``replay_log`` are the older workq-only entry points.)
"""
__version__ = "0.1.0"

__all__ = ["__version__", "open", "open_all", "discover", "verify", "replay_log"]


def __getattr__(name: str):
    if name in ("open", "open_all", "Log", "Report", "State"):
        from . import api
        return getattr(api, name)
    if name == "discover":
        from .engine.workq.reader import discover
        return discover
    if name == "verify":
        from .engine.workq.verify import verify
        return verify
    if name == "replay_log":
        from .engine.workq.verify import run_log
        return run_log
    raise AttributeError(f"module 'wqtool' has no attribute {name!r}")
