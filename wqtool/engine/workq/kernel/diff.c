/* wqtool diff's part of the kernel: two job tables joined by id, a record walk that stops at the records of
   chosen jobs, and the first byte where two buffers differ (part of wqtool.engine.workq._kernel: a unity build,
   included by ../_kernel.c after scan.c; engine/workq/diff.py drives it, its pure-Python twins are there). */

/* ---- two job tables compared job by job: replay's rows (replay.Job.canonical: the digest's fields) */

/* whether two live jobs give the same replay row at one as-of: every field of the digest line (expires_ns of an
   add-job and lease_expires_ns of a leased one are as-of + ttl / ttr, so ttl and ttr stand for them) */
static int diff_same_job(JobTable *ta, const JobRec *a, JobTable *tb, const JobRec *b)
{
    if (a->kind != b->kind || a->ttr != b->ttr || a->ttl != b->ttl || a->prio != b->prio || a->ma != b->ma ||
        a->mf != b->mf || a->created != b->created || a->logexp != b->logexp || a->plen != b->plen ||
        a->pcrc != b->pcrc || a->state != b->state || a->attempts != b->attempts || a->has_res != b->has_res)
        return 0;
    if (a->kind == 2 && a->sched != b->sched)
        return 0;
    if (a->has_res && (a->res_len != b->res_len || memcmp(ta->res + a->res_off, tb->res + b->res_off, a->res_len)))
        return 0;
    const NameRec *na = &ta->names[a->name], *nb = &tb->names[b->name];
    return na->len == nb->len && memcmp(ta->narena + na->off, tb->narena + nb->off, na->len) == 0;
}

static int diff_id_cmp(const uint8_t *x, const uint8_t *y)
{
    uint64_t a = load_be64(x), b = load_be64(y);
    if (a != b)
        return a < b ? -1 : 1;
    a = load_be64(x + 8);
    b = load_be64(y + 8);
    return a == b ? 0 : (a < b ? -1 : 1);
}

static int diff_key_cmp(const void *x, const void *y) { return diff_id_cmp(x, y); }

/* append the id to out (16 bytes) */
static int diff_put(char **out, size_t *n, size_t *cap, const uint8_t *id)
{
    if (grow((void **)out, cap, *n + JOB_ID_SIZE, 1, 4096) < 0)
        return -1;
    memcpy(*out + *n, id, JOB_ID_SIZE);
    *n += JOB_ID_SIZE;
    return 0;
}

PyDoc_STRVAR(diff_tables_doc,
"diff_tables(a, b) -> bytes\n\n"
"The ids of the jobs whose replay rows differ between two JobTables replayed at one as-of (live in one only, or\n"
"live in both with any field of the row different), sorted, 16 bytes each. A join of the two tables on their id\n"
"indexes (each live job of one looked up in the other: no sort of the tables), then the differing ids sorted:\n"
"what a merge of the two tables in id order gives.");

static PyObject *k_diff_tables(PyObject *self, PyObject *args)
{
    PyObject *ao, *bo;
    if (!PyArg_ParseTuple(args, "O!O!:diff_tables", &JobTableType, &ao, &JobTableType, &bo))
        return NULL;
    JobTable *ta = (JobTable *)ao, *tb = (JobTable *)bo;
    char *out = NULL;
    size_t n = 0, cap = 0, slot;
    /* Two replays of logs with a common prefix insert their jobs in the same order (and compact alike), so job k
       of one is most often job k of the other: that is checked first, sequentially; the index is asked only
       where they part. */
    for (size_t k = 0; k < ta->n; k++) {         /* A's jobs: missing in B, or another row there */
        const JobRec *a = &ta->jobs[k], *b = NULL;
        if (!a->kind)
            continue;
        if (k < tb->n && tb->jobs[k].kind && memcmp(tb->jobs[k].id, a->id, JOB_ID_SIZE) == 0)
            b = &tb->jobs[k];
        else {
            Py_ssize_t ix = jt_find(tb, a->id, &slot);
            b = ix < 0 ? NULL : &tb->jobs[ix];
        }
        if ((b == NULL || !diff_same_job(ta, a, tb, b)) && diff_put(&out, &n, &cap, a->id) < 0)
            goto fail;
    }
    for (size_t k = 0; k < tb->n; k++) {         /* B's jobs missing in A */
        const JobRec *b = &tb->jobs[k];
        if (!b->kind || (k < ta->n && ta->jobs[k].kind && memcmp(ta->jobs[k].id, b->id, JOB_ID_SIZE) == 0))
            continue;
        if (jt_find(ta, b->id, &slot) < 0 && diff_put(&out, &n, &cap, b->id) < 0)
            goto fail;
    }
    if (n > JOB_ID_SIZE)
        qsort(out, n / JOB_ID_SIZE, JOB_ID_SIZE, diff_key_cmp);
    PyObject *r = PyBytes_FromStringAndSize(out ? out : "", (Py_ssize_t)n);
    PyMem_Free(out);
    return r;
fail:
    PyMem_Free(out);
    return NULL;
}

/* ---- the records of chosen jobs: a framing walk (the scan's checks) that hands them, and anything doubtful, back */

static int diff_wanted(const uint8_t *ids, size_t n, const uint8_t *id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = diff_id_cmp(ids + mid * JOB_ID_SIZE, id);
        if (c == 0)
            return 1;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

PyDoc_STRVAR(diff_walk_doc,
"diff_walk(data, pos, end, limit, ids) -> (pos, records, why)\n\n"
"Walk the records of data[pos:end] (a segment, pos at a record) as the walk frames them (seek.c: walk_frame,\n"
"scan's frame, CRC and payload) — counting them, and stop at the first record that needs the reference reader:\n"
"damage or anything unusual, or a record of one of the jobs in ids (sorted 16-byte ids, packed; why 2), or\n"
"the first record that does not end at or before limit (why 1). why 0: pos == end, the segment is done.\n"
"records: the records walked over (the one at the returned pos not included).");

static PyObject *k_diff_walk(PyObject *self, PyObject *args)
{
    Py_buffer view, idv;
    Py_ssize_t pos, end, limit;
    if (!PyArg_ParseTuple(args, "y*nnny*:diff_walk", &view, &pos, &end, &limit, &idv))
        return NULL;
    PyObject *ret = NULL;
    if (end > view.len || pos < HEADER_SIZE || idv.len % JOB_ID_SIZE) {
        PyErr_SetString(PyExc_ValueError, "diff_walk: pos before the first record, end past the data, or ids not "
                        "16 bytes each");
        goto done;
    }
    const unsigned char *d = (const unsigned char *)view.buf;
    const uint8_t *ids = (const uint8_t *)idv.buf;
    size_t nids = (size_t)idv.len / JOB_ID_SIZE;
    long long records = 0;
    int why = 0;
    while (pos < end) {
        Py_ssize_t q, nxt = walk_frame(d, pos, end, &q, 1);  /* seek.c: scan's frame, CRC and payload */
        if (nxt < 0) {
            why = 2;
            break;
        }
        if (nxt > limit) {
            why = 1;
            break;
        }
        if (nids && diff_wanted(ids, nids, d + q + 1)) {
            why = 2;
            break;
        }
        records++;
        pos = nxt;
    }
    ret = Py_BuildValue("(nLi)", pos, records, why);
done:
    PyBuffer_Release(&view);
    PyBuffer_Release(&idv);
    return ret;
}

PyDoc_STRVAR(diff_first_doc,
"diff_first(a, b) -> int\n\n"
"The first offset at which two buffers differ; min(len(a), len(b)) when one begins with the other.");

static PyObject *k_diff_first(PyObject *self, PyObject *args)
{
    Py_buffer a, b;
    if (!PyArg_ParseTuple(args, "y*y*:diff_first", &a, &b))
        return NULL;
    const unsigned char *x = a.buf, *y = b.buf;
    Py_ssize_t n = a.len < b.len ? a.len : b.len, i = 0;
    Py_BEGIN_ALLOW_THREADS
    while (i < n) {                       /* memcmp a block at a time, then the byte inside the block */
        Py_ssize_t k = n - i < 65536 ? n - i : 65536;
        if (memcmp(x + i, y + i, (size_t)k) != 0) {
            while (x[i] == y[i])
                i++;
            break;
        }
        i += k;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&a);
    PyBuffer_Release(&b);
    return PyLong_FromSsize_t(i);
}
