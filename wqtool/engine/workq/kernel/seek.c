/* the walk: framing and CRC over one segment without the replay — the time span of its records (--as-of
   last|first, the metrics' newest record), record numbers up to an offset (dump --from-offset) and dump's record
   selection by command, job and time (part of wqtool.engine.workq._kernel: a unity build, included by ../_kernel.c
   after scan.c) */

/* The record at `pos` when the walk takes it whole: its frame is scan.c's (TIME version 1 | SIZE of at most 4
   varint bytes, <= SIZE_CAP | PAYLOAD of at least a command and a job id | CRC-32C), its CRC holds and its payload
   decodes as scan.c decodes it (with `decode`; without it, frame and CRC only: the reference reader makes a Record of
   every frame whose CRC holds, decodable or not, so counting records and spanning their times need no more). Returns
   where the next record starts, with *q the payload's start; -1: anything else (damage, a short or odd record), which
   the reference reader reads (fastreplay.walk hands it the spot). */
#define WALK_DECODE 1ul   /* walk()'s kinds bit 0: check that each payload decodes */

static inline Py_ssize_t walk_frame(const unsigned char *d, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t *q,
                                    int decode)
{
    if (end - pos < FRAME_MIN || d[pos] != GO_TIME_VERSION)
        return -1;
    uint64_t s = d[pos + GO_TIME_SIZE];
    if (s < 0x80) {
        *q = pos + GO_TIME_SIZE + 1;
    } else if (uvar(d, pos + GO_TIME_SIZE, pos + GO_TIME_SIZE + 4, &s, q) < 0 || s > SIZE_CAP) {
        return -1;
    }
    Py_ssize_t pend = *q + (Py_ssize_t)s;
    if (pend + CRC_SIZE > end || s < PAYLOAD_MIN)
        return -1;
    if (crc32c(d + pos, (size_t)(pend - pos)) != be32(d + pend))
        return -1;
    if (!decode)
        return pend + CRC_SIZE;
    /* the payload decodes as scan.c decodes it (an undecodable one is the reference's: its payload finding) */
    Py_ssize_t p = *q + PAYLOAD_MIN;
    int c = d[*q];
    uint64_t v, plen;
    if (c >= CMD_DELETE)
        return c <= CMD_MAX && s == PAYLOAD_MIN ? pend + CRC_SIZE : -1;
    if (c == CMD_COMPLETE || c == CMD_FAIL) {
        Py_ssize_t rs;
        if (uvar(d, p, pend, &v, &rs) < 0 || rs > pend || v != (uint64_t)(pend - rs))
            return -1;
        return pend + CRC_SIZE;
    }
    if (c != CMD_ADD && c != CMD_SCHEDULE)
        return -1;
    Py_ssize_t lim = pend - 2 * GO_TIME_SIZE;
    if (ivar(d, &p, lim, &v) < 0 || v > (uint64_t)(lim - p))
        return -1;
    p += (Py_ssize_t)v;
    for (int k = 0; k < 5; k++)                   /* ttr, ttl, priority, max-attempts, max-fails */
        if (ivar(d, &p, lim, &v) < 0)
            return -1;
    if (ivar(d, &p, lim, &plen) < 0 || plen != (uint64_t)(lim - p))
        return -1;
    if (d[lim] != GO_TIME_VERSION || d[lim + GO_TIME_SIZE] != GO_TIME_VERSION)
        return -1;
    return pend + CRC_SIZE;
}

/* the record's time, ns since the Unix epoch (its TIME field; version 1 checked by walk_frame) */
static inline i128 walk_time(const unsigned char *d, Py_ssize_t pos)
{
    return go_time_ns(d + pos);
}

/* an int or None as an i128 bound (*has = 0 for None) */
static int walk_bound(PyObject *o, i128 *v, int *has)
{
    *has = 0;
    if (o == Py_None)
        return 0;
    if (as_i128(o, v) < 0)
        return -1;
    *has = 1;
    return 0;
}

static int walk_id_cmp(const void *a, const void *b)
{
    return memcmp(a, b, JOB_ID_SIZE);
}

PyDoc_STRVAR(walk_doc,
"walk(data, pos, end, index, stop, kinds, ids, since, until, times, npick) -> (index, pos, picked, tmin, tmax)\n\n"
"Frame and check (CRC-32C) the records of data[pos:end] without replaying them, as scan does, and stop at the\n"
"first one it does not take whole (damage, a record shorter than a command and a job id: the reference reader\n"
"reads that spot) or at the first record at or after `stop` (None: no stop). index: the number of the record at\n"
"pos, counted on. picked: [(offset, index)] of the records whose command is in the bit mask `kinds` (bit c for\n"
"command c; 0: pick none; bit 0, which no command has, asks that every payload decode, as a read of a range must:\n"
"an undecodable record there is handed back for its finding; without it, counting and spans, frame and CRC only), whose job id is in `ids` (16-byte ids, concatenated and sorted; None: any) and whose\n"
"time t holds since <= t < until (None: unbounded) — a superset of dump's selection (a record whose payload does\n"
"not decode is '(undecodable)' to the reference: the caller decodes each pick and asks its filter). times: also\n"
"give the earliest and latest time of the records taken (else None, None). npick: stop after that many picks\n"
"(pos: the record after the last pick; -1: no limit).");

static PyObject *k_walk(PyObject *self, PyObject *args)
{
    PyObject *data, *stop_o, *ids_o, *since_o, *until_o;
    Py_ssize_t pos, end;
    long long index;
    unsigned long kinds;
    int times;
    Py_ssize_t npick;
    if (!PyArg_ParseTuple(args, "OnnLOkOOOpn:walk", &data, &pos, &end, &index, &stop_o, &kinds, &ids_o, &since_o,
                          &until_o, &times, &npick))
        return NULL;
    i128 since = 0, until = 0, tmin = 0, tmax = 0;
    int has_since, has_until, have_t = 0;
    Py_ssize_t stop = PY_SSIZE_T_MAX;
    if (walk_bound(since_o, &since, &has_since) < 0 || walk_bound(until_o, &until, &has_until) < 0)
        return NULL;
    if (stop_o != Py_None && (stop = PyLong_AsSsize_t(stop_o)) == -1 && PyErr_Occurred())
        return NULL;
    Py_buffer view, idv;
    idv.obj = NULL;
    const unsigned char *ids = NULL;
    size_t nids = 0;
    if (ids_o != Py_None) {
        if (PyObject_GetBuffer(ids_o, &idv, PyBUF_SIMPLE) < 0)
            return NULL;
        if (idv.len % JOB_ID_SIZE) {
            PyBuffer_Release(&idv);
            PyErr_SetString(PyExc_ValueError, "walk: ids are 16 bytes each");
            return NULL;
        }
        ids = idv.buf;
        nids = (size_t)idv.len / JOB_ID_SIZE;
    }
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) {
        if (idv.obj)
            PyBuffer_Release(&idv);
        return NULL;
    }
    PyObject *picked = PyList_New(0), *ret = NULL;
    if (picked == NULL)
        goto done;
    if (end > view.len || pos < HEADER_SIZE) {
        PyErr_SetString(PyExc_ValueError, "walk: pos before the first record or end past the end of data");
        goto done;
    }
    const unsigned char *d = view.buf;
    const int decode = (int)(kinds & WALK_DECODE);
    while (pos < end && pos < stop) {
        Py_ssize_t q, nxt = decode ? walk_frame(d, pos, end, &q, 1) : walk_frame(d, pos, end, &q, 0);
        if (nxt < 0)
            break;
        int c = d[q];
        if (times || has_since || has_until) {
            i128 t = walk_time(d, pos);
            if (times) {
                if (!have_t || t < tmin)
                    tmin = t;
                if (!have_t || t > tmax)
                    tmax = t;
                have_t = 1;
            }
            if ((has_since && t < since) || (has_until && t >= until))
                goto next;
        }
        if (c < 1 || c > CMD_MAX || !(kinds & (1ul << c)))
            goto next;
        if (ids != NULL && (nids == 0 || !bsearch(d + q + 1, ids, nids, JOB_ID_SIZE, walk_id_cmp)))
            goto next;
        PICK_THEN_STOP(picked, pos, index, nxt, npick);      /* ../../_cgrow.h */
    next:
        index++;
        pos = nxt;
    }
    {
        PyObject *lo = have_t ? i128_obj(tmin) : (Py_INCREF(Py_None), Py_None);
        PyObject *hi = have_t ? i128_obj(tmax) : (Py_INCREF(Py_None), Py_None);
        if (lo && hi)
            ret = Py_BuildValue("(LnOOO)", index, pos, picked, lo, hi);
        Py_XDECREF(lo);
        Py_XDECREF(hi);
    }
done:
    Py_XDECREF(picked);
    PyBuffer_Release(&view);
    if (idv.obj)
        PyBuffer_Release(&idv);
    return ret;
}
