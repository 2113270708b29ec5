/* the compact job table (JobTable): ids indexed, names interned, results in an arena (part of wqtool.engine.workq._kernel: a unity build, included by ../_kernel.c in order) */

/* =========================================================================================== the compact state */

/*
 * JobTable: the live jobs of one replay as fixed-size C records (jobtable.py documents the row and the API; the
 * pure-Python PyJobTable there has the same methods and the tests hold the two equal).
 *
 * Jobs live in a dense array in insertion order (a deleted job leaves a dead record, reused by nothing; a re-added
 * id goes to the end, as in a dict), indexed by an open-addressing hash of the 16-byte id (random keys per
 * process: a hostile log cannot aim at collisions). Queue names are interned (refcounted; the dead ones are
 * dropped when the table compacts). Results (complete/fail; kept only when the scan keeps state) live in one
 * byte arena. When dead records outnumber live ones the table compacts in place, so memory follows the live
 * jobs, not the records: ~104 bytes per job + 8-16 bytes of index, plus its result.
 */

typedef struct {
    uint8_t id[JOB_ID_SIZE];
    int64_t created, sched, logexp;     /* ns since the Unix epoch; sched only for a schedule */
    uint64_t off;                       /* the add/schedule record's offset in segment `seg` */
    uint64_t res_off;                   /* result bytes in the arena (has_res) */
    uint32_t res_len, name, ttr, ttl;
    int32_t prio;
    uint32_t plen, pcrc, seg, attempts;
    uint8_t kind, state, ma, mf, has_res;   /* kind 1 add, 2 schedule, 0 a dead record */
} JobRec;

typedef struct {
    uint64_t hash;
    uint32_t off, refs, len;
    PyObject *str;                      /* the name as a Python str, built on first need */
} NameRec;

typedef struct {
    PyObject_HEAD
    JobRec *jobs;
    size_t n, cap, live, dead;
    uint32_t *slots;                    /* 0 empty, TOMB deleted, else index + 1 */
    size_t mask, used;
    char *res;
    size_t res_n, res_cap, res_dead;
    NameRec *names;
    size_t nnames, names_cap, names_dead;
    uint32_t *nslots;
    size_t nmask;
    char *narena;
    size_t narena_n, narena_cap;
    uint32_t *order;                    /* live indexes sorted by id, valid while order_ver == ver */
    size_t order_n;
    uint64_t ver, order_ver;
} JobTable;

#define TOMB 0xFFFFFFFFu
/* the replay's end rules, as replay.py writes them (the C copy: one per language, proven equal by the tests):
   a leased job's lease runs its TTR from the replay's instant (replay.lease_expires_at); an add-job's TTL restarts
   at replay, a schedule keeps the expiry its log gave */
static inline i128 lease_expires_at(i128 asof, uint32_t ttr) { return asof + (i128)ttr * NS_PER_MS; }
static inline i128 expires_at(const JobRec *j, i128 asof)
{
    return j->kind == CMD_ADD ? asof + (i128)j->ttl * NS_PER_MS : (i128)j->logexp;
}

static uint64_t hkey0 = 0x243F6A8885A308D3ULL, hkey1 = 0x13198A2E03707344ULL;
static PyTypeObject JobTableType;

static inline uint64_t mum(uint64_t a, uint64_t b)
{
    u128 r = (u128)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t id_hash(const uint8_t *id)
{
    uint64_t a, b;
    memcpy(&a, id, 8);
    memcpy(&b, id + 8, 8);
    return mum(mum(a ^ hkey0, b ^ hkey1), 0x9E3779B97F4A7C15ULL ^ hkey1);
}

static uint64_t bytes_hash(const uint8_t *s, size_t n)
{
    uint64_t h = hkey0 ^ (n * 0x9E3779B97F4A7C15ULL);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = mum(h ^ w, 0xA0761D6478BD642FULL ^ hkey1);
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    return mum(h ^ w, 0xE7037ED1A0B428DBULL ^ hkey1);
}

/* grow(): ../_cgrow.h */

/* index of the job with this id (h = id_hash(id)), or -1; *slot: where it is (found) or would go (not found) */
static Py_ssize_t jt_find_h(JobTable *t, const uint8_t *id, uint64_t h, size_t *slot)
{
    if (t->slots == NULL) {
        *slot = 0;
        return -1;
    }
    size_t i = (size_t)h & t->mask, tomb = (size_t)-1;
    for (;;) {
        uint32_t s = t->slots[i];
        if (s == 0) {
            *slot = tomb != (size_t)-1 ? tomb : i;
            return -1;
        }
        if (s == TOMB) {
            if (tomb == (size_t)-1)
                tomb = i;
        } else if (memcmp(t->jobs[s - 1].id, id, JOB_ID_SIZE) == 0) {
            *slot = i;
            return (Py_ssize_t)s - 1;
        }
        i = (i + 1) & t->mask;
    }
}

static inline Py_ssize_t jt_find(JobTable *t, const uint8_t *id, size_t *slot)
{
    return jt_find_h(t, id, id_hash(id), slot);
}

/* a prefetch the optimiser keeps (GCC 12 drops some __builtin_prefetch calls whose address it had to load) */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PREFETCH(p) __asm__ volatile("prefetcht0 %0" : : "m"(*(const char *)(p)))
#else
#define PREFETCH(p) __builtin_prefetch(p)
#endif

/* start loading the index slot of this id (the scan calls it two records ahead) */
static inline void jt_prefetch(JobTable *t, const uint8_t *id)
{
    if (t->slots != NULL)
        PREFETCH(&t->slots[(size_t)id_hash(id) & t->mask]);
}

/* start loading the record the slot of this hash points to (one record ahead: its slot was prefetched before) */
static inline void jt_prefetch_rec(JobTable *t, uint64_t h)
{
    if (t->slots != NULL) {
        uint32_t v = t->slots[(size_t)h & t->mask];
        if (v != 0 && v != TOMB) {
            const char *r = (const char *)&t->jobs[v - 1];
            PREFETCH(r);
            PREFETCH(r + sizeof(JobRec) - 1);
        }
    }
}

/* start loading job k of the sorted order (digest and rows walk the records in id order, not memory order) */
static inline void jt_prefetch_sorted(JobTable *t, size_t k)
{
    if (k < t->order_n) {
        const char *r = (const char *)&t->jobs[t->order[k]];
        PREFETCH(r);
        PREFETCH(r + sizeof(JobRec) - 1);
    }
}

static int jt_rehash(JobTable *t, size_t want)
{
    size_t cap = 16;
    while (cap < want * 3)             /* load 1/3 .. 2/3 of the growth trigger (1/2) after a rehash */
        cap *= 2;
    if (t->n >= TOMB - 1) {
        PyErr_SetString(PyExc_OverflowError, "JobTable: too many jobs");
        return -1;
    }
    uint32_t *s = PyMem_Calloc(cap, sizeof(uint32_t));
    if (s == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    PyMem_Free(t->slots);
    t->slots = s;
    t->mask = cap - 1;
    t->used = 0;
    for (size_t k = 0; k < t->n; k++) {
        if (!t->jobs[k].kind)
            continue;
        size_t i = (size_t)id_hash(t->jobs[k].id) & t->mask;
        while (s[i])
            i = (i + 1) & t->mask;
        s[i] = (uint32_t)(k + 1);
        t->used++;
    }
    return 0;
}

/* ---- names */
static Py_ssize_t name_lookup(JobTable *t, const uint8_t *s, size_t n, uint64_t h)
{
    if (t->nslots == NULL)
        return -1;
    size_t i = (size_t)h & t->nmask;
    for (;;) {
        uint32_t v = t->nslots[i];
        if (v == 0)
            return -1;
        NameRec *r = &t->names[v - 1];
        if (r->hash == h && r->len == n && memcmp(t->narena + r->off, s, n) == 0)
            return (Py_ssize_t)v - 1;
        i = (i + 1) & t->nmask;
    }
}

/* an open-addressing index (0 empty, else record + 1) of n records of `stride` bytes whose first field is their
   uint64_t hash, a quarter full at most (the names here, SeriesAcc's queues); NULL and MemoryError */
static uint32_t *hash_index(const void *recs, size_t n, size_t stride, size_t *mask)
{
    size_t cap = 16;
    while (cap < n * 4)
        cap *= 2;
    uint32_t *s = PyMem_Calloc(cap, sizeof(uint32_t));
    if (s == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (size_t k = 0; k < n; k++) {
        uint64_t h;
        memcpy(&h, (const char *)recs + k * stride, sizeof h);
        size_t i = (size_t)h & (cap - 1);
        while (s[i])
            i = (i + 1) & (cap - 1);
        s[i] = (uint32_t)(k + 1);
    }
    *mask = cap - 1;
    return s;
}

static int names_reindex(JobTable *t)
{
    uint32_t *s = hash_index(t->names, t->nnames, sizeof(NameRec), &t->nmask);
    if (s == NULL)
        return -1;
    PyMem_Free(t->nslots);
    t->nslots = s;
    return 0;
}

/* the interned index of a name (a reference taken) */
static int name_ref(JobTable *t, const uint8_t *s, size_t n, uint32_t *out)
{
    uint64_t h = bytes_hash(s, n);
    Py_ssize_t k = name_lookup(t, s, n, h);
    if (k < 0) {
        if (t->nnames >= TOMB - 1 || n > 0xFFFF) {
            PyErr_SetString(PyExc_OverflowError, "JobTable: too many queue names");
            return -1;
        }
        if (grow((void **)&t->narena, &t->narena_cap, t->narena_n + n, 1, 4096) < 0 ||
            grow((void **)&t->names, &t->names_cap, t->nnames + 1, sizeof(NameRec), 16) < 0)
            return -1;
        memcpy(t->narena + t->narena_n, s, n);
        NameRec *r = &t->names[t->nnames];
        r->hash = h;
        r->off = (uint32_t)t->narena_n;
        r->len = (uint32_t)n;
        r->refs = 0;
        r->str = NULL;
        if (t->narena_n + n > 0xFFFFFFFFu) {
            PyErr_SetString(PyExc_OverflowError, "JobTable: queue names too long");
            return -1;
        }
        t->narena_n += n;
        k = (Py_ssize_t)t->nnames++;
        t->names_dead++;
        if (t->nnames * 2 > t->nmask + 1 || t->nslots == NULL) {
            if (names_reindex(t) < 0)
                return -1;
        } else {
            size_t i = (size_t)h & t->nmask;
            while (t->nslots[i])
                i = (i + 1) & t->nmask;
            t->nslots[i] = (uint32_t)(k + 1);
        }
    }
    if (t->names[k].refs++ == 0)
        t->names_dead--;
    *out = (uint32_t)k;
    return 0;
}

static void name_unref(JobTable *t, uint32_t k)
{
    if (--t->names[k].refs == 0)
        t->names_dead++;
}

static PyObject *name_str(JobTable *t, uint32_t k)
{
    NameRec *r = &t->names[k];
    if (r->str == NULL)
        r->str = PyUnicode_DecodeLatin1(t->narena + r->off, r->len, NULL);
    Py_XINCREF(r->str);
    return r->str;
}

/* ---- results */
static int res_set(JobTable *t, JobRec *j, const void *s, size_t n)
{
    if (n > 0xFFFFFFFFu) {
        PyErr_SetString(PyExc_OverflowError, "JobTable: result too long");
        return -1;
    }
    if (j->has_res)
        t->res_dead += j->res_len;
    if (grow((void **)&t->res, &t->res_cap, t->res_n + n, 1, 4096) < 0)
        return -1;
    if (n)
        memcpy(t->res + t->res_n, s, n);
    j->res_off = t->res_n;
    j->res_len = (uint32_t)n;
    j->has_res = 1;
    t->res_n += n;
    return 0;
}

/* drop dead records, dead result bytes and (when many) dead names; rebuild the index */
static int jt_compact(JobTable *t)
{
    size_t w = 0;
    for (size_t r = 0; r < t->n; r++) {
        if (!t->jobs[r].kind)
            continue;
        if (w != r)
            t->jobs[w] = t->jobs[r];
        w++;
    }
    t->n = w;
    t->dead = 0;
    if (t->res_dead) {
        size_t live = t->res_n - t->res_dead, cap = 0;
        char *nr = NULL;
        if (live && grow((void **)&nr, &cap, live, 1, 4096) < 0)
            return -1;
        size_t p = 0;
        for (size_t k = 0; k < t->n; k++) {
            JobRec *j = &t->jobs[k];
            if (!j->has_res)
                continue;
            memcpy(nr + p, t->res + j->res_off, j->res_len);
            j->res_off = p;
            p += j->res_len;
        }
        PyMem_Free(t->res);
        t->res = nr;
        t->res_n = p;
        t->res_cap = cap;
        t->res_dead = 0;
    }
    if (t->names_dead > 64 && t->names_dead * 2 > t->nnames) {
        uint32_t *map = PyMem_Malloc((t->nnames ? t->nnames : 1) * sizeof(uint32_t));
        char *na = NULL;
        size_t nacap = 0, nn = 0, pos = 0;
        if (map == NULL || grow((void **)&na, &nacap, t->narena_n ? t->narena_n : 1, 1, 4096) < 0) {
            PyMem_Free(map);
            if (map)
                return -1;
            PyErr_NoMemory();
            return -1;
        }
        for (size_t k = 0; k < t->nnames; k++) {
            NameRec r = t->names[k];
            if (!r.refs) {
                Py_CLEAR(t->names[k].str);
                continue;
            }
            memcpy(na + pos, t->narena + r.off, r.len);
            r.off = (uint32_t)pos;
            pos += r.len;
            map[k] = (uint32_t)nn;
            t->names[nn++] = r;
        }
        PyMem_Free(t->narena);
        t->narena = na;
        t->narena_n = pos;
        t->narena_cap = nacap;
        t->nnames = nn;
        t->names_dead = 0;
        for (size_t k = 0; k < t->n; k++)
            t->jobs[k].name = map[t->jobs[k].name];
        PyMem_Free(map);
        if (names_reindex(t) < 0)
            return -1;
    }
    if (t->cap > 2 * t->n + 1024) {     /* give back what a big churn left */
        size_t c = t->n + t->n / 2 + 64;
        JobRec *q = PyMem_Realloc(t->jobs, c * sizeof(JobRec));
        if (q != NULL) {
            t->jobs = q;
            t->cap = c;
        }
    }
    t->ver++;
    return jt_rehash(t, t->live);
}

static int jt_delete(JobTable *t, Py_ssize_t ix, size_t slot)
{
    JobRec *j = &t->jobs[ix];
    t->slots[slot] = TOMB;
    name_unref(t, j->name);
    if (j->has_res)
        t->res_dead += j->res_len;
    j->kind = 0;
    j->has_res = 0;
    t->live--;
    t->dead++;
    t->ver++;
    if ((t->dead > 4096 && t->dead > t->live) || (t->res_dead > (64u << 20) && t->res_dead > t->res_n / 2))
        return jt_compact(t);
    return 0;
}

/* a new record at the end (the id is not live); returns it, or NULL */
static JobRec *jt_insert(JobTable *t, const uint8_t *id, size_t slot)
{
    if ((t->used + 1) * 2 > t->mask + 1 || t->slots == NULL) {
        if (jt_rehash(t, t->live + 1) < 0)
            return NULL;
        Py_ssize_t again = jt_find(t, id, &slot);
        (void)again;
    }
    if (grow((void **)&t->jobs, &t->cap, t->n + 1, sizeof(JobRec), 1024) < 0)
        return NULL;
    if (t->n >= TOMB - 1) {
        PyErr_SetString(PyExc_OverflowError, "JobTable: too many jobs");
        return NULL;
    }
    if (t->slots[slot] == 0)
        t->used++;
    t->slots[slot] = (uint32_t)(t->n + 1);
    JobRec *j = &t->jobs[t->n++];
    memset(j, 0, sizeof *j);
    memcpy(j->id, id, JOB_ID_SIZE);
    t->live++;
    t->ver++;
    return j;
}

/* ---- sorting by id (for the digest and the rows): keys bucketed by their first two bytes, then sorted */
typedef struct {
    uint64_t hi, lo;
    uint32_t ix;
} SortKey;

static int key_cmp(const void *a, const void *b)
{
    const SortKey *x = a, *y = b;
    if (x->hi != y->hi)
        return x->hi < y->hi ? -1 : 1;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return 0;
}

static inline uint64_t load_be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

static int jt_sort(JobTable *t)
{
    if (t->order != NULL && t->order_ver == t->ver)
        return 0;
    size_t n = t->live;
    PyMem_Free(t->order);
    t->order = NULL;
    SortKey *a = PyMem_Malloc((n ? n : 1) * sizeof(SortKey)), *b = PyMem_Malloc((n ? n : 1) * sizeof(SortKey));
    size_t *cnt = PyMem_Calloc(65537, sizeof(size_t));
    uint32_t *order = PyMem_Malloc((n ? n : 1) * sizeof(uint32_t));
    if (a == NULL || b == NULL || cnt == NULL || order == NULL) {
        PyMem_Free(a);
        PyMem_Free(b);
        PyMem_Free(cnt);
        PyMem_Free(order);
        PyErr_NoMemory();
        return -1;
    }
    size_t m = 0;
    for (size_t k = 0; k < t->n; k++) {
        if (!t->jobs[k].kind)
            continue;
        a[m].hi = load_be64(t->jobs[k].id);
        a[m].lo = load_be64(t->jobs[k].id + 8);
        a[m].ix = (uint32_t)k;
        cnt[(a[m].hi >> 48) + 1]++;
        m++;
    }
    for (size_t i = 1; i <= 65536; i++)
        cnt[i] += cnt[i - 1];
    for (size_t k = 0; k < m; k++)
        b[cnt[a[k].hi >> 48]++] = a[k];
    /* cnt[i] is now the end of bucket i */
    size_t start = 0;
    for (size_t i = 0; i < 65536; i++) {
        size_t end = cnt[i];
        if (end - start > 1)
            qsort(b + start, end - start, sizeof(SortKey), key_cmp);
        start = end;
    }
    for (size_t k = 0; k < m; k++)
        order[k] = b[k].ix;
    PyMem_Free(a);
    PyMem_Free(b);
    PyMem_Free(cnt);
    t->order = order;
    t->order_n = m;
    t->order_ver = t->ver;
    return 0;
}

/* ---- the Python type */
static PyObject *jt_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    if (!_PyArg_NoKeywords("JobTable", kw) || !PyArg_ParseTuple(args, ":JobTable"))
        return NULL;
    JobTable *t = (JobTable *)type->tp_alloc(type, 0);
    return (PyObject *)t;
}

static void jt_free_all(JobTable *t)
{
    for (size_t k = 0; k < t->nnames; k++)
        Py_CLEAR(t->names[k].str);
    PyMem_Free(t->jobs);
    PyMem_Free(t->slots);
    PyMem_Free(t->res);
    PyMem_Free(t->names);
    PyMem_Free(t->nslots);
    PyMem_Free(t->narena);
    PyMem_Free(t->order);
    t->jobs = NULL;
    t->slots = NULL;
    t->res = NULL;
    t->names = NULL;
    t->nslots = NULL;
    t->narena = NULL;
    t->order = NULL;
}

static void jt_dealloc(JobTable *t)
{
    jt_free_all(t);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static Py_ssize_t jt_len(JobTable *t) { return (Py_ssize_t)t->live; }

static int id_arg(PyObject *o, const uint8_t **id)
{
    if (!PyBytes_Check(o) || PyBytes_GET_SIZE(o) != JOB_ID_SIZE) {
        PyErr_Format(PyExc_TypeError, "a job id is %d bytes", JOB_ID_SIZE);
        return -1;
    }
    *id = (const uint8_t *)PyBytes_AS_STRING(o);
    return 0;
}

static int jt_contains(JobTable *t, PyObject *key)
{
    if (!PyBytes_Check(key) || PyBytes_GET_SIZE(key) != JOB_ID_SIZE)
        return 0;
    size_t slot;
    return jt_find(t, (const uint8_t *)PyBytes_AS_STRING(key), &slot) >= 0;
}

static PyObject *i128_obj(i128 v) { return pylong_i128(v); }

/* (kind, name, ttr, ttl, priority, max_attempts, max_fails, created_ns, scheduled_ns, log_expires_ns,
    payload_len, payload_crc, seg, offset, state, attempts, result) */
static PyObject *row_tuple(JobTable *t, JobRec *j)
{
    PyObject *res;
    if (j->has_res)
        res = PyBytes_FromStringAndSize(t->res + j->res_off, j->res_len);
    else {
        res = Py_None;
        Py_INCREF(res);
    }
    PyObject *sched;
    if (j->kind == 2)
        sched = PyLong_FromLongLong(j->sched);
    else {
        sched = Py_None;
        Py_INCREF(sched);
    }
    PyObject *name = name_str(t, j->name);
    if (res == NULL || sched == NULL || name == NULL) {
        Py_XDECREF(res);
        Py_XDECREF(sched);
        Py_XDECREF(name);
        return NULL;
    }
    return Py_BuildValue("(iNkkiiiLNLkkkKiIN)", j->kind, name, (unsigned long)j->ttr, (unsigned long)j->ttl, j->prio,
                         j->ma, j->mf, (long long)j->created, sched, (long long)j->logexp, (unsigned long)j->plen,
                         (unsigned long)j->pcrc, (unsigned long)j->seg, (unsigned long long)j->off, j->state,
                         (unsigned int)j->attempts, res);
}

static PyObject *jt_get_row(JobTable *t, PyObject *key)
{
    const uint8_t *id;
    if (id_arg(key, &id) < 0)
        return NULL;
    size_t slot;
    Py_ssize_t ix = jt_find(t, id, &slot);
    if (ix < 0)
        Py_RETURN_NONE;
    return row_tuple(t, &t->jobs[ix]);
}

static PyObject *jt_ids(JobTable *t, PyObject *unused)
{
    PyObject *out = PyList_New((Py_ssize_t)t->live);
    if (out == NULL)
        return NULL;
    Py_ssize_t w = 0;
    for (size_t k = 0; k < t->n; k++) {
        if (!t->jobs[k].kind)
            continue;
        PyObject *b = PyBytes_FromStringAndSize((const char *)t->jobs[k].id, JOB_ID_SIZE);
        if (b == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, w++, b);
    }
    return out;
}

static PyObject *jt_sorted_ids(JobTable *t, PyObject *unused)
{
    if (jt_sort(t) < 0)
        return NULL;
    PyObject *out = PyList_New((Py_ssize_t)t->order_n);
    if (out == NULL)
        return NULL;
    for (size_t k = 0; k < t->order_n; k++) {
        PyObject *b = PyBytes_FromStringAndSize((const char *)t->jobs[t->order[k]].id, JOB_ID_SIZE);
        if (b == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)k, b);
    }
    return out;
}

static PyObject *jt_rows(JobTable *t, PyObject *unused)
{
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    for (size_t k = 0; k < t->n; k++) {
        if (!t->jobs[k].kind)
            continue;
        PyObject *row = row_tuple(t, &t->jobs[k]);
        PyObject *id = row ? PyBytes_FromStringAndSize((const char *)t->jobs[k].id, JOB_ID_SIZE) : NULL;
        PyObject *full = NULL;
        if (id != NULL) {
            full = PyTuple_New(PyTuple_GET_SIZE(row) + 1);
            if (full != NULL) {
                PyTuple_SET_ITEM(full, 0, id);
                id = NULL;
                for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(row); i++) {
                    Py_INCREF(PyTuple_GET_ITEM(row, i));
                    PyTuple_SET_ITEM(full, i + 1, PyTuple_GET_ITEM(row, i));
                }
            }
        }
        Py_XDECREF(row);
        Py_XDECREF(id);
        if (full == NULL || PyList_Append(out, full) < 0) {
            Py_XDECREF(full);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(full);
    }
    return out;
}

static int get_i64(PyObject *o, int64_t *v)
{
    long long x = PyLong_AsLongLong(o);
    if (x == -1 && PyErr_Occurred())
        return -1;
    *v = x;
    return 0;
}

static int get_u(PyObject *o, uint64_t max, uint64_t *v)
{
    unsigned long long x = PyLong_AsUnsignedLongLong(o);
    if (x == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    if (x > max) {
        PyErr_SetString(PyExc_OverflowError, "JobTable.put: a field is out of range");
        return -1;
    }
    *v = x;
    return 0;
}

PyDoc_STRVAR(jt_put_doc, "put(id, row): insert (at the end) or replace the job; row as get_row returns it.");

static PyObject *jt_put(JobTable *t, PyObject *args)
{
    PyObject *key, *row;
    if (!PyArg_ParseTuple(args, "OO!:put", &key, &PyTuple_Type, &row))
        return NULL;
    const uint8_t *id;
    if (id_arg(key, &id) < 0)
        return NULL;
    if (PyTuple_GET_SIZE(row) != 17) {
        PyErr_SetString(PyExc_ValueError, "JobTable.put: a row has 17 fields");
        return NULL;
    }
#define F(i) PyTuple_GET_ITEM(row, i)
    uint64_t kind, ttr, ttl, ma, mf, plen, pcrc, seg, off, state, att;
    int64_t prio, created, sched = 0, logexp;
    if (get_u(F(0), 2, &kind) < 0 || get_u(F(2), 0xFFFFFFFFu, &ttr) < 0 || get_u(F(3), 0xFFFFFFFFu, &ttl) < 0 ||
        get_i64(F(4), &prio) < 0 || get_u(F(5), 255, &ma) < 0 || get_u(F(6), 255, &mf) < 0 ||
        get_i64(F(7), &created) < 0 || (F(8) != Py_None && get_i64(F(8), &sched) < 0) ||
        get_i64(F(9), &logexp) < 0 || get_u(F(10), 0xFFFFFFFFu, &plen) < 0 ||
        get_u(F(11), 0xFFFFFFFFu, &pcrc) < 0 || get_u(F(12), 0xFFFFFFFFu, &seg) < 0 ||
        get_u(F(13), (uint64_t)-1, &off) < 0 || get_u(F(14), 4, &state) < 0 ||
        get_u(F(15), 0xFFFFFFFFu, &att) < 0)
        return NULL;
    if (kind < 1 || prio < INT32_MIN || prio > INT32_MAX || (kind == 2) != (F(8) != Py_None) ||
        !PyUnicode_Check(F(1)) || (F(16) != Py_None && !PyBytes_Check(F(16)))) {
        PyErr_SetString(PyExc_ValueError, "JobTable.put: bad row");
        return NULL;
    }
    Py_ssize_t nlen;
    const char *nm = PyUnicode_AsUTF8AndSize(F(1), &nlen);
    if (nm == NULL)
        return NULL;
    if (!name_ok((const unsigned char *)nm, nlen)) {   /* what replay admits: the encoders copy names as is */
        PyErr_SetString(PyExc_ValueError, "JobTable.put: the name is not [A-Za-z0-9_.-]{1,255}");
        return NULL;
    }
    uint32_t name;
    if (name_ref(t, (const uint8_t *)nm, (size_t)nlen, &name) < 0)
        return NULL;
    size_t slot;
    Py_ssize_t ix = jt_find(t, id, &slot);
    JobRec *j;
    if (ix >= 0) {
        j = &t->jobs[ix];
        name_unref(t, j->name);
        if (j->has_res)
            t->res_dead += j->res_len;
        j->has_res = 0;
        t->ver++;
    } else if ((j = jt_insert(t, id, slot)) == NULL) {
        name_unref(t, name);
        return NULL;
    }
    j->kind = (uint8_t)kind;
    j->name = name;
    j->ttr = (uint32_t)ttr;
    j->ttl = (uint32_t)ttl;
    j->prio = (int32_t)prio;
    j->ma = (uint8_t)ma;
    j->mf = (uint8_t)mf;
    j->created = created;
    j->sched = sched;
    j->logexp = logexp;
    j->plen = (uint32_t)plen;
    j->pcrc = (uint32_t)pcrc;
    j->seg = (uint32_t)seg;
    j->off = off;
    j->state = (uint8_t)state;
    j->attempts = (uint32_t)att;
    if (F(16) != Py_None && res_set(t, j, PyBytes_AS_STRING(F(16)), (size_t)PyBytes_GET_SIZE(F(16))) < 0)
        return NULL;
#undef F
    Py_RETURN_NONE;
}

static PyObject *jt_delete_m(JobTable *t, PyObject *key)
{
    const uint8_t *id;
    if (id_arg(key, &id) < 0)
        return NULL;
    size_t slot;
    Py_ssize_t ix = jt_find(t, id, &slot);
    if (ix < 0) {
        PyErr_SetObject(PyExc_KeyError, key);
        return NULL;
    }
    if (jt_delete(t, ix, slot) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *jt_note_counts(JobTable *t, PyObject *unused)
{
    size_t adds = 0, leased = 0;
    for (size_t k = 0; k < t->n; k++) {
        JobRec *j = &t->jobs[k];
        adds += j->kind == 1;
        leased += j->kind && j->state == 4;
    }
    return Py_BuildValue("(nn)", (Py_ssize_t)adds, (Py_ssize_t)leased);
}

/* ([jobs per state], {queue name: [jobs per state]}) */
static PyObject *jt_counts(JobTable *t, PyObject *unused)
{
    size_t by[5] = {0};
    size_t *per = PyMem_Calloc((t->nnames ? t->nnames : 1) * 5, sizeof(size_t));
    if (per == NULL)
        return PyErr_NoMemory();
    for (size_t k = 0; k < t->n; k++) {
        JobRec *j = &t->jobs[k];
        if (!j->kind)
            continue;
        by[j->state]++;
        per[(size_t)j->name * 5 + j->state]++;
    }
    PyObject *queues = PyDict_New(), *out = NULL;
    if (queues == NULL)
        goto done;
    for (size_t k = 0; k < t->nnames; k++) {
        size_t *c = per + k * 5;
        if (!(c[0] | c[1] | c[2] | c[3] | c[4]))
            continue;
        PyObject *nm = name_str(t, (uint32_t)k);
        PyObject *l = nm ? Py_BuildValue("[nnnnn]", c[0], c[1], c[2], c[3], c[4]) : NULL;
        int r = l ? PyDict_SetItem(queues, nm, l) : -1;
        Py_XDECREF(nm);
        Py_XDECREF(l);
        if (r < 0)
            goto done;
    }
    out = Py_BuildValue("([nnnnn]O)", by[0], by[1], by[2], by[3], by[4], queues);
done:
    Py_XDECREF(queues);
    PyMem_Free(per);
    return out;
}

static PyObject *jt_memory(JobTable *t, PyObject *unused)
{
    size_t b = t->cap * sizeof(JobRec) + (t->slots ? (t->mask + 1) * 4 : 0) + t->res_cap + t->names_cap *
               sizeof(NameRec) + (t->nslots ? (t->nmask + 1) * 4 : 0) + t->narena_cap +
               (t->order ? t->order_n * 4 : 0);
    return PyLong_FromSize_t(b);
}
