"""wqtool — inspect, verify, replay and repair job-queue logs.

The public Python API (imported lazily: ``import wqtool`` costs nothing until it is used)::

    import wqtool
    log = wqtool.open("/var/lib/workq/cmdlog")      # any registered format; format="auto"
    log.records()                                    # dicts, as `wqtool dump -o jsonl`
    log.verify(as_of="2026-11-21T23:30:00Z")         # datetime or string; a Report
    log.replay(as_of="last")                         # a State: digest, rows, counts

(``wqtool.api`` documents it.)
"""
__version__ = "0.2.0"

__all__ = ["__version__", "open", "open_all", "Log", "Report", "State"]


def __getattr__(name: str):
    if name in ("open", "open_all", "Log", "Report", "State"):
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module 'wqtool' has no attribute {name!r}")
