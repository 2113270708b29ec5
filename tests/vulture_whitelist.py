"""Names vulture cannot see used (tests/test_dead_code.py): called by a framework, or named by a string.

Vulture matches by name: each line below marks one name as used. Keep a reason beside each group.
"""
# ruff: noqa
_ = object()

# module __getattr__ (PEP 562): the lazy public API of wqtool, the schema modules built on first use
__getattr__

# asyncio.Protocol callbacks (server/workq/conn.py, server/fastjournal/daemon.py)
_.connection_made
_.connection_lost
_.data_received
_.eof_received
_.pause_writing
_.resume_writing

# http.server.BaseHTTPRequestHandler hooks (server/orth_admin.py)
_.log_message
_.do_GET
_.do_POST

# construct Adapter / Construct hooks (formats/_common.py, formats/orth.py, formats/snaplist.py)
_._parse
_._build
_._sizeof
_._encode

# workq request handlers, dispatched by command name (server/workq/handlers.py: getattr(self, "_" + cmd))
_._schedule
_._lease
_._complete
_._fail
_._result
_._inspect

# classes a format names by dotted path ("module:Class", loaded by engine.format.load_object)
EvtjRecordView
FjjRecordView
KestrelRecordView
CallbackRecordView
ExecutorRecordView
JobLogRecordView
SnaplistRecordView
WorkqRecordView
JobLogFleet
WorkqFleet


# typer's RuntimeParam hook, overridden by commands/_coerce.PlainParam (typer calls it)
_._coerce_value

# io.TextIOBase protocol (render/quiet.py's stdout sink)
_.writable

# pickle.Pickler / Unpickler hooks (spark/cluster.py: _relocated moves a task's paths to this machine's copy)
_.persistent_id
_.persistent_load
