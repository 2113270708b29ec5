"""Consoles are built lazily (rich freezes the terminal width when a Console is created)."""
from __future__ import annotations

import functools
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:       # rich is imported when a console is first drawn on, not at start-up
    from rich.console import Console


#: stdout's tables are drawn at their natural width whatever the terminal's (COLUMNS=40, a narrow window, a
#: pipe, cron): machine output never wraps; a terminal narrower than a table folds its lines itself.
UNWRAPPED_WIDTH = 100_000


@functools.lru_cache(maxsize=None)
def stdout_console() -> Console:
    from rich.console import Console
    return Console(file=sys.stdout, highlight=False, soft_wrap=False, width=UNWRAPPED_WIDTH,
                   no_color=bool(os.environ.get("NO_COLOR")) or None)


@functools.lru_cache(maxsize=None)
def stderr_console() -> Console:
    from rich.console import Console
    return Console(file=sys.stderr, highlight=False, stderr=True,
                   no_color=bool(os.environ.get("NO_COLOR")) or None)


def reset() -> None:
    """Forget the cached consoles (tests swap sys.stdout)."""
    stdout_console.cache_clear()
    stderr_console.cache_clear()
