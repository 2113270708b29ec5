"""Help text shared by the commands: the exit-code table (from ``wqtool.exitcodes``, as README and man pages)."""
from __future__ import annotations

import textwrap

from ..exitcodes import APPLY_TEXT, EXIT_TABLE, PRECEDENCE_TEXT


def exit_help(indent: str = "    ") -> str:
    r"""The exit codes as a verbatim (``\b``) help block, then the precedence of several PATHs."""
    lines = ["\b"]
    for code, text in EXIT_TABLE:
        wrapped = textwrap.wrap(text, 88)
        lines.append(f"  {int(code):>3}  {wrapped[0]}")
        lines += [f"       {w}" for w in wrapped[1:]]
    body = ("\n" + indent).join(lines)
    return (body + "\n\n" + indent + f"Several PATHs, or several kinds of damage in one log: the most severe "
            f"exit code wins, {PRECEDENCE_TEXT}. Every PATH's own verdict is in the output.\n\n" + indent + APPLY_TEXT)
