"""Kestrel queue journals (0.8 / 1.x / 2.1+): discovery, reading, replay, verify, pack and qdump.

Spec: ``docs/formats/kestrel-journal.md``. Schemas live in ``wqtool.formats.kestrel``; everything here is engine
(I/O, loops, state); nothing prints. Each role has its module, as in every format package (all times explicit;
``as_of_ns`` = ns since epoch)::

    from wqtool.engine.kestrel.reader import discover, JournalReader
    sets = discover(paths, kestrel_version="auto", queue=None)   # -> list[FileSet]
        # a directory -> one FileSet per queue (2.x order: q.<ms> numerically, then q; .pack rule and ~~ temps
        # applied *virtually*; stray names / temps / half-finished packs are findings on FileSet.findings);
        # files named explicitly -> one FileSet per (dir, queue) holding just those files.
    for ev in JournalReader(fileset, resync=True, from_offset=None, to_offset=None).events():
        ...         # Record | Finding, interleaved in file order (same shape as workq)

    serialize.record_to_jsonable(rec, payload="base64")      # row with KESTREL_RECORD_FIELDS
    serialize.damage_to_jsonable(finding)                      # row for a damage finding (error set)

    verify.run_log(fileset, as_of_ns, limit=None, keep_open=False, on_record=None, kestrel_version=None,
                   resync=True)
        # -> wqtool.engine.run.LogReport: root, segments, records, bytes, findings, counts, severities,
        #    verdict, last_good, state (replay.KestrelState: .digest(), .sorted_items(), .queue, .open,
        #    .canonical_rows(), .expired(), .counts_by_state(), .version_guess)
    verify.verify(filesets, as_of_ns, max_findings=None, keep_open=False)   # -> VerifyReport

    plan = pack.pack_plan(fileset, as_of_ns, drop_expired=False, salvage=False, kestrel_version=None)
        # -> PackPlan (sizes before/after, records dropped, digests, .dropped lines, .to_jsonable());
        #    raises PackRefused (exit 3/4) on corrupt input unless salvage
    plan.write(output_path_or_dir)                            # -> WriteResult; new file only, re-verified
    plan.apply(now_ms=None)                                   # -> ApplyResult; Kestrel-style crash-safe install
    plan.apply_steps()                                        # the step labels (for fail_at / progress)

    for stream, chunk in qdump.qdump(paths, now_ms=..., quiet=False, dump_contents=False, raw=False,
                                     queue_state=False):      # qdump.sh -q / -d / -A / -Q
        ...   # stream: "out" (str), "err" (str), "raw" (bytes, -A)

    codes.KESTREL_CODES                                       # KQ- finding codes (severity, meaning)

Verdicts (``wqtool.engine.findings.Verdict``): torn tail of the live file; corrupt for damage followed by valid
data, damage in a rotated file, negative / absurd sizes; invalid history for an open xid reused (a history Kestrel
cannot represent).
"""
