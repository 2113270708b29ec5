/* the scan: framing, CRC and the job state machine over one segment, and its per-record statistics (part of wqtool.engine.workq._kernel: a unity build, included by ../_kernel.c in order) */


/* What stats needs of every record (engine.stats.RecordStats): records and bytes per command, first and last
   record time, the distinct job ids. The ids are appended as they come (cheap: no random access per record) and
   sorted and made unique whenever the list doubles past what the last pass left, and on demand: memory follows the
   distinct ids, 16 bytes each (x2 at most). */
typedef struct {
    uint64_t hi, lo;                    /* the id, big-endian: sorting these sorts the ids */
} IdKey;

typedef struct {
    PyObject_HEAD
    uint64_t records[9], bytes[9];
    i128 tmin, tmax;
    int have_t;
    IdKey *ids;
    size_t n, cap, uniq;                /* ids[0:uniq] sorted and unique when uniq == n */
} ScanStats;

static PyTypeObject ScanStatsType;

static int idkey_cmp(const void *a, const void *b)
{
    const IdKey *x = a, *y = b;
    if (x->hi != y->hi)
        return x->hi < y->hi ? -1 : 1;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return 0;
}

/* sort ids[0:n] (bucketed by their first two bytes), drop duplicates */
static int ss_unique(ScanStats *s)
{
    if (s->uniq == s->n)
        return 0;
    size_t n = s->n;
    IdKey *tmp = PyMem_Malloc(n * sizeof(IdKey));
    size_t *cnt = PyMem_Calloc(65537, sizeof(size_t));
    if (tmp == NULL || cnt == NULL) {
        PyMem_Free(tmp);
        PyMem_Free(cnt);
        PyErr_NoMemory();
        return -1;
    }
    for (size_t k = 0; k < n; k++)
        cnt[(s->ids[k].hi >> 48) + 1]++;
    for (size_t i = 1; i <= 65536; i++)
        cnt[i] += cnt[i - 1];
    for (size_t k = 0; k < n; k++)
        tmp[cnt[s->ids[k].hi >> 48]++] = s->ids[k];
    size_t start = 0, w = 0;
    for (size_t i = 0; i < 65536; i++) {
        size_t e = cnt[i];
        if (e - start > 1)
            qsort(tmp + start, e - start, sizeof(IdKey), idkey_cmp);
        for (size_t k = start; k < e; k++)
            if (w == 0 || idkey_cmp(&tmp[k], &s->ids[w - 1]) != 0)
                s->ids[w++] = tmp[k];
        start = e;
    }
    PyMem_Free(tmp);
    PyMem_Free(cnt);
    s->n = s->uniq = w;
    return 0;
}

static int ss_add_id(ScanStats *s, const uint8_t *id)
{
    if (s->n == s->cap) {
        if (s->n >= 2 * s->uniq + (1u << 20) && ss_unique(s) < 0)
            return -1;
        if (s->n == s->cap && grow((void **)&s->ids, &s->cap, s->n + 1, sizeof(IdKey), 4096) < 0)
            return -1;
    }
    s->ids[s->n].hi = load_be64(id);
    s->ids[s->n].lo = load_be64(id + 8);
    s->n++;
    return 0;
}

static PyObject *ss_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    if (!_PyArg_NoKeywords("ScanStats", kw) || !PyArg_ParseTuple(args, ":ScanStats"))
        return NULL;
    return type->tp_alloc(type, 0);
}

static void ss_dealloc(ScanStats *s)
{
    PyMem_Free(s->ids);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyObject *ss_u64list(const uint64_t *v) { return sa_u64list(v, 9); }   /* series.c */

static PyObject *ss_records(ScanStats *s, PyObject *u) { return ss_u64list(s->records); }
static PyObject *ss_bytes(ScanStats *s, PyObject *u) { return ss_u64list(s->bytes); }
static PyObject *ss_first(ScanStats *s, PyObject *u)
{
    if (!s->have_t)
        Py_RETURN_NONE;
    return i128_obj(s->tmin);
}
static PyObject *ss_last(ScanStats *s, PyObject *u)
{
    if (!s->have_t)
        Py_RETURN_NONE;
    return i128_obj(s->tmax);
}
static PyObject *ss_distinct(ScanStats *s, PyObject *u)
{
    if (ss_unique(s) < 0)
        return NULL;
    return PyLong_FromSize_t(s->n);
}

static PyObject *ss_ids(ScanStats *s, PyObject *u)
{
    if (ss_unique(s) < 0)
        return NULL;
    PyObject *out = PySet_New(NULL);
    for (size_t i = 0; out && i < s->n; i++) {
        uint8_t id[JOB_ID_SIZE];
        for (int k = 0; k < 8; k++) {
            id[k] = (uint8_t)(s->ids[i].hi >> (56 - 8 * k));
            id[8 + k] = (uint8_t)(s->ids[i].lo >> (56 - 8 * k));
        }
        PyObject *b = PyBytes_FromStringAndSize((const char *)id, JOB_ID_SIZE);
        if (b == NULL || PySet_Add(out, b) < 0) {
            Py_XDECREF(b);
            Py_CLEAR(out);
            break;
        }
        Py_DECREF(b);
    }
    return out;
}

static PyObject *ss_packed_ids(ScanStats *s, PyObject *u)
{
    if (ss_unique(s) < 0)
        return NULL;
    if (s->n > (size_t)PY_SSIZE_T_MAX / JOB_ID_SIZE)
        return PyErr_NoMemory();
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(s->n * JOB_ID_SIZE));
    if (out == NULL)
        return NULL;
    uint8_t *p = (uint8_t *)PyBytes_AS_STRING(out);
    for (size_t i = 0; i < s->n; i++, p += JOB_ID_SIZE)
        for (int k = 0; k < 8; k++) {
            p[k] = (uint8_t)(s->ids[i].hi >> (56 - 8 * k));
            p[8 + k] = (uint8_t)(s->ids[i].lo >> (56 - 8 * k));
        }
    return out;
}

static PyObject *ss_add_ids(ScanStats *s, PyObject *arg)
{
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0)
        return NULL;
    if (b.len % JOB_ID_SIZE) {
        PyBuffer_Release(&b);
        PyErr_SetString(PyExc_ValueError, "ScanStats.add_ids: packed ids are 16 bytes each");
        return NULL;
    }
    const uint8_t *p = b.buf;
    for (Py_ssize_t i = 0; i < b.len; i += JOB_ID_SIZE)
        if (ss_add_id(s, p + i) < 0) {
            PyBuffer_Release(&b);
            return NULL;
        }
    PyBuffer_Release(&b);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(ss_add_doc, "add(cmd, nbytes, time_ns, job_id): count one record the reference path read for the scan\n"
"(cmd 1..8; job_id: 16 bytes or None).");

static PyObject *ss_add(ScanStats *s, PyObject *args)
{
    int c;
    unsigned long long nb;
    PyObject *tobj, *jid;
    if (!PyArg_ParseTuple(args, "iKOO:add", &c, &nb, &tobj, &jid))
        return NULL;
    if (c < 1 || c > CMD_MAX) {
        PyErr_SetString(PyExc_ValueError, "ScanStats.add: not a command type");
        return NULL;
    }
    i128 tr;
    if (as_i128(tobj, &tr) < 0)
        return NULL;
    if (jid != Py_None) {
        if (!PyBytes_Check(jid) || PyBytes_GET_SIZE(jid) != JOB_ID_SIZE) {
            PyErr_SetString(PyExc_TypeError, "a job id is 16 bytes");
            return NULL;
        }
        if (ss_add_id(s, (const uint8_t *)PyBytes_AS_STRING(jid)) < 0)
            return NULL;
    }
    s->records[c]++;
    s->bytes[c] += nb;
    if (!s->have_t || tr < s->tmin)
        s->tmin = tr;
    if (!s->have_t || tr > s->tmax)
        s->tmax = tr;
    s->have_t = 1;
    Py_RETURN_NONE;
}

static PyMethodDef ss_methods[] = {
    {"add", (PyCFunction)ss_add, METH_VARARGS, ss_add_doc},
    {"records", (PyCFunction)ss_records, METH_NOARGS, "Records per command type (index = type, 0 unused)."},
    {"bytes", (PyCFunction)ss_bytes, METH_NOARGS, "Bytes per command type."},
    {"first_ns", (PyCFunction)ss_first, METH_NOARGS, "The earliest record time (ns), or None."},
    {"last_ns", (PyCFunction)ss_last, METH_NOARGS, "The latest record time (ns), or None."},
    {"distinct", (PyCFunction)ss_distinct, METH_NOARGS, "How many distinct job ids."},
    {"ids", (PyCFunction)ss_ids, METH_NOARGS, "The distinct job ids, as a set."},
    {"packed_ids", (PyCFunction)ss_packed_ids, METH_NOARGS,
     "The distinct job ids, sorted, 16 bytes each in one bytes object (what another ScanStats's add_ids takes)."},
    {"add_ids", (PyCFunction)ss_add_ids, METH_O,
     "add_ids(packed): count the job ids of packed_ids() (of another log) as distinct ids of this one."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ScanStatsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "wqtool.engine.workq._kernel.ScanStats",
    .tp_basicsize = sizeof(ScanStats),
    .tp_dealloc = (destructor)ss_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Per-record statistics the scan collects (see jobtable.PyScanStats).",
    .tp_methods = ss_methods,
    .tp_new = ss_new,
};

typedef struct {
    PyObject *mod;          /* wqtool.engine.workq.fastreplay, looked up on first need */
    Py_ssize_t limit;       /* findings kept (CappedFindings.limit); -1: all */
} Ctx;

static PyObject *ctx_mod(Ctx *cx)
{
    if (cx->mod == NULL)
        cx->mod = PyImport_ImportModule("wqtool.engine.workq.fastreplay");
    return cx->mod;
}

/* out((seg_no, ctor(path, pos, index, _CMDS[c], [log_exp,] jid))); 0 ok, -1 error */
static int add_finding(Ctx *cx, PyObject *findings, const char *ctor, PyObject *path, Py_ssize_t pos,
                       long long index, int c, PyObject *log_exp, PyObject *jid, PyObject *seg_no)
{
    int rc = -1;
    PyObject *fn = NULL, *cmds = NULL, *co = NULL, *cmd = NULL, *po = NULL, *io = NULL, *f = NULL, *t = NULL;
    int over_cap = 0;
    if (cx->limit >= 0 && PyList_GET_SIZE(findings) >= cx->limit) {
        /* the list holds `limit` findings or more: is the as-of quota full (CappedFindings.full)? Other quotas
           (errors, notes) may have filled the list while fewer as-of findings are kept */
        PyObject *full = PyObject_CallMethod(findings, "full", NULL);
        if (full == NULL)
            return -1;
        over_cap = PyObject_IsTrue(full);
        Py_DECREF(full);
        if (over_cap < 0)
            return -1;
    }
    if (over_cap) {
        /* over the cap: only counted, with its place and expiry (CappedFindings.over: an as-of finding's
           summary), the Finding is never built */
        PyObject *r = PyObject_CallMethod(findings, "over", "sOnO",
                                          log_exp ? "WQ-ADD-EXPIRED" : "WQ-UNKNOWN-JOB", path, pos,
                                          log_exp ? log_exp : Py_None);
        if (r == NULL)
            return -1;
        Py_DECREF(r);
        return 0;
    }
    PyObject *m = ctx_mod(cx);
    if (m == NULL)
        return -1;
    if (!(fn = PyObject_GetAttrString(m, ctor)) || !(cmds = PyObject_GetAttrString(m, "_CMDS")) ||
        !(co = PyLong_FromLong(c)) || !(cmd = PyObject_GetItem(cmds, co)) || !(po = PyLong_FromSsize_t(pos)) ||
        !(io = PyLong_FromLongLong(index)))
        goto done;
    if (log_exp)
        f = PyObject_CallFunctionObjArgs(fn, path, po, io, cmd, log_exp, jid, NULL);
    else
        f = PyObject_CallFunctionObjArgs(fn, path, po, io, cmd, jid, NULL);
    if (f == NULL || (t = PyTuple_Pack(2, seg_no, f)) == NULL)
        goto done;
    if (PyList_CheckExact(findings)) {
        rc = PyList_Append(findings, t);
    } else {
        PyObject *r = PyObject_CallMethod(findings, "append", "(O)", t);  /* "(O)": t is a tuple */
        rc = r ? 0 : -1;
        Py_XDECREF(r);
    }
done:
    Py_XDECREF(fn);
    Py_XDECREF(cmds);
    Py_XDECREF(co);
    Py_XDECREF(cmd);
    Py_XDECREF(po);
    Py_XDECREF(io);
    Py_XDECREF(f);
    Py_XDECREF(t);
    return rc;
}

/* =========================================================================================== scan */

/* where the job id of the record at `at` lies (SIZE of 1 or 2 bytes; -1 otherwise or past end), and where the record
   after it starts: for prefetching only (the scan checks every record itself) */
static inline Py_ssize_t peek_id(const unsigned char *d, Py_ssize_t at, Py_ssize_t end, Py_ssize_t *next)
{
    if (at < 0 || end - at < FRAME_MIN + 1 + PAYLOAD_MIN)
        return -1;
    size_t s = d[at + GO_TIME_SIZE];
    Py_ssize_t q = at + GO_TIME_SIZE + 1;
    if (s >= 0x80) {
        if (d[q] >= 0x80)
            return -1;
        s = (s & 0x7F) | ((size_t)d[q] << 7);
        q++;
    }
    if (s < PAYLOAD_MIN || (size_t)(end - q) < s + CRC_SIZE)
        return -1;
    *next = q + (Py_ssize_t)s + CRC_SIZE;
    return q + 1;
}

static long long attr_ll(PyObject *fr, const char *name, int *err)
{
    PyObject *o = PyObject_GetAttrString(fr, name);
    if (o == NULL) {
        *err = 1;
        return 0;
    }
    long long v = PyLong_AsLongLong(o);
    Py_DECREF(o);
    if (v == -1 && PyErr_Occurred())
        *err = 1;
    return v;
}

PyDoc_STRVAR(scan_doc,
"scan(fr, data, pos, end, path, index, seg_no, zone_warned) -> (index, pos)\n\n"
"The kernel's loop over one segment: frame, check and replay the records of data[pos:end] into fr.jobs (a\n"
"JobTable) and fr.stats (a ScanStats, or None), with the findings it can make itself (WQ-UNKNOWN-JOB,\n"
"WQ-ADD-EXPIRED) appended to fr.findings. It stops at the first record it does not take whole — damage (a\n"
"frame the reference reader reports), a record the reference replay must judge (an undecodable payload, an\n"
"impossible history, an unusual field), the first record with a zone offset in the segment while zone_warned\n"
"is false — and returns (index, pos) of that record, nothing of it applied; pos == end: the segment is done.\n"
"fastreplay.FastReplay hands that one record to the reference (reader.py, replay.py) and calls scan again.");

/* A record is taken here only when every check the reference makes passes; any doubt returns it to Python
   (`goto help`) before anything of it is applied or counted. */
static PyObject *k_scan(PyObject *self, PyObject *args)
{
    PyObject *fr, *data, *path, *seg_no;
    Py_ssize_t pos, end;
    long long index;
    int zone_warned;
    if (!PyArg_ParseTuple(args, "OOnnOLOp:scan", &fr, &data, &pos, &end, &path, &index, &seg_no, &zone_warned))
        return NULL;

    Ctx cx = {NULL, -1};
    Py_buffer view;
    view.obj = NULL;
    PyObject *jobs_o = NULL, *stats_o = NULL, *findings = NULL, *keep_o = NULL, *asof_o = NULL, *series_o = NULL;
    PyObject *key = NULL, *ret = NULL;
    long long applied = 0;
    int err = 0;

    if (!(jobs_o = PyObject_GetAttrString(fr, "jobs")) || !(stats_o = PyObject_GetAttrString(fr, "stats")) ||
        !(findings = PyObject_GetAttrString(fr, "findings")) || !(keep_o = PyObject_GetAttrString(fr, "keep")) ||
        !(asof_o = PyObject_GetAttrString(fr, "as_of_ns")) || !(series_o = PyObject_GetAttrString(fr, "series")))
        goto fail;
    if (!PyObject_TypeCheck(jobs_o, &JobTableType)) {
        PyErr_SetString(PyExc_TypeError, "FastReplay.jobs must be a _kernel.JobTable");
        goto fail;
    }
    if (stats_o != Py_None && !PyObject_TypeCheck(stats_o, &ScanStatsType)) {
        PyErr_SetString(PyExc_TypeError, "FastReplay.stats must be None or a _kernel.ScanStats");
        goto fail;
    }
    if (series_o != Py_None && !PyObject_TypeCheck(series_o, &SeriesAccType)) {
        PyErr_SetString(PyExc_TypeError, "FastReplay.series must be None or a _kernel.SeriesAcc");
        goto fail;
    }
    JobTable *t = (JobTable *)jobs_o;
    SeriesAcc *acc = series_o == Py_None ? NULL : (SeriesAcc *)series_o;
    ScanStats *stats = stats_o == Py_None ? NULL : (ScanStats *)stats_o;
    int keep = PyObject_IsTrue(keep_o);
    if (keep < 0)
        goto fail;
    unsigned long seg = PyLong_AsUnsignedLong(seg_no);
    if (seg == (unsigned long)-1 && PyErr_Occurred())
        goto fail;
    if (seg > 0xFFFFFFFFul) {
        PyErr_SetString(PyExc_OverflowError, "seg_no too large");
        goto fail;
    }
    if (!PyList_CheckExact(findings)) {   /* a CappedFindings: its limit (None: keep all) */
        PyObject *lim = PyObject_GetAttrString(findings, "limit");
        if (lim == NULL)
            PyErr_Clear();
        else {
            if (lim != Py_None) {
                cx.limit = PyLong_AsSsize_t(lim);
                if (cx.limit == -1 && PyErr_Occurred()) {
                    Py_DECREF(lim);
                    goto fail;
                }
            }
            Py_DECREF(lim);
        }
    }
    long long part = attr_ll(fr, "part", &err);
    long long nparts = err ? 0 : attr_ll(fr, "nparts", &err);
    /* a share by job-id range (id_hi > 0): the jobs whose id's first two bytes, big-endian, are in [id_lo, id_hi)
       (then the shares' jobs are consecutive in id order); else by the id's last byte mod nparts */
    long long id_lo = err ? 0 : attr_ll(fr, "id_lo", &err);
    long long id_hi = err ? 0 : attr_ll(fr, "id_hi", &err);
    /* the CRC range: only records starting at a segment offset in [crc_lo, crc_hi) are CRC-checked here; the others
       are trusted (a chained share: another share checks them, and any share that meets a crc mismatch makes the
       driver read the log whole, fastreplay.Damaged) */
    long long crc_lo = err ? 0 : attr_ll(fr, "crc_lo", &err);
    long long crc_hi = err ? 0 : attr_ll(fr, "crc_hi", &err);
    if (err)
        goto fail;
    const int ranged = nparts > 1 && id_hi > 0;
    /* as_of as int64 when it is one; otherwise compare as Python objects (rare) */
    int asof_fast = 0;
    i128 asof = 0;
    if (PyLong_Check(asof_o)) {
        int ovf = 0;
        long long a = PyLong_AsLongLongAndOverflow(asof_o, &ovf);
        if (a == -1 && PyErr_Occurred())
            goto fail;
        if (!ovf) {
            asof_fast = 1;
            asof = a;
        }
    }

    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        goto fail;
    if (end > view.len || pos < HEADER_SIZE) {
        PyErr_SetString(PyExc_ValueError, "scan: pos before the first record or end past the end of data");
        goto fail;
    }
    const unsigned char *d = (const unsigned char *)view.buf;
    /* the index is the scan's cost (cache misses): the slot of the job two records ahead and the record of the
       job one ahead are loaded while this one is worked on; `hnext` carries the next record's id hash */
    uint64_t hcur = 0, hnext = 0;
    Py_ssize_t idcur = -1, idnext = -1;

    while (pos < end) {
        hcur = hnext;
        idcur = idnext;
        idnext = -1;
        /* framing: TIME (version 1) | SIZE (a varint of at most 4 bytes here, <= SIZE_CAP; a longer one, valid only
           when overlong, goes to the reference reader) | PAYLOAD | CRC-32C */
        if (end - pos < FRAME_MIN || d[pos] != GO_TIME_VERSION)
            goto help;
        uint64_t s = d[pos + GO_TIME_SIZE];
        Py_ssize_t q;
        if (s < 0x80) {
            q = pos + GO_TIME_SIZE + 1;
        } else {
            if (uvar(d, pos + GO_TIME_SIZE, pos + GO_TIME_SIZE + 4, &s, &q) < 0 || s > SIZE_CAP)
                goto help;
        }
        Py_ssize_t pend = q + (Py_ssize_t)s;
        Py_ssize_t nxt = pend + CRC_SIZE;
        if (nxt > end || s < PAYLOAD_MIN)
            goto help;
        /* every partition checks every CRC in its CRC range (all of it but in a chain): all of them resynchronise
           on the same damage */
        if (pos >= crc_lo && pos < crc_hi && crc32c(d + pos, (size_t)(pend - pos)) != be32(d + pend))
            goto help;
        if (!go_time_is_utc(d + pos) && !zone_warned)
            goto help;                                /* the segment's first zone offset: the reader's WQ-ZONE */
#define NOT_MINE(id) (nparts > 1 && (ranged ? ((long long)((id)[0] << 8 | (id)[1]) < id_lo ||               \
                                                (long long)((id)[0] << 8 | (id)[1]) >= id_hi)              \
                                             : (long long)(id)[JOB_ID_SIZE - 1] % nparts != part))
        if (NOT_MINE(d + q + 1)) {    /* another share's record: framed only (its CRC too, in this share's range) */
            if (nxt + 1024 < end)       /* the framing walk waits on memory: 59 -> 45 ms of CPU over 3.2 M records */
                PREFETCH(d + nxt + 1024);
            index++;
            pos = nxt;
            continue;
        }
        {   /* the next records' table slots, for this share's jobs only (another share's record is skipped) */
            Py_ssize_t n2 = -1, n3;
            idnext = peek_id(d, nxt, end, &n2);
            if (idnext >= 0 && NOT_MINE(d + idnext))
                idnext = -1;
            if (idnext >= 0) {
                hnext = id_hash(d + idnext);
                jt_prefetch_rec(t, hnext);
            }
            if (n2 >= 0) {
                Py_ssize_t id2 = peek_id(d, n2, end, &n3);
                if (id2 >= 0 && !NOT_MINE(d + id2))
                    jt_prefetch(t, d + id2);
            }
        }
#undef NOT_MINE
        if (idcur != q + 1)
            hcur = id_hash(d + q + 1);
        int c = d[q];
        const uint8_t *jid = d + q + 1;
        /* the series' view of the record (sa_record): its job's state before and after, -1 not live; where its
           queue name is; the finding it made (1 unknown job, 2 expired add) */
        int sb = -1, sa = -1, sfind = 0;
        const JobRec *sj = NULL;
        const uint8_t *sname = NULL;
        size_t snlen = 0;
        uint8_t sbuf[MAX_NAME_LEN + 1];
        if (c >= CMD_DELETE) {                        /* delete, expire, start-attempt, timeout-attempt */
            if (c > CMD_MAX || s != PAYLOAD_MIN)
                goto help;
            size_t slot;
            Py_ssize_t ix = jt_find_h(t, jid, hcur, &slot);
            if (ix < 0) {
                if ((stats != NULL && ss_add_id(stats, jid) < 0) ||
                    !(key = PyBytes_FromStringAndSize((const char *)jid, JOB_ID_SIZE)) ||
                    add_finding(&cx, findings, "unknown_job_finding", path, pos, index, c, NULL, key, seg_no) < 0)
                    goto fail;
                sfind = 1;
            } else if (c == CMD_DELETE || c == CMD_EXPIRE) {
                if (acc != NULL) {                    /* the name, before the table may compact */
                    const JobRec *j = &t->jobs[ix];
                    const NameRec *nr = &t->names[j->name];
                    sb = j->state;
                    snlen = nr->len <= MAX_NAME_LEN ? nr->len : MAX_NAME_LEN;
                    memcpy(sbuf, t->narena + nr->off, snlen);
                    sname = sbuf;
                }
                if (jt_delete(t, ix, slot) < 0)
                    goto fail;
                applied++;
            } else {
                JobRec *j = &t->jobs[ix];
                int st = j->state;
                sb = st;
                sj = j;
                if (c == CMD_START_ATTEMPT) {
                    if (st == ST_LEASED || st == ST_COMPLETED || st == ST_FAILED)
                        goto help;                    /* WQ-ALREADY-LEASED / WQ-ALREADY-PROCESSED */
                    if (j->ma && j->attempts >= j->ma)
                        goto help;                    /* WQ-MAX-ATTEMPTS */
                    if (j->attempts == 0xFFFFFFFFu)
                        goto help;
                    j->state = ST_LEASED;
                    j->attempts++;
                    applied++;
                } else {                              /* timeout-attempt */
                    applied++;
                    if (st != ST_COMPLETED && st != ST_FAILED) {
                        if (j->ma && j->attempts >= j->ma) {
                            j->state = ST_FAILED;
                            if (keep && res_set(t, j, "", 0) < 0)
                                goto fail;
                        } else {
                            j->state = ST_PENDING;
                        }
                    }
                }
                t->ver++;
            }
            if (sj != NULL)
                sa = sj->state;
        } else if (c == CMD_COMPLETE || c == CMD_FAIL) {
            uint64_t r = d[q + PAYLOAD_MIN];
            Py_ssize_t rs;
            if (r < 0x80) {
                rs = q + 2 + JOB_ID_SIZE;
            } else if (uvar(d, q + PAYLOAD_MIN, pend, &r, &rs) < 0) {
                goto help;
            }
            if (rs > pend || r != (uint64_t)(pend - rs) || r > MAX_RESULT_BYTES)
                goto help;
            if ((jid[6] >> 4) != 4 || (jid[8] & 0xC0) != 0x80)
                goto help;                            /* WQ-INVALID-ID */
            size_t slot;
            Py_ssize_t ix = jt_find_h(t, jid, hcur, &slot);
            if (ix < 0) {
                if ((stats != NULL && ss_add_id(stats, jid) < 0) ||
                    !(key = PyBytes_FromStringAndSize((const char *)jid, JOB_ID_SIZE)) ||
                    add_finding(&cx, findings, "unknown_job_finding", path, pos, index, c, NULL, key, seg_no) < 0)
                    goto fail;
                sfind = 1;
            } else {
                JobRec *j = &t->jobs[ix];
                if (j->state == ST_COMPLETED || j->state == ST_FAILED)
                    goto help;                        /* WQ-DUPLICATE-RESULT */
                sb = j->state;
                sj = j;
                j->state = c == CMD_COMPLETE ? ST_COMPLETED : ST_FAILED;
                sa = j->state;
                if (keep && res_set(t, j, d + rs, (size_t)r) < 0)
                    goto fail;
                t->ver++;
                applied++;
            }
        } else if (c == CMD_ADD || c == CMD_SCHEDULE) {
            Py_ssize_t lim = pend - 2 * GO_TIME_SIZE; /* where the two times must start */
            Py_ssize_t p = q + PAYLOAD_MIN;
            uint64_t n, ttr, ttl, zz, ma, mf, plen;
            if (ivar(d, &p, lim, &n) < 0)
                goto help;
            if (n > (uint64_t)(lim - p))
                goto help;
            Py_ssize_t pname = p;
            p += (Py_ssize_t)n;
            if (ivar(d, &p, lim, &ttr) < 0 || ivar(d, &p, lim, &ttl) < 0 || ivar(d, &p, lim, &zz) < 0 ||
                ivar(d, &p, lim, &ma) < 0 || ivar(d, &p, lim, &mf) < 0 || ivar(d, &p, lim, &plen) < 0)
                goto help;
            if (plen != (uint64_t)(lim - p))
                goto help;
            Py_ssize_t pl0 = p;
            p = lim;
            if (d[p] != GO_TIME_VERSION || d[p + GO_TIME_SIZE] != GO_TIME_VERSION)
                goto help;
            i128 created = go_time_ns(d + p + GO_TIME_SIZE);
            i128 sched = go_time_ns(d + p);
            i128 log_exp = (c == CMD_ADD ? created : sched) + (i128)ttl * NS_PER_MS;
            int expired;
            if (asof_fast) {
                expired = log_exp <= asof;
            } else {
                PyObject *le = pylong_i128(log_exp);
                if (le == NULL)
                    goto fail;
                expired = PyObject_RichCompareBool(le, asof_o, Py_LE);
                Py_DECREF(le);
                if (expired < 0)
                    goto fail;
            }
            if (expired) {
                if (stats != NULL && ss_add_id(stats, jid) < 0)
                    goto fail;
                PyObject *le = pylong_i128(log_exp);
                if (le == NULL || !(key = PyBytes_FromStringAndSize((const char *)jid, JOB_ID_SIZE))) {
                    Py_XDECREF(le);
                    goto fail;
                }
                int r = add_finding(&cx, findings, "expired_finding", path, pos, index, c, le, key, seg_no);
                Py_DECREF(le);
                if (r < 0)
                    goto fail;
                sfind = 2;
            } else {
                /* prio = (zz >> 1) ^ -(zz & 1), zz < 2**63 */
                long long prio = (long long)(zz >> 1) ^ -(long long)(zz & 1);
                if ((jid[6] >> 4) != 4 || (jid[8] & 0xC0) != 0x80 || !name_ok(d + pname, (Py_ssize_t)n) ||
                    ttr < MIN_TTR_MS || ttr > MAX_TTR_MS || ttl < MIN_TTL_MS || ttl > MAX_TTL_MS ||
                    plen > MAX_PAYLOAD_BYTES || prio < INT32_MIN || prio > INT32_MAX || ma > MAX_ATTEMPTS_MAX)
                    goto help;                        /* WQ-INVALID-*, WQ-FIELD-TRUNCATED */
                size_t slot;
                if (jt_find_h(t, jid, hcur, &slot) >= 0)
                    goto help;                        /* WQ-DUPLICATE-JOB */
                /* the compact state keeps times as int64 ns (years 1678..2262) */
                if (created < (i128)INT64_MIN || created > (i128)INT64_MAX || log_exp < (i128)INT64_MIN ||
                    log_exp > (i128)INT64_MAX ||
                    (c == CMD_SCHEDULE && (sched < (i128)INT64_MIN || sched > (i128)INT64_MAX)))
                    goto help;
                if (stats != NULL && ss_add_id(stats, jid) < 0)
                    goto fail;
                uint32_t name;
                if (name_ref(t, d + pname, (size_t)n, &name) < 0)
                    goto fail;
                JobRec *j = jt_insert(t, jid, slot);
                if (j == NULL) {
                    name_unref(t, name);
                    goto fail;
                }
                j->kind = (uint8_t)c;
                j->name = name;
                j->ttr = (uint32_t)ttr;
                j->ttl = (uint32_t)ttl;
                j->prio = (int32_t)prio;
                j->ma = (uint8_t)ma;
                j->mf = (uint8_t)(mf & 0xFF);
                j->created = (int64_t)created;
                j->sched = c == CMD_SCHEDULE ? (int64_t)sched : 0;
                j->logexp = (int64_t)log_exp;
                j->plen = (uint32_t)plen;
                j->pcrc = keep ? crc32c(d + pl0, (size_t)plen) : 0;   /* the digest's: only a kept state */
                j->seg = (uint32_t)seg;
                j->off = (uint64_t)pos;
                applied++;
                sa = j->state;
                sj = j;
            }
        } else {
            goto help;                                /* WQ-UNKNOWN-CMD */
        }
        if (acc != NULL) {                            /* the record is taken: its place in the series */
            i128 tr = go_time_ns(d + pos);
            int64_t base = 0;
            uint32_t att = 0;
            if (sj != NULL) {                         /* still live: its row is where it was */
                const NameRec *nr = &t->names[sj->name];
                sname = (const uint8_t *)t->narena + nr->off;
                snlen = nr->len;
                base = sj->kind == CMD_SCHEDULE ? sj->sched : sj->created;
                att = sj->attempts;
            }
            if (sa_record(acc, c, tr, sb, sa, att, sname, snlen, base, jid) < 0 ||
                (sfind && sa_finding(acc, sfind == 1 ? "WQ-UNKNOWN-JOB" : "WQ-ADD-EXPIRED", "warning", path, pos,
                                     1) < 0))
                goto fail;
        }
        if (stats != NULL) {                          /* the record is taken: what stats needs of it */
            i128 tr = go_time_ns(d + pos);
            stats->records[c]++;
            stats->bytes[c] += (uint64_t)(nxt - pos);
            if (!stats->have_t || tr < stats->tmin)
                stats->tmin = tr;
            if (!stats->have_t || tr > stats->tmax)
                stats->tmax = tr;
            stats->have_t = 1;
            /* the distinct job ids: added above for adds and for records of jobs not in the table (a job in the
               table came from an add of this pass, whose id is in already) */
        }
        Py_CLEAR(key);
        index++;
        pos = nxt;
    }

help:
    PyBuffer_Release(&view);
    view.obj = NULL;
    {
        PyObject *a0 = PyObject_GetAttrString(fr, "applied"), *ao = NULL, *a1 = NULL;
        if (a0 && (ao = PyLong_FromLongLong(applied)) && (a1 = PyNumber_Add(a0, ao)) &&
            PyObject_SetAttrString(fr, "applied", a1) == 0)
            ret = Py_BuildValue("(Ln)", index, pos);
        Py_XDECREF(a0);
        Py_XDECREF(ao);
        Py_XDECREF(a1);
    }
    goto done;

fail:
    if (view.obj)
        PyBuffer_Release(&view);
done:
    Py_XDECREF(key);
    Py_XDECREF(jobs_o);
    Py_XDECREF(stats_o);
    Py_XDECREF(findings);
    Py_XDECREF(keep_o);
    Py_XDECREF(asof_o);
    Py_XDECREF(series_o);
    Py_XDECREF(cx.mod);
    return ret;
}
