"""The priority FIFO of the libfastjournal design and wqtool's journal of it — **per the unimplemented
libfastjournal design** (m2osw/fastjournal holds only a README; no upstream file, message or daemon exists).

* ``wire``: the design's ``FJ`` / ``JR`` messages (hot codec, proven equal to ``wqtool.formats.fastjournal``);
* ``fifo``: the FIFO's rules (no duplicates, newest timestamp wins, not-before, worked-on timeout, tombstones);
* the journal ``NNNNNNNNN.fjj`` as a format (``format``: reader, replay, verify, pack, clean), its writer
  (``writer.JournalAppender``: the server's), and ``client`` (a blocking client for tests and the benchmark).
The server (``wqtool.server.fastjournal``) puts them on TCP.
"""
