"""The job states' values and the rule a complete / fail meets, in a module that imports nothing: ``replay.py``
takes them from here (its ``JobState`` has these values; ``result_refused`` is this one), and serve's live queue
applies the rule without importing the replay's modules before its first replies. The other rules are
``replay.py``'s."""
from __future__ import annotations

NEW, COMPLETED, FAILED, PENDING, LEASED = 0, 1, 2, 3, 4
DONE = (COMPLETED, FAILED)


def result_refused(state: int) -> str | None:
    """Why a complete / fail does not apply (a finding code), or None: the job ends COMPLETED / FAILED with it."""
    return "WQ-DUPLICATE-RESULT" if state in DONE else None
