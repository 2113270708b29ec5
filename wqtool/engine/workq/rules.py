"""The job states' values and the rule a complete / fail meets, in a module that imports nothing: ``replay.py``
takes them from here (its ``JobState`` has these values; ``result_refused`` is this one), and serve's live queue
applies the rule without importing the replay's modules before its first replies. The other rules are
``replay.py``'s. ``has_siblings`` is the log layout's rule for a half-installed log, which serve also checks
before its first replies."""
from __future__ import annotations

import os

NEW, COMPLETED, FAILED, PENDING, LEASED = 0, 1, 2, 3, 4
DONE = (COMPLETED, FAILED)


def result_refused(state: int) -> str | None:
    """Why a complete / fail does not apply (a finding code), or None: the job ends COMPLETED / FAILED with it."""
    return "WQ-DUPLICATE-RESULT" if state in DONE else None


def has_siblings(d: str) -> bool:
    """Whether ``d``'s parent holds a ``<name>.*`` directory (where an interrupted install leaves its copies:
    ``engine.workq.interrupted``, imported only then — it is not free at start-up)."""
    parent, name = os.path.split(os.path.abspath(d))
    if not name:
        return False
    try:
        with os.scandir(parent) as it:
            return any(e.name.startswith(name + ".") and e.is_dir(follow_symlinks=False) for e in it)
    except OSError:
        return False
