/* kernel/pack.c — pack's layout and records for the live jobs of a kernel replay (JobTable.pack_plan,
 * JobTable.pack_segment): the packed log's rules once in C. The reference, once in Python, is engine/workq/pack.py
 * (_tail, _synth_length, _iter_records and the writer's roll-over); tests/engine/workq/test_pack_c.py holds
 * C == Python on random job tables and on the bench's shapes.
 *
 * For each live job, in log order of its add/schedule record (segment, offset): that record byte for byte (its
 * CRC and id checked again), then the records that rebuild its state, each with TIME = as-of:
 *   new        nothing
 *   pending    attempts x (start-attempt, timeout-attempt); one lone timeout-attempt when it never ran
 *   leased     (attempts - 1) pairs + start-attempt
 *   completed  (attempts - 1) pairs + start-attempt (none when it never ran) + complete <result>
 *   failed     the same + fail <result>; a failed job with an empty result at max-attempts: attempts pairs
 * A segment takes records while its size is below the limit (the first record always): upstream's appender. */

#define PACK_ID_RECORD (GO_TIME_SIZE + 1 + PAYLOAD_MIN + CRC_SIZE)   /* every id-only record: 37 bytes */

typedef struct {
    uint64_t pairs;     /* (start-attempt, timeout-attempt) pairs first */
    uint8_t lone;       /* then one start-attempt or timeout-attempt (0: none) */
    uint8_t final;      /* then complete or fail with the result (0: none) */
} PackTail;

static PackTail pack_tail(const JobRec *j)
{
    PackTail t = {0, 0, 0};
    uint64_t a = j->attempts;
    switch (j->state) {
    case ST_NEW:
        break;
    case ST_PENDING:
        if (a)
            t.pairs = a;
        else
            t.lone = CMD_TIMEOUT_ATTEMPT;
        break;
    case ST_LEASED:
        if (a) {
            t.pairs = a - 1;
            t.lone = CMD_START_ATTEMPT;
        }
        break;
    case ST_COMPLETED:
        if (a) {
            t.pairs = a - 1;
            t.lone = CMD_START_ATTEMPT;
        }
        t.final = CMD_COMPLETE;
        break;
    default: /* ST_FAILED */
        if (j->has_res && j->res_len == 0 && a && j->ma && a >= j->ma) {
            t.pairs = a;    /* upstream's timeout failure: written as the attempts it took */
            break;
        }
        if (a) {
            t.pairs = a - 1;
            t.lone = CMD_START_ATTEMPT;
        }
        t.final = CMD_FAIL;
    }
    return t;
}

static inline uint64_t pack_tail_records(PackTail t)
{
    return 2 * t.pairs + (t.lone != 0) + (t.final != 0);
}

static inline int uvarint_len(uint64_t v)
{
    int n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static inline uint64_t pack_result_record_len(uint32_t res_len)
{
    uint64_t n = PAYLOAD_MIN + uvarint_len(res_len) + res_len;
    return GO_TIME_SIZE + uvarint_len(n) + n + CRC_SIZE;
}

/* The length of record k of the tail (0-based), in tail order. */
static inline uint64_t pack_tail_len(const JobRec *j, PackTail t, uint64_t k)
{
    return k < 2 * t.pairs + (t.lone != 0) ? PACK_ID_RECORD : pack_result_record_len(j->has_res ? j->res_len : 0);
}

static inline uint8_t pack_tail_cmd(PackTail t, uint64_t k)
{
    if (k < 2 * t.pairs)
        return (k & 1) ? CMD_TIMEOUT_ATTEMPT : CMD_START_ATTEMPT;
    if (k == 2 * t.pairs && t.lone)
        return t.lone;
    return t.final;
}

/* The input segments as buffers (index = a row's segment number). */
typedef struct {
    Py_buffer *views;
    Py_ssize_t n;
} PackSources;

static void pack_sources_release(PackSources *s)
{
    for (Py_ssize_t i = 0; i < s->n; i++)
        if (s->views[i].obj != NULL)
            PyBuffer_Release(&s->views[i]);
    PyMem_Free(s->views);
    s->views = NULL;
    s->n = 0;
}

static int pack_sources(PyObject *seq, PackSources *s)
{
    PyObject *fast = PySequence_Fast(seq, "segments must be a sequence of buffers");
    s->views = NULL;
    s->n = 0;
    if (fast == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    s->views = PyMem_Calloc(n ? n : 1, sizeof(Py_buffer));
    if (s->views == NULL) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(fast, i), &s->views[i], PyBUF_SIMPLE) < 0) {
            s->n = i;
            pack_sources_release(s);
            Py_DECREF(fast);
            return -1;
        }
        s->n = i + 1;
    }
    Py_DECREF(fast);
    return 0;
}

/* The length of the job's add/schedule record in its segment (TIME, SIZE varint, PAYLOAD, CRC); -1 with
 * ValueError("seg offset: ...") when the bytes there are not a record of that length any more. */
static int64_t pack_src_len(const PackSources *s, const JobRec *j)
{
    if ((Py_ssize_t)j->seg >= s->n) {
        PyErr_Format(PyExc_ValueError, "%u %llu: no such segment", j->seg, (unsigned long long)j->off);
        return -1;
    }
    const uint8_t *b = s->views[j->seg].buf;
    uint64_t end = (uint64_t)s->views[j->seg].len, p = j->off + GO_TIME_SIZE, size = 0;
    for (int i = 0, shift = 0; ; i++, shift += 7) {
        if (p >= end || i == 10) {
            PyErr_Format(PyExc_ValueError, "%u %llu: no record SIZE here", j->seg, (unsigned long long)j->off);
            return -1;
        }
        uint8_t c = b[p++];
        size |= (uint64_t)(c & 0x7F) << shift;
        if (c < 0x80)
            break;
    }
    if (size > SIZE_CAP || p + size + CRC_SIZE > end) {
        PyErr_Format(PyExc_ValueError, "%u %llu: the record runs past the segment", j->seg,
                     (unsigned long long)j->off);
        return -1;
    }
    return (int64_t)(p + size + CRC_SIZE - j->off);
}

static JobRec *pack_job(JobTable *t, const uint8_t *id)
{
    size_t slot;
    Py_ssize_t ix = jt_find(t, id, &slot);
    return ix < 0 ? NULL : &t->jobs[ix];
}

typedef struct {
    uint32_t seg;
    uint64_t off;
    uint32_t ix;
} PackKey;

static int pack_key_cmp(const void *a, const void *b)
{
    const PackKey *x = a, *y = b;
    if (x->seg != y->seg)
        return x->seg < y->seg ? -1 : 1;
    if (x->off != y->off)
        return x->off < y->off ? -1 : 1;
    return 0;
}

PyDoc_STRVAR(jt_pack_plan_doc,
"pack_plan(segments, segment_size) -> (order, lengths, segments_after, bytes_after, records_after, kinds)\n\n"
"The packed log's layout (engine/workq/pack.py): ``segments`` the input segments' bytes (index = a row's segment\n"
"number); ``order`` the live ids in log order of their add/schedule (16 bytes each), ``lengths`` those records'\n"
"lengths (u32, native order), ``kinds`` the output's records per command type (index = type).");

static PyObject *jt_pack_plan(JobTable *t, PyObject *args)
{
    PyObject *segs;
    unsigned long long limit;
    if (!PyArg_ParseTuple(args, "OK", &segs, &limit))
        return NULL;
    PackSources src;
    if (pack_sources(segs, &src) < 0)
        return NULL;
    size_t n = t->live;
    PackKey *keys = PyMem_Malloc((n ? n : 1) * sizeof(PackKey));
    PyObject *order = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * JOB_ID_SIZE));
    PyObject *lens = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * sizeof(uint32_t)));
    PyObject *out = NULL;
    if (keys == NULL || order == NULL || lens == NULL) {
        if (keys == NULL)
            PyErr_NoMemory();
        goto done;
    }
    size_t m = 0;
    for (size_t k = 0; k < t->n && m < n; k++)
        if (t->jobs[k].kind)
            keys[m++] = (PackKey){t->jobs[k].seg, t->jobs[k].off, (uint32_t)k};
    qsort(keys, m, sizeof(PackKey), pack_key_cmp);
    uint8_t *ob = (uint8_t *)PyBytes_AS_STRING(order);
    uint32_t *lb = (uint32_t *)PyBytes_AS_STRING(lens);
    uint64_t nsegs = 0, nbytes = 0, nrecs = 0, size = 0, kinds[CMD_MAX + 1] = {0};
    for (size_t i = 0; i < m; i++) {
        const JobRec *j = &t->jobs[keys[i].ix];
        int64_t ln = pack_src_len(&src, j);
        if (ln < 0)
            goto done;
        memcpy(ob + i * JOB_ID_SIZE, j->id, JOB_ID_SIZE);
        lb[i] = (uint32_t)ln;
        kinds[j->kind]++;
        PackTail tail = pack_tail(j);
        uint64_t tn = pack_tail_records(tail);
        for (uint64_t r = 0; r <= tn; r++) {
            uint64_t rl = r == 0 ? (uint64_t)ln : pack_tail_len(j, tail, r - 1);
            if (r)
                kinds[pack_tail_cmd(tail, r - 1)]++;
            if (nsegs == 0 || size >= limit) {
                nsegs++;
                size = HEADER_SIZE;
                nbytes += HEADER_SIZE;
            }
            size += rl;
            nbytes += rl;
        }
        nrecs += tn + 1;
    }
    PyObject *kl = PyTuple_New(CMD_MAX + 1);
    if (kl == NULL)
        goto done;
    for (int c = 0; c <= CMD_MAX; c++) {
        PyObject *v = PyLong_FromUnsignedLongLong(kinds[c]);
        if (v == NULL) {
            Py_DECREF(kl);
            goto done;
        }
        PyTuple_SET_ITEM(kl, c, v);
    }
    out = Py_BuildValue("(OOKKKN)", order, lens, (unsigned long long)nsegs, (unsigned long long)nbytes,
                        (unsigned long long)nrecs, kl);
done:
    PyMem_Free(keys);
    Py_XDECREF(order);
    Py_XDECREF(lens);
    pack_sources_release(&src);
    return out;
}

/* Append one synthesized record (TIME = as-of) to w: cmd + id [+ uvarint(len) + result], then the CRC. */
static uint8_t *pack_put_synth(uint8_t *w, const uint8_t *time15, uint8_t cmd, const uint8_t *id, const uint8_t *res,
                               uint32_t res_len, int with_result)
{
    uint8_t *start = w;
    memcpy(w, time15, GO_TIME_SIZE);
    w += GO_TIME_SIZE;
    uint64_t n = PAYLOAD_MIN + (with_result ? uvarint_len(res_len) + res_len : 0);
    for (uint64_t v = n; ; v >>= 7) {
        *w++ = (uint8_t)((v & 0x7F) | (v >= 0x80 ? 0x80 : 0));
        if (v < 0x80)
            break;
    }
    *w++ = cmd;
    memcpy(w, id, JOB_ID_SIZE);
    w += JOB_ID_SIZE;
    if (with_result) {
        for (uint64_t v = res_len; ; v >>= 7) {
            *w++ = (uint8_t)((v & 0x7F) | (v >= 0x80 ? 0x80 : 0));
            if (v < 0x80)
                break;
        }
        if (res_len)
            memcpy(w, res, res_len);
        w += res_len;
    }
    uint32_t c = crc32c(start, (size_t)(w - start));
    w[0] = (uint8_t)(c >> 24);
    w[1] = (uint8_t)(c >> 16);
    w[2] = (uint8_t)(c >> 8);
    w[3] = (uint8_t)c;
    return w + CRC_SIZE;
}

PyDoc_STRVAR(jt_pack_segment_doc,
"pack_segment(segments, order, lengths, job, rec, limit, time15) -> (records, first_len, job, rec, count)\n\n"
"The records of one output segment of the packed log, from record ``rec`` of job ``job`` (of ``order``):\n"
"the first always, then while the segment (header included) is below ``limit``; ``first_len`` the first\n"
"record's length, (``job``, ``rec``) where the next segment starts (``job == len(order)``: the end), ``count``\n"
"the records written. An add/schedule whose bytes no longer hold its CRC or its id is a ValueError.");

static PyObject *jt_pack_segment(JobTable *t, PyObject *args)
{
    PyObject *segs;
    Py_buffer ord = {0}, lns = {0}, tm = {0};
    unsigned long long job, rec, limit;
    if (!PyArg_ParseTuple(args, "Oy*y*KKKy*", &segs, &ord, &lns, &job, &rec, &limit, &tm))
        return NULL;
    PackSources src = {0};
    PyObject *out = NULL, *buf = NULL;
    size_t njobs = (size_t)ord.len / JOB_ID_SIZE;
    if (tm.len != GO_TIME_SIZE || (size_t)lns.len != njobs * sizeof(uint32_t)) {
        PyErr_SetString(PyExc_ValueError, "pack_segment: a 15-byte time and a length per id");
        goto done;
    }
    if (pack_sources(segs, &src) < 0)
        goto done;
    const uint8_t *ids = ord.buf;
    const uint32_t *lens = lns.buf;
    /* the bytes this segment takes: measured first, so one allocation holds them */
    uint64_t size = HEADER_SIZE, total = 0, count = 0, first_len = 0;
    size_t jj = (size_t)job;
    uint64_t rr = rec;
    int first = 1;
    while (jj < njobs && (first || size < limit)) {
        JobRec *j = pack_job(t, ids + jj * JOB_ID_SIZE);
        if (j == NULL) {
            PyErr_SetString(PyExc_ValueError, "pack_segment: an id of the order is not live in the table");
            goto done;
        }
        PackTail tail = pack_tail(j);
        uint64_t tn = pack_tail_records(tail);
        uint64_t rl = rr == 0 ? lens[jj] : pack_tail_len(j, tail, rr - 1);
        if (first)
            first_len = rl;
        first = 0;
        size += rl;
        total += rl;
        count++;
        if (++rr > tn) {
            rr = 0;
            jj++;
        }
    }
    buf = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (buf == NULL)
        goto done;
    uint8_t *w = (uint8_t *)PyBytes_AS_STRING(buf);
    jj = (size_t)job;
    rr = rec;
    for (uint64_t k = 0; k < count; k++) {
        JobRec *j = pack_job(t, ids + jj * JOB_ID_SIZE);
        PackTail tail = pack_tail(j);
        uint64_t tn = pack_tail_records(tail);
        if (rr == 0) {
            uint32_t ln = lens[jj];
            if ((Py_ssize_t)j->seg >= src.n || j->off + ln > (uint64_t)src.views[j->seg].len || ln < GO_TIME_SIZE + 6) {
                PyErr_Format(PyExc_ValueError, "%u %llu: the record is not there any more", j->seg,
                             (unsigned long long)j->off);
                goto done;
            }
            const uint8_t *r = (const uint8_t *)src.views[j->seg].buf + j->off;
            uint32_t stored = be32(r + ln - CRC_SIZE);
            uint32_t q = GO_TIME_SIZE;
            while (q < ln && (r[q] & 0x80))
                q++;
            q++;
            if (crc32c(r, ln - CRC_SIZE) != stored || q + PAYLOAD_MIN > ln ||
                (r[q] != CMD_ADD && r[q] != CMD_SCHEDULE) || memcmp(r + q + 1, j->id, JOB_ID_SIZE) != 0) {
                PyErr_Format(PyExc_ValueError, "%u %llu: the record there is no longer the job's add/schedule",
                             j->seg, (unsigned long long)j->off);
                goto done;
            }
            memcpy(w, r, ln);
            w += ln;
        } else {
            uint8_t cmd = pack_tail_cmd(tail, rr - 1);
            int with = cmd == CMD_COMPLETE || cmd == CMD_FAIL;
            const uint8_t *res = j->has_res ? (const uint8_t *)t->res + j->res_off : NULL;
            w = pack_put_synth(w, tm.buf, cmd, j->id, res, j->has_res ? j->res_len : 0, with);
        }
        if (++rr > tn) {
            rr = 0;
            jj++;
        }
    }
    out = Py_BuildValue("(OKKKK)", buf, (unsigned long long)first_len, (unsigned long long)jj,
                        (unsigned long long)rr, (unsigned long long)count);
done:
    Py_XDECREF(buf);
    pack_sources_release(&src);
    PyBuffer_Release(&ord);
    PyBuffer_Release(&lns);
    PyBuffer_Release(&tm);
    return out;
}
