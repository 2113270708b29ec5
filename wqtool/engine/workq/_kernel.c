/*
 * wqtool.engine.workq._kernel — the workq kernel in C: the job state machine's rules once in C (the reference is
 * replay.py, once in Python), the compact job table, the digest and the JSON rows. One module, one translation
 * unit; its parts, by job, are included below in order:
 *
 *   kernel/consts.h    GENERATED from wqtool/formats/ (scripts/gen_kernel_header.py): opcodes, job states, limits,
 *                      labels — never a literal in the C code
 *   kernel/util.h      bounded varints, queue names, big-endian loads, 128-bit ints to Python
 *   kernel/crc.c       CRC-32C: SSE4.2 crc32 instructions when the CPU has them (runtime check), else slice-by-8
 *   kernel/jobtable.c  JobTable: the live jobs as fixed-size records, ids indexed, names interned (jobtable.py)
 *   kernel/text.h      the number, time and hex writers of the digest lines and rows
 *   kernel/digest.c    digest_text(jobs) == b"".join(replay.digest_line(j) for j in jobs); JobTable.digest
 *   kernel/rows.c      JobTable.encode_rows (replay's JSON rows), encode_records (dump's JSON rows)
 *   kernel/columns.c   record_columns: dump's record rows as Arrow column buffers (the Spark workq source)
 *   kernel/pack.c      JobTable.pack_plan / pack_segment: the packed log's layout and records (pack.py's rules)
 *   kernel/series.c    SeriesAcc: the time series of report / stats --chart / --timeline, binned as the scan
 *                      takes each record (engine/series.py's SeriesCollector, workq/series.py's WorkqProbe)
 *   kernel/scan.c      scan(fr, data, pos, end, path, index, seg_no, zone_warned) -> (index, pos): frame, check
 *                      and replay one segment; a record it does not take whole (damage, a refused or unusual
 *                      record) comes back to fastreplay.FastReplay at its offset, which has the reference read it
 *                      and calls scan again past it; ScanStats, what stats needs of every record
 *   kernel/seek.c      walk(data, pos, end, ...): scan's framing and CRC without the replay — the records' time span
 *                      (--as-of last|first), record numbers up to an offset and dump's selection (fastreplay.walk)
 *
 * tests/engine/workq/test_kernel_c.py holds scan == reference (reader + replay) on random and hostile input;
 * test_digest_c.py and test_rows_c.py the digest and rows; test_kernel_header.py the generated header.
 * Needs __int128 (times in ns since year 1 overflow int64); where it is missing the build fails and the
 * package runs the reference path (setup.py builds this extension with optional=True).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "../_cgrow.h"
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#ifndef __SIZEOF_INT128__
#error "wqtool.engine.workq._kernel needs __int128; the pure-Python kernel is used instead"
#endif

typedef __int128 i128;
typedef unsigned __int128 u128;

#include "kernel/consts.h"   /* generated from wqtool/formats/ by scripts/gen_kernel_header.py */
#include "kernel/util.h"
#include "kernel/crc.c"
#include "kernel/jobtable.c"
#include "kernel/text.h"
#include "kernel/digest.c"
#include "kernel/rows.c"
#include "kernel/columns.c"
#include "kernel/pack.c"

static PyMethodDef jt_methods[] = {
    {"get_row", (PyCFunction)jt_get_row, METH_O, "The job's row (see jobtable.ROW), or None."},
    {"ids", (PyCFunction)jt_ids, METH_NOARGS, "The live ids, in insertion order."},
    {"sorted_ids", (PyCFunction)jt_sorted_ids, METH_NOARGS, "The live ids, sorted."},
    {"rows", (PyCFunction)jt_rows, METH_NOARGS, "[(id, *row)] in insertion order."},
    {"put", (PyCFunction)jt_put, METH_VARARGS, jt_put_doc},
    {"delete", (PyCFunction)jt_delete_m, METH_O, "Remove a job (KeyError if it is not live)."},
    {"note_counts", (PyCFunction)jt_note_counts, METH_NOARGS, "(live add-jobs, leased jobs)."},
    {"counts", (PyCFunction)jt_counts, METH_NOARGS, "([jobs per state], {queue: [jobs per state]})."},
    {"digest", (PyCFunction)jt_digest, METH_VARARGS, jt_digest_doc},
    {"encode_rows", (PyCFunction)jt_encode_rows, METH_VARARGS, jt_encode_rows_doc},
    {"memory", (PyCFunction)jt_memory, METH_NOARGS, "Bytes the table has allocated."},
    {"pack_plan", (PyCFunction)jt_pack_plan, METH_VARARGS, jt_pack_plan_doc},
    {"pack_segment", (PyCFunction)jt_pack_segment, METH_VARARGS, jt_pack_segment_doc},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods jt_as_seq = {
    .sq_length = (lenfunc)jt_len,
    .sq_contains = (objobjproc)jt_contains,
};

static PyTypeObject JobTableType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "wqtool.engine.workq._kernel.JobTable",
    .tp_basicsize = sizeof(JobTable),
    .tp_dealloc = (destructor)jt_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The live jobs of a replay as fixed-size C records (see jobtable.py).",
    .tp_methods = jt_methods,
    .tp_as_sequence = &jt_as_seq,
    .tp_new = jt_new,
};


#include "kernel/series.c"
#include "kernel/scan.c"
#include "kernel/seek.c"
#include "kernel/diff.c"   /* wqtool diff: two tables merged by id, the records of chosen jobs */

/* =========================================================================================== module */

static PyMethodDef methods[] = {
    {"scan", k_scan, METH_VARARGS, scan_doc},
    {"walk", k_walk, METH_VARARGS, walk_doc},
    {"digest_text", k_digest_text, METH_O, digest_text_doc},
    {"encode_records", k_encode_records, METH_VARARGS, encode_records_doc},
    {"record_columns", k_record_columns, METH_VARARGS, record_columns_doc},
    {"diff_tables", k_diff_tables, METH_VARARGS, diff_tables_doc},
    {"diff_walk", k_diff_walk, METH_VARARGS, diff_walk_doc},
    {"diff_first", k_diff_first, METH_VARARGS, diff_first_doc},
    {"format_ns", k_format_ns, METH_O, "engine's format_unix_ns(ns), in C (for the tests)."},
    {"crc32c", k_crc32c, METH_O, "CRC-32C of a buffer (the implementation scan uses)."},
    {"crc32c_sw", k_crc32c_sw, METH_O, "CRC-32C of a buffer with the slice-by-8 tables."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "wqtool.engine.workq._kernel",
    "Optional C implementation of FastReplay._scan and the compact job state (see fastreplay.py, jobtable.py), of\n"
    "replay.digest_line over many jobs, and of the JSON rows of replay and dump.", -1, methods, NULL, NULL, NULL, NULL,
};

/* random hash keys per process (os.urandom): ids in a hostile log cannot be aimed at one bucket */
static int seed_keys(void)
{
    PyObject *os = PyImport_ImportModule("os");
    const int want = (int)(sizeof hkey0 + sizeof hkey1);
    PyObject *b = os ? PyObject_CallMethod(os, "urandom", "i", want) : NULL;
    Py_XDECREF(os);
    if (b == NULL || !PyBytes_Check(b) || PyBytes_GET_SIZE(b) != want) {
        Py_XDECREF(b);
        return -1;
    }
    memcpy(&hkey0, PyBytes_AS_STRING(b), 8);
    memcpy(&hkey1, PyBytes_AS_STRING(b) + 8, 8);
    hkey0 |= 1;
    hkey1 |= 1;
    Py_DECREF(b);
    return 0;
}

PyMODINIT_FUNC PyInit__kernel(void)
{
    crc_init();
    name_init();
#if HAVE_HW_CRC
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) {
        crc32c = crc32c_hw;
        hw_crc = 1;
    }
#endif
    if (seed_keys() < 0 || PyType_Ready(&JobTableType) < 0 || PyType_Ready(&ScanStatsType) < 0 ||
        PyType_Ready(&SeriesAccType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (m == NULL)
        return NULL;
    PyObject *consts = Py_BuildValue("{s:i,s:i,s:i,s:K,s:K,s:L}", "SIZE_CAP", SIZE_CAP, "MAX_RESULT_BYTES",
                                     MAX_RESULT_BYTES, "MAX_PAYLOAD_BYTES", MAX_PAYLOAD_BYTES, "MAX_TTR_MS",
                                     (unsigned long long)MAX_TTR_MS, "MAX_TTL_MS", (unsigned long long)MAX_TTL_MS,
                                     "UNIX_TO_INTERNAL", (long long)UNIX_TO_INTERNAL);
    PyObject *labels = Py_BuildValue("{s:(sss),s:(sssss),s:(sssssssss)}", "kind", KIND_LABEL[0], KIND_LABEL[1],
                                     KIND_LABEL[2], "state", STATE_LABEL[0], STATE_LABEL[1], STATE_LABEL[2],
                                     STATE_LABEL[3], STATE_LABEL[4], "cmd", CMD_LABEL[0], CMD_LABEL[1], CMD_LABEL[2],
                                     CMD_LABEL[3], CMD_LABEL[4], CMD_LABEL[5], CMD_LABEL[6], CMD_LABEL[7],
                                     CMD_LABEL[8]);
    Py_INCREF(&JobTableType);
    Py_INCREF(&ScanStatsType);
    Py_INCREF(&SeriesAccType);
    if (consts == NULL || labels == NULL || PyModule_AddObject(m, "CONSTANTS", consts) < 0 ||
        PyModule_AddObject(m, "LABELS", labels) < 0 || PyModule_AddIntConstant(m, "HW_CRC", hw_crc) < 0 ||
        PyModule_AddIntConstant(m, "JOB_RECORD_SIZE", (long)sizeof(JobRec)) < 0 ||
        PyModule_AddObject(m, "JobTable", (PyObject *)&JobTableType) < 0 ||
        PyModule_AddObject(m, "ScanStats", (PyObject *)&ScanStatsType) < 0 ||
        PyModule_AddObject(m, "SeriesAcc", (PyObject *)&SeriesAccType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
