from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..errors import UsageError


def schema(
    command: Annotated[str, typer.Argument(metavar="COMMAND", help="dump, verify, replay, stats, pack, repair or "
                                           "clean: a command that writes JSON.", show_default=False)],
    jsonl: Annotated[bool, typer.Option("--jsonl", help="The schema of one line of -o jsonl instead (the last line "
                                        "of every stream is its {\"summary\": ...}).")] = False,
) -> None:
    """Print the JSON Schema (draft 2020-12) of COMMAND's -o json document, or of its -o jsonl lines.

    Every command speaks one vocabulary: a job's id is job_id and a record's number record_index everywhere;
    findings is a list of finding objects (severity, code, file, offset, at, record_index, message, job_id) with
    their number by code under counts; every -o json document is an object with the run's exit_code and verdict
    (dump's records under records); every -o jsonl stream ends with one {"summary": ...} line; a position is an
    integer offset beside its file and, under at, the form tables print and options read back
    (000000001.log@0x11c). docs/json-output.md is made from these schemas.

    Example:

    \b
      wqtool schema verify > verify.schema.json
      wqtool schema dump --jsonl
      wqtool verify -o json /var/lib/workq/cmdlog | check-jsonschema --schemafile verify.schema.json -
    """
    from ..render.output import json_text
    from ..render.schema import commands, schema as schema_of
    name = command.strip().lower()
    if name not in commands():
        raise UsageError(f"schema: expected one of {', '.join(commands())} (the commands that write JSON), "
                         f"got {command!r}")
    try:
        doc = schema_of(name, lines=jsonl)
    except KeyError:
        raise UsageError(f"schema: {name} writes -o json only (no -o jsonl)") from None
    sys.stdout.write(json_text(doc, indent=2) + "\n")
