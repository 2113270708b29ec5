"""wqtool — inspect, verify, replay and repair job-queue logs.

The small public API (imported lazily: ``import wqtool`` costs nothing until it is used)::

    from wqtool import discover, verify, replay_log
"""
__version__ = "0.1.0"

__all__ = ["__version__", "discover", "verify", "replay_log"]


def __getattr__(name: str):
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
