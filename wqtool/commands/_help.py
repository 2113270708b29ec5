"""Help text shared by the commands: the exit-code table (from ``wqtool.exitcodes``, as README and man pages) and
the metrics list, filled into a command's docstring where it says ``{EXIT_CODES}`` / ``{METRICS}`` when the typer
command is built (``cli._build_command``: the hot path, which never shows help, does not pay for them)."""
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


def metrics_help() -> str:
    """The metrics ``verify --metrics-file`` writes (``render.metrics``' doc), as a verbatim help block."""
    from ..render import metrics
    doc = metrics.__doc__
    body = doc[doc.index("  wqtool_verify_up"):].rstrip().split("\n")
    return "\b\n" + "\n".join("    " + line for line in body)


def fill(doc: str | None) -> str | None:
    """``doc`` with its ``{EXIT_CODES}`` and ``{METRICS}`` blocks filled in."""
    if doc is None:
        return None
    if "{EXIT_CODES}" in doc:
        doc = doc.replace("{EXIT_CODES}", exit_help())
    if "{METRICS}" in doc:
        doc = doc.replace("{METRICS}", metrics_help())
    return doc
