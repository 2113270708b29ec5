"""wqtool — inspect, verify, replay and repair job-queue logs.

The small public API::

    from wqtool import discover, verify, replay_log
"""
__version__ = "0.1.0"

from .engine.workq.reader import discover  # noqa: E402
from .engine.workq.verify import run_log as replay_log, verify  # noqa: E402

__all__ = ["__version__", "discover", "verify", "replay_log"]
