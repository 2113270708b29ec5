/* the state digest: digest_text over Job objects, and JobTable.digest over the table's rows (part of wqtool.engine.workq._kernel: a unity build, included by ../_kernel.c in order) */

/* ------------------------------------------------------------------------------------------- digest_text */

/*
 * digest_text(jobs) -> bytes: b"".join(replay.digest_line(j) for j in jobs), byte for byte.
 *
 * digest_line is an f-string: `{x}` is format(x, ""), `_n(v)` is "null" or str(v), the CRC is format(x, "08x"),
 * the labels are replay._KIND_LABELS[kind] / replay._STATE_LABELS[state] (looked up at call time). Exact ints
 * that fit int64 (and exact bytes / str) take the fast path here; anything else goes through the same Python
 * calls (PyObject_Format / PyObject_Str), and a job whose id is not exact bytes is handed to digest_line itself.
 */

typedef struct {
    char *p;
    size_t n, cap;
} Buf;

static int buf_grow(Buf *b, size_t need)
{
    if (b->n + need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + need)
        cap *= 2;
    char *q = PyMem_Realloc(b->p, cap);
    if (q == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = q;
    b->cap = cap;
    return 0;
}

static inline int buf_put(Buf *b, const char *s, size_t n)
{
    if (buf_grow(b, n) < 0)
        return -1;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    return 0;
}

#define PUTLIT(b, lit) buf_put((b), (lit), sizeof(lit) - 1)

static int buf_put_ll(Buf *b, long long v)
{
    char tmp[24];
    int i = 24;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        tmp[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        tmp[--i] = '-';
    return buf_put(b, tmp + i, (size_t)(24 - i));
}

/* a str object's UTF-8 (strict, like str.encode()); steals the reference */
static int buf_put_str_steal(Buf *b, PyObject *s)
{
    if (s == NULL)
        return -1;
    if (!PyUnicode_Check(s)) {
        PyErr_SetString(PyExc_TypeError, "__format__/__str__ must return a str");
        Py_DECREF(s);
        return -1;
    }
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    int r = u == NULL ? -1 : buf_put(b, u, (size_t)n);
    Py_DECREF(s);
    return r;
}

static PyObject *empty_spec, *x08_spec;

/* f"{o}" */
static int put_fmt(Buf *b, PyObject *o)
{
    if (PyLong_CheckExact(o)) {
        int of;
        long long v = PyLong_AsLongLongAndOverflow(o, &of);
        if (!of && !(v == -1 && PyErr_Occurred()))
            return buf_put_ll(b, v);
        PyErr_Clear();
        return buf_put_str_steal(b, PyObject_Str(o));
    }
    if (PyUnicode_CheckExact(o)) {
        Py_INCREF(o);
        return buf_put_str_steal(b, o);
    }
    return buf_put_str_steal(b, PyObject_Format(o, empty_spec));
}

/* _n(o): "null" or str(o) */
static int put_opt(Buf *b, PyObject *o)
{
    if (o == Py_None)
        return PUTLIT(b, "null");
    if (PyLong_CheckExact(o))
        return put_fmt(b, o);
    return buf_put_str_steal(b, PyObject_Str(o));
}


/* f"{o:08x}" */
static int put_x08(Buf *b, PyObject *o)
{
    if (PyLong_CheckExact(o)) {
        int of;
        long long v = PyLong_AsLongLongAndOverflow(o, &of);
        if (!of && v >= 0 && !(v == -1 && PyErr_Occurred())) {
            char tmp[16];
            int i = 16;
            unsigned long long u = (unsigned long long)v;
            do {
                tmp[--i] = hexd[u & 15];
                u >>= 4;
            } while (u);
            while (i > 8)
                tmp[--i] = '0';
            return buf_put(b, tmp + i, (size_t)(16 - i));
        }
        PyErr_Clear();
    }
    return buf_put_str_steal(b, PyObject_Format(o, x08_spec));
}

static int put_hex(Buf *b, const unsigned char *s, Py_ssize_t n)
{
    if (buf_grow(b, (size_t)n * 2) < 0)
        return -1;
    char *d = b->p + b->n;
    for (Py_ssize_t i = 0; i < n; i++) {
        d[2 * i] = hexd[s[i] >> 4];
        d[2 * i + 1] = hexd[s[i] & 15];
    }
    b->n += (size_t)n * 2;
    return 0;
}

/* f"{table[o]}" */
static int put_label(Buf *b, PyObject *table, PyObject *o)
{
    PyObject *lab = PyObject_GetItem(table, o);
    if (lab == NULL)
        return -1;
    int r = put_fmt(b, lab);
    Py_DECREF(lab);
    return r;
}

enum { A_ATTEMPTS, A_CREATED, A_EXPIRES, A_ID, A_KIND, A_LEASE, A_LOGEXP, A_MAXATT, A_MAXFAILS, A_NAME, A_CRC,
       A_PLEN, A_PRIO, A_RESULT, A_SCHED, A_STATE, A_TTL, A_TTR, A_N };
static const char *const attr_names[A_N] = {
    "attempts", "created_ns", "expires_ns", "id", "kind", "lease_expires_ns", "log_expires_ns", "max_attempts",
    "max_fails", "name", "payload_crc", "payload_len", "priority", "result", "scheduled_ns", "state", "ttl",
    "ttr"};
static PyObject *attr_str[A_N];

static int digest_init(void)
{
    if (empty_spec != NULL)
        return 0;
    for (int i = 0; i < A_N; i++)
        if ((attr_str[i] = PyUnicode_InternFromString(attr_names[i])) == NULL)
            return -1;
    if ((x08_spec = PyUnicode_InternFromString("08x")) == NULL)
        return -1;
    if ((empty_spec = PyUnicode_InternFromString("")) == NULL)
        return -1;
    return 0;
}

/*
 * Where replay.Job (slots=True) keeps each field: the offsets of its member descriptors, so that jobs of exactly
 * that type are read without a getattr per field. 0 when the type is not laid out that way (then getattr).
 */
static int slot_offsets(PyObject *job_type, Py_ssize_t off[A_N])
{
    if (!PyType_Check(job_type))
        return 0;
    for (int i = 0; i < A_N; i++) {
        PyObject *d = PyObject_GetAttr(job_type, attr_str[i]);
        if (d == NULL) {
            PyErr_Clear();
            return 0;
        }
        int ok = Py_TYPE(d) == &PyMemberDescr_Type &&
                 ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX &&
                 !(((PyMemberDescrObject *)d)->d_member->flags & READ_RESTRICTED) &&
                 PyType_IsSubtype((PyTypeObject *)job_type, PyDescr_TYPE(d));
        if (ok)
            off[i] = ((PyMemberDescrObject *)d)->d_member->offset;
        Py_DECREF(d);
        if (!ok)
            return 0;
    }
    return 1;
}

static inline PyObject *get_field(PyObject *j, int i, const Py_ssize_t *off)
{
    if (off != NULL) {
        PyObject *v = *(PyObject **)((char *)j + off[i]);
        if (v != NULL) {
            Py_INCREF(v);
            return v;
        }
    }
    return PyObject_GetAttr(j, attr_str[i]);     /* also raises the AttributeError of an unset slot */
}

/* one job's line; 0 or -1. off: the slot offsets when j's type is exactly replay.Job, else NULL */
static int digest_one(Buf *b, PyObject *j, PyObject *kinds, PyObject *states, PyObject *py_line,
                      const Py_ssize_t *off)
{
    PyObject *a[A_N] = {0};
    int r = -1;
    a[A_ID] = get_field(j, A_ID, off);
    if (a[A_ID] == NULL)
        return -1;
    if (!PyBytes_CheckExact(a[A_ID])) {          /* not worth a C path: digest_line itself */
        Py_DECREF(a[A_ID]);
        PyObject *line = PyObject_CallOneArg(py_line, j);
        if (line == NULL)
            return -1;
        if (!PyBytes_Check(line)) {
            PyErr_SetString(PyExc_TypeError, "digest_line must return bytes");
            Py_DECREF(line);
            return -1;
        }
        r = buf_put(b, PyBytes_AS_STRING(line), (size_t)PyBytes_GET_SIZE(line));
        Py_DECREF(line);
        return r;
    }
    for (int i = 0; i < A_N; i++)
        if (i != A_ID && (a[i] = get_field(j, i, off)) == NULL)
            goto done;

    if (PUTLIT(b, "{\"attempts\":") || put_fmt(b, a[A_ATTEMPTS]) ||
        PUTLIT(b, ",\"created_ns\":") || put_fmt(b, a[A_CREATED]) ||
        PUTLIT(b, ",\"expires_ns\":") || put_fmt(b, a[A_EXPIRES]) || PUTLIT(b, ",\"id\":\""))
        goto done;
    {
        /* h = id.hex(); h[:8]-h[8:12]-h[12:16]-h[16:20]-h[20:] (slices clamp like Python's) */
        Py_ssize_t n = PyBytes_GET_SIZE(a[A_ID]);
        const unsigned char *s = (const unsigned char *)PyBytes_AS_STRING(a[A_ID]);
        char hbuf[64];
        char *h = n <= 32 ? hbuf : PyMem_Malloc((size_t)n * 2);
        if (h == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            h[2 * i] = hexd[s[i] >> 4];
            h[2 * i + 1] = hexd[s[i] & 15];
        }
        Py_ssize_t hl = 2 * n;
        static const Py_ssize_t cut[6] = {0, 8, 12, 16, 20, -1};
        int bad = 0;
        for (int k = 0; k < 5 && !bad; k++) {
            Py_ssize_t lo = cut[k] < hl ? cut[k] : hl;
            Py_ssize_t hi = cut[k + 1] < 0 || cut[k + 1] > hl ? hl : cut[k + 1];
            if (k && PUTLIT(b, "-"))
                bad = 1;
            else if (hi > lo && buf_put(b, h + lo, (size_t)(hi - lo)))
                bad = 1;
        }
        if (h != hbuf)
            PyMem_Free(h);
        if (bad)
            goto done;
    }
    if (PUTLIT(b, "\",\"kind\":\"") || put_label(b, kinds, a[A_KIND]) ||
        PUTLIT(b, "\",\"lease_expires_ns\":") || put_opt(b, a[A_LEASE]) ||
        PUTLIT(b, ",\"log_expires_ns\":") || put_fmt(b, a[A_LOGEXP]) ||
        PUTLIT(b, ",\"max_attempts\":") || put_fmt(b, a[A_MAXATT]) ||
        PUTLIT(b, ",\"max_fails\":") || put_fmt(b, a[A_MAXFAILS]) ||
        PUTLIT(b, ",\"name\":\"") || put_fmt(b, a[A_NAME]) ||
        PUTLIT(b, "\",\"payload_crc32c\":\"") || put_x08(b, a[A_CRC]) ||
        PUTLIT(b, "\",\"payload_len\":") || put_fmt(b, a[A_PLEN]) ||
        PUTLIT(b, ",\"priority\":") || put_fmt(b, a[A_PRIO]) || PUTLIT(b, ",\"result\":"))
        goto done;
    {
        PyObject *res = a[A_RESULT];
        if (res == Py_None) {
            if (PUTLIT(b, "null"))
                goto done;
        } else if (PyBytes_CheckExact(res)) {
            if (PUTLIT(b, "\"") || put_hex(b, (const unsigned char *)PyBytes_AS_STRING(res), PyBytes_GET_SIZE(res)) ||
                PUTLIT(b, "\""))
                goto done;
        } else {
            PyObject *hx = PyObject_CallMethod(res, "hex", NULL);
            if (hx == NULL || PUTLIT(b, "\"")) {
                Py_XDECREF(hx);
                goto done;
            }
            PyObject *f = PyObject_Format(hx, empty_spec);
            Py_DECREF(hx);
            if (buf_put_str_steal(b, f) || PUTLIT(b, "\""))
                goto done;
        }
    }
    if (PUTLIT(b, ",\"scheduled_ns\":") || put_opt(b, a[A_SCHED]) ||
        PUTLIT(b, ",\"state\":\"") || put_label(b, states, a[A_STATE]) ||
        PUTLIT(b, "\",\"ttl_ms\":") || put_fmt(b, a[A_TTL]) ||
        PUTLIT(b, ",\"ttr_ms\":") || put_fmt(b, a[A_TTR]) || PUTLIT(b, "}\n"))
        goto done;
    r = 0;
done:
    for (int i = 0; i < A_N; i++)
        Py_XDECREF(a[i]);
    return r;
}

PyDoc_STRVAR(digest_text_doc,
"digest_text(jobs) -> bytes\n\n"
"b''.join(replay.digest_line(j) for j in jobs), built in C (replay.state_digest feeds it in chunks).");

static PyObject *k_digest_text(PyObject *self, PyObject *arg)
{
    if (digest_init() < 0)
        return NULL;
    PyObject *seq = PySequence_Fast(arg, "digest_text: jobs must be a sequence");
    if (seq == NULL)
        return NULL;
    PyObject *mod = PyImport_ImportModule("wqtool.engine.workq.replay");
    PyObject *kinds = NULL, *states = NULL, *py_line = NULL, *job_type = NULL, *out = NULL;
    Buf b = {0};
    Py_ssize_t offs[A_N];
    if (mod == NULL || (kinds = PyObject_GetAttrString(mod, "_KIND_LABELS")) == NULL ||
        (states = PyObject_GetAttrString(mod, "_STATE_LABELS")) == NULL ||
        (py_line = PyObject_GetAttrString(mod, "digest_line")) == NULL ||
        (job_type = PyObject_GetAttrString(mod, "Job")) == NULL)
        goto done;
    int have_offs = slot_offsets(job_type, offs);
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n && buf_grow(&b, (size_t)n * 420) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {   /* Python code may run: re-check */
        PyObject *j = PySequence_Fast_GET_ITEM(seq, i);
        Py_INCREF(j);
        int r = digest_one(&b, j, kinds, states, py_line,
                           have_offs && Py_TYPE(j) == (PyTypeObject *)job_type ? offs : NULL);
        Py_DECREF(j);
        if (r < 0)
            goto done;
    }
    out = PyBytes_FromStringAndSize(b.p ? b.p : "", (Py_ssize_t)b.n);
done:
    PyMem_Free(b.p);
    Py_XDECREF(job_type);
    Py_XDECREF(py_line);
    Py_XDECREF(states);
    Py_XDECREF(kinds);
    Py_XDECREF(mod);
    Py_DECREF(seq);
    return out;
}

/* one digest line: json.dumps(job.canonical(), sort_keys=True, separators=(",", ":")) + "\n" */
static char *w_digest_line(char *p, JobTable *t, JobRec *j, i128 asof)
{
    NameRec *nm = &t->names[j->name];
    i128 exp = expires_at(j, asof);
    p = W(p, "{\"attempts\":");
    p = w_u64(p, j->attempts);
    p = W(p, ",\"created_ns\":");
    p = w_i64(p, j->created);
    p = W(p, ",\"expires_ns\":");
    p = w_i128(p, exp);
    p = W(p, ",\"id\":\"");
    p = w_uuid(p, j->id);
    p = W(p, "\",\"kind\":\"");
    p = w_str(p, KIND_LABEL[j->kind]);
    p = W(p, "\",\"lease_expires_ns\":");
    if (j->state == 4)
        p = w_i128(p, lease_expires_at(asof, j->ttr));
    else
        p = W(p, "null");
    p = W(p, ",\"log_expires_ns\":");
    p = w_i64(p, j->logexp);
    p = W(p, ",\"max_attempts\":");
    p = w_u64(p, j->ma);
    p = W(p, ",\"max_fails\":");
    p = w_u64(p, j->mf);
    p = W(p, ",\"name\":\"");
    memcpy(p, t->narena + nm->off, nm->len);
    p += nm->len;
    p = W(p, "\",\"payload_crc32c\":\"");
    p = w_x08(p, j->pcrc);
    p = W(p, "\",\"payload_len\":");
    p = w_u64(p, j->plen);
    p = W(p, ",\"priority\":");
    p = w_i64(p, j->prio);
    p = W(p, ",\"result\":");
    if (j->has_res) {
        *p++ = '"';
        p = w_hex(p, (const uint8_t *)t->res + j->res_off, j->res_len);
        *p++ = '"';
    } else {
        p = W(p, "null");
    }
    p = W(p, ",\"scheduled_ns\":");
    if (j->kind == 2)
        p = w_i64(p, j->sched);
    else
        p = W(p, "null");
    p = W(p, ",\"state\":\"");
    p = w_str(p, STATE_LABEL[j->state]);
    p = W(p, "\",\"ttl_ms\":");
    p = w_u64(p, j->ttl);
    p = W(p, ",\"ttr_ms\":");
    p = w_u64(p, j->ttr);
    return W(p, "}\n");
}

/* bytes a line of this job can take at most (digest line or row) */
static inline size_t line_max(JobTable *t, JobRec *j)
{
    return 1024 + 2 * (size_t)t->names[j->name].len + 2 * (size_t)(j->has_res ? j->res_len : 0);
}

static int buf_room(Buf *b, size_t need) { return buf_grow(b, need); }

PyDoc_STRVAR(jt_digest_doc,
"digest(h, as_of_ns): h.update() with every job's digest line (replay.digest_line), in job-id order, in chunks.\n"
"OverflowError when as_of_ns is beyond 128 bits (the caller then takes the Python path).");

static PyObject *jt_digest(JobTable *t, PyObject *args)
{
    PyObject *h, *asof_o;
    if (!PyArg_ParseTuple(args, "OO:digest", &h, &asof_o))
        return NULL;
    i128 asof;
    if (as_i128(asof_o, &asof) < 0 || jt_sort(t) < 0)
        return NULL;
    PyObject *update = PyObject_GetAttrString(h, "update");
    if (update == NULL)
        return NULL;
    Buf b = {0};
    PyObject *ret = NULL;
    const size_t chunk = 1 << 20;
    if (buf_room(&b, chunk + 4096) < 0)
        goto done;
    for (size_t k = 0; k < t->order_n; k++) {
        jt_prefetch_sorted(t, k + 8);
        JobRec *j = &t->jobs[t->order[k]];
        if (j->has_res)
            PREFETCH(t->res + j->res_off);
        if (buf_room(&b, line_max(t, j)) < 0)
            goto done;
        b.n = (size_t)(w_digest_line(b.p + b.n, t, j, asof) - b.p);
        if (b.n >= chunk || k + 1 == t->order_n) {
            PyObject *mv = PyMemoryView_FromMemory(b.p, (Py_ssize_t)b.n, PyBUF_READ);
            PyObject *r = mv ? PyObject_CallOneArg(update, mv) : NULL;
            if (r != NULL && Py_REFCNT(mv) != 1) {     /* the buffer is reused: nobody may keep it */
                PyErr_SetString(PyExc_RuntimeError, "digest: h.update kept the buffer");
                Py_CLEAR(r);
            }
            Py_XDECREF(mv);
            if (r == NULL)
                goto done;
            Py_DECREF(r);
            b.n = 0;
        }
    }
    ret = Py_None;
    Py_INCREF(ret);
done:
    PyMem_Free(b.p);
    Py_DECREF(update);
    return ret;
}
