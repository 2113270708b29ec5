/* The request core of `wqtool serve`: add, lease (of a ready job), complete and fail handled in C, over the very
 * objects the Python server keeps (part of _proto.c: one translation unit, its parsers and record encoders).
 *
 * Why. At one connection the request path cost 37-48 us of CPU per request (bench_serve_sched.py), and beside
 * CPU burners a request waits for a CPU in proportion to the CPU it asks for (bench/floor/README.md: C framing
 * plus 20 us of Python per request reached 0.68-1.01x workq-server, plus 40 us 0.45x). The profile of the
 * in-process path (bench_serve_inproc.py --profile, 1 connection, add -> lease -> complete: 20.7 us per request
 * without sockets or the event loop) put half of it in Conn.execute: the handler, the queue operation and
 * _log_record, some fifteen Python frames per request; the job table, the ready list and the heap themselves
 * were a small part (JobTable.put 0.5 us, the heap push 0.7 us). So the shape is (a) of the design note: C
 * handlers over the same state, not a C-owned state.
 *
 * What. core_run(conn, buf, pos, turn) takes the connection's buffered requests from pos on, one after the other,
 * and answers those it can entirely here: the framing (a CRLF line, single-space tokens, the body and its CRLF),
 * upstream's checks in upstream's order, the mutation of the live queue (JobTable rows through the table's own
 * put/get_row, the Entry objects of queue.py made and changed through their slots, the FewSorted ready list, the
 * timer heap through _heapq.heappush with queue.py's (at << _AT_SHIFT | rank << _SEQ_BITS | seq, obj) keys), the
 * record through the encoders above into Server.pending (and Server._adds for an add's body), the reply into
 * conn.out tagged with Server.lsn, the reply counter. It stops at the first request it does not take, which the
 * Python path (Conn._process -> Handlers -> LiveQueue) then handles unchanged, and returns how many it answered.
 *
 * It takes a request only when nothing but the common case can happen, and decides that before changing
 * anything: not mine are flags, a token starting with '-', runs of spaces, an incomplete line or body, any
 * invalid field (the Python path answers the error), read-only mode, a closed server, a timer due (the Python
 * path runs LiveQueue.advance first), a queue not yet made or name not yet interned, a ready list that is a
 * SortedKeyList (past FewSorted.LIMIT), waiters on the queue (add), a lease that must wait, a job at the hard
 * attempt cap, a body that is not held (read back from the log), run jobs, a complete / fail of a job that is
 * not leased, has result waiters or whose stale timer would rebuild the heap, a job table that is not the
 * kernel's (PyJobTable), a queue whose log is not the server's _log_record. So queue.py and handlers.py stay
 * the complete reference (WQTOOL_PURE_PYTHON=1, or the module not built: Server.core is None), and
 * tests/server/test_core_c.py proves the two answer, log and end in the same state byte for byte.
 *
 * Constants: the record layout, opcodes, states and TTR/TTL limits from the generated header (consts.h); the row
 * layout (jobtable.K_*), timer ranks, shifts, list limits, reply bytes from the Python modules at core_init. */

static PyTypeObject *C_Entry, *C_FewSorted, *C_JobTable;
static int lone_init(PyObject *cfg);
static PyObject *C_log_func, *C_heappush;
static PyObject *C_OK, *C_TIMEOUT, *C_NOT_FOUND, *C_NOWHERE, *C_ZERO, *C_NEW, *C_ADD;
static PyObject *KEY_ADD_OK, *KEY_LEASE_OK, *KEY_LEASE_TO, *KEY_COMPLETE_OK, *KEY_COMPLETE_NF, *KEY_FAIL_OK,
    *KEY_FAIL_NF;
static Py_ssize_t O_ID, O_NAME, O_KEY, O_WHERE, O_TTL_SEQ, O_TTR_SEQ, O_SCHED_SEQ, O_WAITERS, O_LQ;
static Py_ssize_t O_FS_KEYS, O_FS_JOBS, O_WQ_READY, O_WQ_WAITERS;
static Py_ssize_t FS_LIMIT, OUT_HIGH_C, MAX_READ_C, MAX_WAIT_C, HARD_ATTEMPTS;
static int K_STATE_C, K_ATT_C, K_MA_C, K_RES_C, K_TTR_C, AT_SHIFT_C, SEQ_BITS_C, R_TTL_C, R_TTR_C, IN_READY_C,
    IN_NONE_C, ROW_LEN;
static unsigned long long core_handled_n;
static PyObject *S_srv, *S_handlers, *S_read_only, *S_queue, *S_log, *S_closed, *S_table, *S_clock, *S_heap,
    *S_jobs, *S_names, *S_queues, *S_unwritten, *S_recent, *S_seq, *S_stale, *S_pending, *S_adds, *S_lsn,
    *S_durable_lsn, *S_commit_scheduled, *S_retry_handle, *S_inline, *S_loop, *S_call_soon, *S_commit_tick,
    *S_replies, *S_dirty, *S_out, *S_out_bytes, *S_pos, *S_scan, *S_put, *S_get_row, *S_append;
static uint64_t ZERO_KEY_TIME;          /* job_key's time field of an add (Go's zero time's UnixNano, biased) */

#define SLOT(o, off) (*(PyObject **)((char *)(o) + (off)))
#define B63 ((uint64_t)1 << 63)

static Py_ssize_t slot_offset(PyTypeObject *t, const char *name)
{
    PyObject *d = PyDict_GetItemString(t->tp_dict, name);
    if (d == NULL || !Py_IS_TYPE(d, &PyMemberDescr_Type)) {
        PyErr_Format(PyExc_TypeError, "core_init: %s.%s is not a slot", t->tp_name, name);
        return -1;
    }
    return ((PyMemberDescrObject *)d)->d_member->offset;
}

static int cfg_int(PyObject *cfg, const char *k, Py_ssize_t *out)
{
    PyObject *v = PyDict_GetItemString(cfg, k);
    if (v == NULL) {
        PyErr_Format(PyExc_KeyError, "core_init: %s", k);
        return -1;
    }
    *out = PyLong_AsSsize_t(v);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

static PyObject *cfg_obj(PyObject *cfg, const char *k)
{
    PyObject *v = PyDict_GetItemString(cfg, k);
    if (v == NULL)
        PyErr_Format(PyExc_KeyError, "core_init: %s", k);
    return Py_XNewRef(v);
}

static PyObject *pair(const char *a, const char *b)
{
    return Py_BuildValue("(y#y#)", a, (Py_ssize_t)strlen(a), b, (Py_ssize_t)4);
}

/* core_init({...}): queue.py's classes and constants (server.py calls it once) */
static PyObject *p_core_init(PyObject *self, PyObject *cfg)
{
    if (!PyDict_Check(cfg)) {
        PyErr_SetString(PyExc_TypeError, "core_init: a dict expected");
        return NULL;
    }
    Py_ssize_t v[12];
    static const char *ints[12] = {"K_STATE", "K_ATT", "K_MA", "K_RES", "K_TTR", "AT_SHIFT", "SEQ_BITS", "R_TTL",
                                   "R_TTR", "IN_READY", "IN_NONE", "ROW_LEN"};
    for (int i = 0; i < 12; i++)
        if (cfg_int(cfg, ints[i], &v[i]) < 0)
            return NULL;
    K_STATE_C = (int)v[0], K_ATT_C = (int)v[1], K_MA_C = (int)v[2], K_RES_C = (int)v[3], K_TTR_C = (int)v[4];
    AT_SHIFT_C = (int)v[5], SEQ_BITS_C = (int)v[6], R_TTL_C = (int)v[7], R_TTR_C = (int)v[8];
    IN_READY_C = (int)v[9], IN_NONE_C = (int)v[10], ROW_LEN = (int)v[11];
    if (cfg_int(cfg, "FS_LIMIT", &FS_LIMIT) < 0 || cfg_int(cfg, "OUT_HIGH", &OUT_HIGH_C) < 0 ||
            cfg_int(cfg, "MAX_READ", &MAX_READ_C) < 0 || cfg_int(cfg, "MAX_WAIT", &MAX_WAIT_C) < 0 ||
            cfg_int(cfg, "HARD_ATTEMPTS", &HARD_ATTEMPTS) < 0)
        return NULL;
    PyObject *e = cfg_obj(cfg, "Entry"), *fs = cfg_obj(cfg, "FewSorted"), *wq = cfg_obj(cfg, "WorkQueue"),
             *jt = cfg_obj(cfg, "JobTable");
    if (e == NULL || fs == NULL || wq == NULL || jt == NULL || !PyType_Check(e) || !PyType_Check(fs) ||
            !PyType_Check(wq) || !PyType_Check(jt)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "core_init: classes expected");
        Py_XDECREF(e), Py_XDECREF(fs), Py_XDECREF(wq), Py_XDECREF(jt);
        return NULL;
    }
    C_Entry = (PyTypeObject *)e, C_FewSorted = (PyTypeObject *)fs, C_JobTable = (PyTypeObject *)jt;
    PyTypeObject *W = (PyTypeObject *)wq;
    if ((O_ID = slot_offset(C_Entry, "id")) < 0 || (O_NAME = slot_offset(C_Entry, "name")) < 0 ||
            (O_KEY = slot_offset(C_Entry, "key")) < 0 || (O_WHERE = slot_offset(C_Entry, "where")) < 0 ||
            (O_TTL_SEQ = slot_offset(C_Entry, "ttl_seq")) < 0 || (O_TTR_SEQ = slot_offset(C_Entry, "ttr_seq")) < 0 ||
            (O_SCHED_SEQ = slot_offset(C_Entry, "sched_seq")) < 0 ||
            (O_WAITERS = slot_offset(C_Entry, "waiters")) < 0 || (O_LQ = slot_offset(C_Entry, "lq")) < 0 ||
            (O_FS_KEYS = slot_offset(C_FewSorted, "keys")) < 0 || (O_FS_JOBS = slot_offset(C_FewSorted, "jobs")) < 0 ||
            (O_WQ_READY = slot_offset(W, "ready")) < 0 || (O_WQ_WAITERS = slot_offset(W, "waiters")) < 0) {
        Py_DECREF(wq);
        return NULL;
    }
    Py_DECREF(wq);
    if ((C_log_func = cfg_obj(cfg, "log_record")) == NULL || (C_OK = cfg_obj(cfg, "OK")) == NULL ||
            (C_TIMEOUT = cfg_obj(cfg, "TIMEOUT")) == NULL || (C_NOT_FOUND = cfg_obj(cfg, "NOT_FOUND")) == NULL ||
            (C_NOWHERE = cfg_obj(cfg, "NOWHERE")) == NULL)
        return NULL;
    PyObject *hq = PyImport_ImportModule("_heapq");
    if (hq == NULL)
        return NULL;
    C_heappush = PyObject_GetAttrString(hq, "heappush");
    Py_DECREF(hq);
    C_ZERO = PyLong_FromLong(0);
    C_NEW = PyLong_FromLong(ST_NEW);
    C_ADD = PyLong_FromLong(CMD_ADD);
    KEY_ADD_OK = pair("add", "+OK\r");
    KEY_LEASE_OK = pair("lease", "+OK ");
    KEY_LEASE_TO = pair("lease", "-TIM");
    KEY_COMPLETE_OK = pair("complete", "+OK\r");
    KEY_COMPLETE_NF = pair("complete", "-NOT");
    KEY_FAIL_OK = pair("fail", "+OK\r");
    KEY_FAIL_NF = pair("fail", "-NOT");
    if (C_heappush == NULL || !C_ZERO || !C_NEW || !C_ADD || !KEY_ADD_OK || !KEY_LEASE_OK || !KEY_LEASE_TO ||
            !KEY_COMPLETE_OK || !KEY_COMPLETE_NF || !KEY_FAIL_OK || !KEY_FAIL_NF)
        return NULL;
#define I(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL
    I(S_srv, "srv"); I(S_handlers, "handlers"); I(S_read_only, "read_only"); I(S_queue, "queue"); I(S_log, "log");
    I(S_closed, "_closed"); I(S_table, "table"); I(S_clock, "clock"); I(S_heap, "_heap"); I(S_jobs, "jobs");
    I(S_names, "_names"); I(S_queues, "queues"); I(S_unwritten, "unwritten"); I(S_recent, "recent");
    I(S_seq, "_seq"); I(S_stale, "_stale"); I(S_pending, "pending"); I(S_adds, "_adds"); I(S_lsn, "lsn");
    I(S_durable_lsn, "durable_lsn"); I(S_commit_scheduled, "_commit_scheduled"); I(S_retry_handle, "_retry_handle");
    I(S_inline, "inline"); I(S_loop, "loop"); I(S_call_soon, "call_soon"); I(S_commit_tick, "_tick");
    I(S_replies, "replies"); I(S_dirty, "dirty"); I(S_out, "out"); I(S_out_bytes, "out_bytes"); I(S_pos, "pos");
    I(S_scan, "scan"); I(S_put, "put"); I(S_get_row, "get_row"); I(S_append, "append");
#undef I
    /* wire.go_unix_nano(GO_ZERO_UNIX_NS): the int64 wrap-around of year 1's Unix ns, then biased by 2**63 */
    ZERO_KEY_TIME = (uint64_t)(-UNIX_TO_INTERNAL) * (uint64_t)NS + B63;
    if (lone_init(cfg) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *p_core_handled(PyObject *self, PyObject *unused)
{
    return PyLong_FromUnsignedLongLong(core_handled_n);
}

/* ---------------------------------------------------------------- small helpers */

/* an int attribute, or -1 with an error (every one read here is >= 0) */
static long long get_ll(PyObject *o, PyObject *name)
{
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL)
        return -1;
    long long x = PyLong_AsLongLong(v);
    Py_DECREF(v);
    return x;
}

static int set_ll(PyObject *o, PyObject *name, long long x)
{
    PyObject *v = PyLong_FromLongLong(x);
    if (v == NULL)
        return -1;
    int r = PyObject_SetAttr(o, name, v);
    Py_DECREF(v);
    return r;
}

/* queue.py's timer key: at << _AT_SHIFT | rank << _SEQ_BITS | seq (at >= 0) */
static PyObject *timer_key(long long at, int rank, long long seq)
{
    PyObject *a = PyLong_FromLongLong(at), *sh = PyLong_FromLong(AT_SHIFT_C), *r = NULL, *lo = NULL, *k = NULL;
    if (a == NULL || sh == NULL)
        goto out;
    r = PyNumber_Lshift(a, sh);
    if (r == NULL)
        goto out;
    lo = PyLong_FromUnsignedLongLong(((unsigned long long)rank << SEQ_BITS_C) | (unsigned long long)seq);
    if (lo == NULL)
        goto out;
    k = PyNumber_Or(r, lo);
out:
    Py_XDECREF(a), Py_XDECREF(sh), Py_XDECREF(r), Py_XDECREF(lo);
    return k;
}

/* LiveQueue._push: a new sequence number, the heap entry (key, obj); the key (new reference) or NULL */
static PyObject *push_timer(PyObject *q, long long at, int rank, PyObject *obj)
{
    long long seq = get_ll(q, S_seq);
    if (seq < 0 && PyErr_Occurred())
        return NULL;
    seq += 1;
    if (set_ll(q, S_seq, seq) < 0)
        return NULL;
    PyObject *k = timer_key(at, rank, seq);
    if (k == NULL)
        return NULL;
    PyObject *heap = PyObject_GetAttr(q, S_heap), *item = PyTuple_Pack(2, k, obj), *r = NULL;
    if (heap != NULL && item != NULL) {
        PyObject *a[2] = {heap, item};
        r = PyObject_Vectorcall(C_heappush, a, 2, NULL);
    }
    Py_XDECREF(heap), Py_XDECREF(item);
    if (r == NULL) {
        Py_DECREF(k);
        return NULL;
    }
    Py_DECREF(r);
    return k;
}

/* 1: a timer of the queue is due at now (Handlers.execute's own test: heap[0][0] < (now + 1) << _AT_SHIFT),
 * 0: none, -1: error */
static int timer_due(PyObject *heap, long long now)
{
    if (!PyList_Check(heap))
        return 1;
    if (PyList_GET_SIZE(heap) == 0)
        return 0;
    PyObject *top = PyList_GET_ITEM(heap, 0);
    if (!PyTuple_Check(top) || PyTuple_GET_SIZE(top) < 1)
        return 1;
    PyObject *lim = timer_key(now + 1, 0, 0);
    if (lim == NULL)
        return -1;
    int r = PyObject_RichCompareBool(PyTuple_GET_ITEM(top, 0), lim, Py_LT);
    Py_DECREF(lim);
    return r;
}

static int valid_name_c(const unsigned char *s, Py_ssize_t n)
{
    if (n < 1 || n > MAX_NAME_LEN)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
              c == '-'))
            return 0;
    }
    return 1;
}

static int is_v4_c(const unsigned char *j)
{
    return j[6] >> 4 == 4 && (j[8] & 0xC0) == 0x80;
}

/* a uint of at most `bits` bits (wire.parse_uint): 1 with *v, else 0 */
static int uint_c(const unsigned char *s, Py_ssize_t n, int bits, uint64_t *v)
{
    return digits(s, n, v) == 1 && (bits >= 64 || (*v >> bits) == 0);
}

/* the server's record: Server._log_record's bookkeeping (pending, lsn, the commit scheduled); `entry` for an
 * add's record (Server._adds). Steals rec. */
static int log_record(PyObject *srv, PyObject *rec, PyObject *entry)
{
    int ok = -1;
    PyObject *pending = NULL, *adds = NULL, *t = NULL;
    if (rec == NULL)
        return -1;
    if (entry != NULL) {
        PyObject *id = PyLong_FromVoidPtr(rec);
        if (id == NULL || (adds = PyObject_GetAttr(srv, S_adds)) == NULL || PyObject_SetItem(adds, id, entry) < 0) {
            Py_XDECREF(id);
            goto out;
        }
        Py_DECREF(id);
    }
    if ((pending = PyObject_GetAttr(srv, S_pending)) == NULL || PyList_Append(pending, rec) < 0)
        goto out;
    long long lsn = get_ll(srv, S_lsn);
    if ((lsn < 0 && PyErr_Occurred()) || set_ll(srv, S_lsn, lsn + 1) < 0)
        goto out;
    if ((t = PyObject_GetAttr(srv, S_commit_scheduled)) == NULL)
        goto out;
    int sched = PyObject_IsTrue(t);
    Py_CLEAR(t);
    if (sched < 0 || (t = PyObject_GetAttr(srv, S_retry_handle)) == NULL)
        goto out;
    if (!sched && t == Py_None) {
        if (PyObject_SetAttr(srv, S_commit_scheduled, Py_True) < 0)
            goto out;
        Py_CLEAR(t);
        if ((t = PyObject_GetAttr(srv, S_inline)) == NULL)
            goto out;
        int inl = PyObject_IsTrue(t);
        if (inl < 0)
            goto out;
        if (!inl) {
            PyObject *loop = PyObject_GetAttr(srv, S_loop), *tick = PyObject_GetAttr(srv, S_commit_tick), *r = NULL;
            if (loop != NULL && tick != NULL)
                r = PyObject_CallMethodOneArg(loop, S_call_soon, tick);
            Py_XDECREF(loop), Py_XDECREF(tick);
            if (r == NULL)
                goto out;
            Py_DECREF(r);
        }
    }
    ok = 0;
out:
    Py_DECREF(rec);
    Py_XDECREF(pending), Py_XDECREF(adds), Py_XDECREF(t);
    return ok;
}

/* Conn.execute's reply: counted, queued behind the connection's earlier replies with the log position it depends
 * on (Server.lsn: read-only mode never comes here), the connection marked dirty when that is not durable yet */
static int reply(PyObject *srv, PyObject *conn, PyObject *key, PyObject *res)
{
    int ok = -1;
    PyObject *replies = PyObject_GetAttr(srv, S_replies), *n = NULL, *lsn = NULL, *item = NULL, *out = NULL, *r;
    if (replies == NULL)
        goto out;
    n = PyObject_GetItem(replies, key);         /* Counter: 0 when missing */
    if (n == NULL)
        goto out;
    r = PyNumber_Add(n, Py_True);               /* (True == 1) */
    Py_SETREF(n, r);
    if (n == NULL || PyObject_SetItem(replies, key, n) < 0)
        goto out;
    if ((lsn = PyObject_GetAttr(srv, S_lsn)) == NULL || (item = PyTuple_Pack(2, lsn, res)) == NULL ||
            (out = PyObject_GetAttr(conn, S_out)) == NULL)
        goto out;
    r = PyObject_CallMethodOneArg(out, S_append, item);
    if (r == NULL)
        goto out;
    Py_DECREF(r);
    long long ob = get_ll(conn, S_out_bytes);
    if ((ob < 0 && PyErr_Occurred()) || set_ll(conn, S_out_bytes, ob + PyBytes_GET_SIZE(res)) < 0)
        goto out;
    long long durable = get_ll(srv, S_durable_lsn);
    if (durable < 0 && PyErr_Occurred())
        goto out;
    long long l = PyLong_AsLongLong(lsn);
    if (l > durable) {
        PyObject *dirty = PyObject_GetAttr(srv, S_dirty);
        if (dirty == NULL || PySet_Add(dirty, conn) < 0) {
            Py_XDECREF(dirty);
            goto out;
        }
        Py_DECREF(dirty);
    }
    ok = 0;
out:
    Py_XDECREF(replies), Py_XDECREF(n), Py_XDECREF(lsn), Py_XDECREF(item), Py_XDECREF(out);
    return ok;
}

/* bytes comparison of a and b (the order of Python's bytes <) */
static int key_cmp(PyObject *a, PyObject *b)
{
    Py_ssize_t na = PyBytes_GET_SIZE(a), nb = PyBytes_GET_SIZE(b);
    int c = memcmp(PyBytes_AS_STRING(a), PyBytes_AS_STRING(b), (size_t)(na < nb ? na : nb));
    return c != 0 ? c : (na > nb) - (na < nb);
}

/* ---------------------------------------------------------------- the commands */

typedef struct {
    const unsigned char *p[8];
    Py_ssize_t n[8];
    int count;
} Toks;

/* the request's context, read once per core_run */
typedef struct {
    PyObject *srv, *conn, *q, *table, *clock;
} Ctx;

static int now_ns(Ctx *c, long long *now)
{
    PyObject *t = PyObject_CallNoArgs(c->clock);
    if (t == NULL)
        return -1;
    int over;
    *now = PyLong_AsLongLongAndOverflow(t, &over);
    Py_DECREF(t);
    if (*now == -1 && PyErr_Occurred())
        return -1;
    return over || *now < 0 ? 0 : 1;
}

/* add <id> <name> <ttr> <ttl> <size> (no flags): 1 answered, 0 not mine, -1 error */
static int do_add(Ctx *c, Toks *t, const unsigned char *body, Py_ssize_t blen, long long now)
{
    unsigned char jid[16];
    uint64_t ttr, ttl;
    if (!parse_uuid_c(t->p[1], t->n[1], jid) || !uint_c(t->p[3], t->n[3], 32, &ttr) ||
            !uint_c(t->p[4], t->n[4], 64, &ttl) || !is_v4_c(jid) || !valid_name_c(t->p[2], t->n[2]) ||
            ttr < MIN_TTR_MS || ttr > MAX_TTR_MS || ttl < MIN_TTL_MS || ttl > MAX_TTL_MS ||
            now > INT64_MAX - (long long)ttl * NS_PER_MS)
        return 0;
    long long exp = now + (long long)ttl * NS_PER_MS;
    int res = -1;
    PyObject *jidb = PyBytes_FromStringAndSize((const char *)jid, 16), *nameb = NULL, *jobs = NULL, *names = NULL,
             *queues = NULL, *e = NULL, *row = NULL, *r = NULL, *bodyb = NULL, *unw = NULL, *k = NULL, *rec = NULL;
    PyObject *iv = NULL;
    if (jidb == NULL || (jobs = PyObject_GetAttr(c->q, S_jobs)) == NULL || !PyDict_Check(jobs))
        goto out;
    int has = PyDict_Contains(jobs, jidb);
    if (has != 0) {
        res = has < 0 ? -1 : 0;
        goto out;
    }
    if ((nameb = PyBytes_FromStringAndSize((const char *)t->p[2], t->n[2])) == NULL ||
            (names = PyObject_GetAttr(c->q, S_names)) == NULL || !PyDict_Check(names) ||
            (queues = PyObject_GetAttr(c->q, S_queues)) == NULL || !PyDict_Check(queues))
        goto out;
    PyObject *nm = PyDict_GetItemWithError(names, nameb);     /* (bytes, str), interned by LiveQueue._name */
    if (nm == NULL || !PyTuple_Check(nm) || PyTuple_GET_SIZE(nm) != 2) {
        res = PyErr_Occurred() ? -1 : 0;
        goto out;
    }
    PyObject *wq = PyDict_GetItemWithError(queues, PyTuple_GET_ITEM(nm, 0));
    if (wq == NULL) {
        res = PyErr_Occurred() ? -1 : 0;
        goto out;
    }
    PyObject *ready = SLOT(wq, O_WQ_READY), *waiters = SLOT(wq, O_WQ_WAITERS);
    if (ready == NULL || waiters == NULL || !Py_IS_TYPE(ready, C_FewSorted) || PyObject_Size(waiters) != 0)
        goto notmine;
    PyObject *keys = SLOT(ready, O_FS_KEYS), *lst = SLOT(ready, O_FS_JOBS);
    if (keys == NULL || lst == NULL || !PyList_Check(keys) || !PyList_Check(lst) || PyList_GET_SIZE(keys) >= FS_LIMIT)
        goto notmine;
    /* everything checked: from here on the request is ours (an error is an error, not a decline) */
    if ((bodyb = PyBytes_FromStringAndSize((const char *)body, blen)) == NULL)
        goto out;
    /* job_key(0, None, now, jid): (2**63 - priority, time + 2**63, created + 2**63) big-endian, then the id */
    PyObject *key = PyBytes_FromStringAndSize(NULL, 24 + 16);
    if (key == NULL)
        goto out;
    unsigned char *kp = (unsigned char *)PyBytes_AS_STRING(key);
    uint64_t f[3] = {B63, ZERO_KEY_TIME, (uint64_t)now + B63};
    for (int i = 0; i < 3; i++)
        for (int b = 0; b < 8; b++)
            kp[8 * i + b] = (unsigned char)(f[i] >> (56 - 8 * b));
    memcpy(kp + 24, jid, 16);
    e = C_Entry->tp_alloc(C_Entry, 0);
    if (e == NULL) {
        Py_DECREF(key);
        goto out;
    }
    SLOT(e, O_ID) = Py_NewRef(jidb);
    SLOT(e, O_NAME) = Py_NewRef(PyTuple_GET_ITEM(nm, 0));
    SLOT(e, O_KEY) = key;
    SLOT(e, O_WHERE) = PyLong_FromLong(IN_NONE_C);
    SLOT(e, O_TTL_SEQ) = Py_NewRef(C_ZERO);
    SLOT(e, O_TTR_SEQ) = Py_NewRef(C_ZERO);
    SLOT(e, O_SCHED_SEQ) = Py_NewRef(C_ZERO);
    SLOT(e, O_WAITERS) = Py_NewRef(Py_None);
    SLOT(e, O_LQ) = Py_NewRef(c->q);
    if (SLOT(e, O_WHERE) == NULL)
        goto out;
    /* the row (LiveQueue.add's): kind, name, ttr, ttl, priority, max-attempts, max-fails, created, scheduled,
     * expiry, payload length, payload CRC, segment (NOWHERE until written), offset, state, attempts, result */
    row = Py_BuildValue("(OOKKiiiLOLnkOiOiO)", C_ADD, PyTuple_GET_ITEM(nm, 1), (unsigned long long)ttr,
                        (unsigned long long)ttl, 0, 0, 0, now, Py_None, exp, blen,
                        (unsigned long)crc32c(body, (size_t)blen), C_NOWHERE, 0, C_NEW, 0, Py_None);
    if (row == NULL || PyTuple_GET_SIZE(row) != ROW_LEN)
        goto out;
    if ((r = PyObject_CallMethodObjArgs(c->table, S_put, jidb, row, NULL)) == NULL)
        goto out;
    if ((unw = PyObject_GetAttr(c->q, S_unwritten)) == NULL || PyObject_SetItem(unw, jidb, bodyb) < 0 ||
            PyDict_SetItem(jobs, jidb, e) < 0)
        goto out;
    if ((k = push_timer(c->q, exp, R_TTL_C, e)) == NULL)
        goto out;
    Py_SETREF(SLOT(e, O_TTL_SEQ), k);
    k = NULL;
    long long ns;
    if (now_ns(c, &ns) <= 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_OverflowError, "core: the clock is out of range");
        goto out;
    }
    rec = build_add_record(ns, CMD_ADD, jid, t->p[2], t->n[2], ttr, ttl, 0, 0, 0, body, blen, 1, 0, now);
    if (log_record(c->srv, rec, e) < 0)
        goto out;
    /* _make_ready (no waiters): FewSorted.add — bisect_right of the key, then the key and the entry inserted */
    Py_ssize_t lo = 0, hi = PyList_GET_SIZE(keys);
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (key_cmp(key, PyList_GET_ITEM(keys, mid)) < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    if (PyList_Insert(keys, lo, key) < 0 || PyList_Insert(lst, lo, e) < 0)
        goto out;
    if ((iv = PyLong_FromLong(IN_READY_C)) == NULL)
        goto out;
    Py_SETREF(SLOT(e, O_WHERE), iv);
    iv = NULL;
    res = reply(c->srv, c->conn, KEY_ADD_OK, C_OK) < 0 ? -1 : 1;
    goto out;
notmine:
    res = 0;
out:
    if (res == 0)
        PyErr_Clear();
    Py_XDECREF(jidb), Py_XDECREF(nameb), Py_XDECREF(jobs), Py_XDECREF(names), Py_XDECREF(queues), Py_XDECREF(e);
    Py_XDECREF(row), Py_XDECREF(r), Py_XDECREF(bodyb), Py_XDECREF(unw), Py_XDECREF(k), Py_XDECREF(iv);
    return res;
}

static const char HEXD[] = "0123456789abcdef";

/* lease <name>... <wait> (no flags): 1 answered, 0 not mine, -1 error */
static int do_lease(Ctx *c, Toks *t, long long now)
{
    uint64_t wait;
    if (!uint_c(t->p[t->count - 1], t->n[t->count - 1], 32, &wait) || wait > (uint64_t)MAX_WAIT_C)
        return 0;
    int res = -1, nq = t->count - 2;
    PyObject *queues = PyObject_GetAttr(c->q, S_queues), *row = NULL, *nrow = NULL, *body = NULL, *bodyref = NULL,
             *k = NULL, *out = NULL, *r = NULL;
    PyObject *wqs[6];
    if (queues == NULL || !PyDict_Check(queues))
        goto out;
    for (int i = 0; i < nq; i++) {      /* every name valid and its queue made (else the Python path makes it) */
        if (!valid_name_c(t->p[1 + i], t->n[1 + i]))
            goto notmine;
        PyObject *nb = PyBytes_FromStringAndSize((const char *)t->p[1 + i], t->n[1 + i]);
        if (nb == NULL)
            goto out;
        wqs[i] = PyDict_GetItemWithError(queues, nb);
        Py_DECREF(nb);
        if (wqs[i] == NULL) {
            res = PyErr_Occurred() ? -1 : 0;
            goto out;
        }
        PyObject *ready = SLOT(wqs[i], O_WQ_READY);
        if (ready == NULL || !Py_IS_TYPE(ready, C_FewSorted) || SLOT(ready, O_FS_JOBS) == NULL ||
                SLOT(ready, O_FS_KEYS) == NULL)
            goto notmine;
    }
    PyObject *keys = NULL, *lst = NULL, *e = NULL;
    for (int i = 0; i < nq && e == NULL; i++) {
        PyObject *ready = SLOT(wqs[i], O_WQ_READY);
        lst = SLOT(ready, O_FS_JOBS);
        keys = SLOT(ready, O_FS_KEYS);
        if (PyList_GET_SIZE(lst) > 0)
            e = PyList_GET_ITEM(lst, 0);
    }
    if (e == NULL) {
        if (wait != 0)
            goto notmine;                   /* it waits: a Waiter, the Python path */
        res = reply(c->srv, c->conn, KEY_LEASE_TO, C_TIMEOUT) < 0 ? -1 : 1;
        goto out;
    }
    if (!Py_IS_TYPE(e, C_Entry) || PyList_GET_SIZE(keys) != PyList_GET_SIZE(lst))
        goto notmine;                       /* (a run job: RunEntry) */
    PyObject *jidb = SLOT(e, O_ID), *name = SLOT(e, O_NAME);
    if (jidb == NULL || name == NULL || !PyBytes_Check(jidb) || PyBytes_GET_SIZE(jidb) != 16 || !PyBytes_Check(name))
        goto notmine;
    row = PyObject_CallMethodOneArg(c->table, S_get_row, jidb);
    if (row == NULL)
        goto out;
    if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != ROW_LEN)
        goto notmine;
    long long att = PyLong_AsLongLong(PyTuple_GET_ITEM(row, K_ATT_C));
    long long ttr = PyLong_AsLongLong(PyTuple_GET_ITEM(row, K_TTR_C));
    int ma = PyObject_IsTrue(PyTuple_GET_ITEM(row, K_MA_C));
    if (PyErr_Occurred() || ma < 0)
        goto out;
    if (att >= HARD_ATTEMPTS && !ma)
        goto notmine;                       /* the hard cap: it fails instead (the Python path) */
    /* LiveQueue.payload: held until written, or among the recent bodies; else read back (the Python path) */
    PyObject *unw = PyObject_GetAttr(c->q, S_unwritten);
    if (unw == NULL)
        goto out;
    body = PyDict_GetItemWithError(unw, jidb);
    Py_DECREF(unw);
    if (body == NULL) {
        if (PyErr_Occurred())
            goto out;
        PyObject *recent = PyObject_GetAttr(c->q, S_recent);
        if (recent == NULL)
            goto out;
        PyObject *rc = PyDict_GetItemWithError(recent, jidb);
        if (rc != NULL && PyTuple_Check(rc) && PyTuple_GET_SIZE(rc) == 2 && PyTuple_GET_ITEM(rc, 0) == e)
            body = PyTuple_GET_ITEM(rc, 1);
        Py_DECREF(recent);
        if (body == NULL) {
            res = PyErr_Occurred() ? -1 : 0;
            goto out;
        }
    }
    if (!PyBytes_Check(body) || now > INT64_MAX - ttr * NS_PER_MS)
        goto notmine;
    bodyref = Py_NewRef(body);
    Py_INCREF(e);                           /* (held while the list lets it go) */
    PyObject *eref = e;
    /* ours from here: the ready list's first job popped, then _start_attempt */
    if (PyList_SetSlice(keys, 0, 1, NULL) < 0 || PyList_SetSlice(lst, 0, 1, NULL) < 0) {
        Py_DECREF(eref);
        goto out;
    }
    PyObject *iv = PyLong_FromLong(IN_NONE_C);
    if (iv == NULL) {
        Py_DECREF(eref);
        goto out;
    }
    Py_SETREF(SLOT(eref, O_WHERE), iv);
    if ((nrow = PyTuple_New(ROW_LEN)) == NULL) {
        Py_DECREF(eref);
        goto out;
    }
    for (int i = 0; i < ROW_LEN; i++)
        PyTuple_SET_ITEM(nrow, i, Py_NewRef(PyTuple_GET_ITEM(row, i)));
    PyObject *st = PyLong_FromLong(ST_LEASED), *na = PyLong_FromLongLong(att + 1);
    if (st == NULL || na == NULL) {
        Py_XDECREF(st), Py_XDECREF(na), Py_DECREF(eref);
        goto out;
    }
    Py_SETREF(PyTuple_GET_ITEM(nrow, K_STATE_C), st);
    Py_SETREF(PyTuple_GET_ITEM(nrow, K_ATT_C), na);
    if ((r = PyObject_CallMethodObjArgs(c->table, S_put, jidb, nrow, NULL)) == NULL ||
            (k = push_timer(c->q, now + ttr * NS_PER_MS, R_TTR_C, eref)) == NULL) {
        Py_DECREF(eref);
        goto out;
    }
    Py_SETREF(SLOT(eref, O_TTR_SEQ), k);
    k = NULL;
    long long ns;
    if (now_ns(c, &ns) <= 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_OverflowError, "core: the clock is out of range");
        Py_DECREF(eref);
        goto out;
    }
    if (log_record(c->srv, build_short_record(ns, CMD_START_ATTEMPT, PyBytes_AS_STRING(jidb), NULL, -1), NULL) < 0) {
        Py_DECREF(eref);
        goto out;
    }
    Py_SETREF(SLOT(eref, O_KEY), Py_NewRef(Py_None));
    /* wire.job_reply, joined: +OK 1 CRLF <uuid> <name> <ttr> <size> CRLF <payload> CRLF */
    char head[128];
    const unsigned char *j = (const unsigned char *)PyBytes_AS_STRING(jidb);
    int h = 0;
    memcpy(head, "+OK 1\r\n", 7);
    h = 7;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            head[h++] = '-';
        head[h++] = HEXD[j[i] >> 4];
        head[h++] = HEXD[j[i] & 15];
    }
    head[h++] = ' ';
    Py_ssize_t nl = PyBytes_GET_SIZE(name), bl = PyBytes_GET_SIZE(body);
    char tail[64];
    int tl = snprintf(tail, sizeof tail, " %lld %zd\r\n", ttr, bl);
    out = PyBytes_FromStringAndSize(NULL, h + nl + tl + bl + 2);
    Py_DECREF(eref);
    if (out == NULL)
        goto out;
    char *o = PyBytes_AS_STRING(out);
    memcpy(o, head, (size_t)h);
    memcpy(o + h, PyBytes_AS_STRING(name), (size_t)nl);
    memcpy(o + h + nl, tail, (size_t)tl);
    memcpy(o + h + nl + tl, PyBytes_AS_STRING(body), (size_t)bl);
    memcpy(o + h + nl + tl + bl, "\r\n", 2);
    res = reply(c->srv, c->conn, KEY_LEASE_OK, out) < 0 ? -1 : 1;
    goto out;
notmine:
    res = 0;
out:
    if (res != -1)
        PyErr_Clear();
    Py_XDECREF(queues), Py_XDECREF(row), Py_XDECREF(nrow), Py_XDECREF(k), Py_XDECREF(out), Py_XDECREF(r);
    Py_XDECREF(bodyref);
    return res;
}

/* complete|fail <id> <size> (no flags) of a leased job: 1 answered, 0 not mine, -1 error */
static int do_finish(Ctx *c, Toks *t, int success, const unsigned char *body, Py_ssize_t blen)
{
    unsigned char jid[16];
    if (!parse_uuid_c(t->p[1], t->n[1], jid) || !is_v4_c(jid))
        return 0;
    int res = -1;
    PyObject *jidb = PyBytes_FromStringAndSize((const char *)jid, 16), *jobs = NULL, *row = NULL, *nrow = NULL,
             *r = NULL, *heap = NULL;
    if (jidb == NULL || (jobs = PyObject_GetAttr(c->q, S_jobs)) == NULL || !PyDict_Check(jobs))
        goto out;
    PyObject *e = PyDict_GetItemWithError(jobs, jidb);
    if (e == NULL) {
        if (PyErr_Occurred())
            goto out;
        res = reply(c->srv, c->conn, success ? KEY_COMPLETE_NF : KEY_FAIL_NF, C_NOT_FOUND) < 0 ? -1 : 1;
        goto out;
    }
    if (!Py_IS_TYPE(e, C_Entry) || SLOT(e, O_KEY) != Py_None || SLOT(e, O_WAITERS) != Py_None ||
            SLOT(e, O_WHERE) == NULL || PyLong_AsLong(SLOT(e, O_WHERE)) != IN_NONE_C || SLOT(e, O_TTR_SEQ) == NULL)
        goto notmine;
    row = PyObject_CallMethodOneArg(c->table, S_get_row, jidb);
    if (row == NULL)
        goto out;
    if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != ROW_LEN ||
            PyLong_AsLong(PyTuple_GET_ITEM(row, K_STATE_C)) != ST_LEASED || PyTuple_GET_ITEM(row, K_RES_C) != Py_None)
        goto notmine;
    int ttr_live = PyObject_IsTrue(SLOT(e, O_TTR_SEQ));
    if (ttr_live < 0)
        goto out;
    long long stale = 0;
    if (ttr_live) {                         /* LiveQueue._drop: not when it would rebuild the heap */
        stale = get_ll(c->q, S_stale);
        if ((stale < 0 && PyErr_Occurred()) || (heap = PyObject_GetAttr(c->q, S_heap)) == NULL)
            goto out;
        Py_ssize_t hn = PyObject_Size(heap);
        if (hn < 0)
            goto out;
        if (stale + 1 > 1024 && (stale + 1) * 2 > hn)
            goto notmine;
    }
    /* ours: _finish(COMPLETED | FAILED, result) with the row put, the TTR timer dropped, the record logged */
    PyObject *resb = PyBytes_FromStringAndSize((const char *)body, blen);
    if (resb == NULL || (nrow = PyTuple_New(ROW_LEN)) == NULL) {
        Py_XDECREF(resb);
        goto out;
    }
    for (int i = 0; i < ROW_LEN; i++)
        PyTuple_SET_ITEM(nrow, i, Py_NewRef(PyTuple_GET_ITEM(row, i)));
    PyObject *st = PyLong_FromLong(success ? ST_COMPLETED : ST_FAILED);
    if (st == NULL) {
        Py_DECREF(resb);
        goto out;
    }
    Py_SETREF(PyTuple_GET_ITEM(nrow, K_STATE_C), st);
    Py_SETREF(PyTuple_GET_ITEM(nrow, K_RES_C), resb);
    if ((r = PyObject_CallMethodObjArgs(c->table, S_put, jidb, nrow, NULL)) == NULL)
        goto out;
    if (ttr_live) {
        Py_SETREF(SLOT(e, O_TTR_SEQ), Py_NewRef(C_ZERO));
        if (set_ll(c->q, S_stale, stale + 1) < 0)
            goto out;
    }
    long long ns;
    if (now_ns(c, &ns) <= 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_OverflowError, "core: the clock is out of range");
        goto out;
    }
    if (log_record(c->srv, build_short_record(ns, success ? CMD_COMPLETE : CMD_FAIL, jid, body, blen), NULL) < 0)
        goto out;
    res = reply(c->srv, c->conn, success ? KEY_COMPLETE_OK : KEY_FAIL_OK, C_OK) < 0 ? -1 : 1;
    goto out;
notmine:
    res = 0;
out:
    if (res != -1)
        PyErr_Clear();
    Py_XDECREF(jidb), Py_XDECREF(jobs), Py_XDECREF(row), Py_XDECREF(nrow), Py_XDECREF(r), Py_XDECREF(heap);
    return res;
}

/* One request at buf[pos:]: 1 answered (*end past it), 0 not mine, -1 error */
static int one(Ctx *c, const unsigned char *s, Py_ssize_t n, Py_ssize_t pos, Py_ssize_t from, Py_ssize_t *end)
{
    const unsigned char *nlp = memchr(s + from, '\n', (size_t)(n - from));
    if (nlp == NULL)
        return 0;
    Py_ssize_t nl = nlp - s, e = nl + 1, length = e - pos;
    if (length > MAX_READ_C || length < 2 || s[nl - 1] != '\r')
        return 0;
    Toks t;
    t.count = 0;
    const unsigned char *line = s + pos;
    Py_ssize_t ln = nl - 1 - pos;
    for (Py_ssize_t i = 0; i <= ln;) {      /* single spaces only, no token starting with '-' (flags: Python) */
        Py_ssize_t j = i;
        while (j < ln && line[j] != ' ')
            j++;
        if (j == i || line[i] == '-' || t.count == 8)
            return 0;
        t.p[t.count] = line + i;
        t.n[t.count++] = j - i;
        i = j + 1;
        if (j == ln)
            break;
        if (j + 1 == ln)
            return 0;                       /* a trailing space */
    }
    int cmd;                                /* 1 add, 2 lease, 3 complete, 4 fail */
    if (t.n[0] == 3 && memcmp(t.p[0], "add", 3) == 0 && t.count == 6)
        cmd = 1;
    else if (t.n[0] == 5 && memcmp(t.p[0], "lease", 5) == 0 && t.count >= 3 && t.count <= 8)
        cmd = 2;
    else if (t.n[0] == 8 && memcmp(t.p[0], "complete", 8) == 0 && t.count == 3)
        cmd = 3;
    else if (t.n[0] == 4 && memcmp(t.p[0], "fail", 4) == 0 && t.count == 3)
        cmd = 4;
    else
        return 0;
    const unsigned char *body = NULL;
    Py_ssize_t blen = 0;
    *end = e;
    if (cmd != 2) {
        int si = cmd == 1 ? 5 : 2;
        int64_t size;
        if (!parse_int_c(t.p[si], t.n[si], 64, &size) || size < 0 || size > MAX_BODY)
            return 0;
        Py_ssize_t need = (Py_ssize_t)size + 2;
        if (need > MAX_READ_C - length || n - e < need || s[e + size] != '\r' || s[e + size + 1] != '\n')
            return 0;
        body = s + e;
        blen = (Py_ssize_t)size;
        *end = e + need;
    }
    long long now;
    int r = now_ns(c, &now);
    if (r <= 0)
        return r;
    PyObject *heap = PyObject_GetAttr(c->q, S_heap);
    if (heap == NULL)
        return -1;
    r = timer_due(heap, now);
    Py_DECREF(heap);
    if (r != 0)
        return r < 0 ? -1 : 0;              /* a timer is due: LiveQueue.advance first (the Python path) */
    switch (cmd) {
    case 1:
        r = do_add(c, &t, body, blen, now);
        break;
    case 2:
        r = do_lease(c, &t, now);
        break;
    default:
        r = do_finish(c, &t, cmd == 3, body, blen);
    }
    if (r > 0) {
        idle_bump();                        /* traffic (parse_line's own bump, for the idle spinner) */
        core_handled_n++;
    }
    return r;
}

/* core_run(conn, buf, pos, turn): the requests of conn's buffer from pos on that the core answers, at most turn;
 * conn.pos and conn.scan are moved past them; the count (0: the request at pos is the Python path's) */
static long core_run_c(PyObject *conn, PyObject *buf, Py_ssize_t pos, Py_ssize_t turn)
{
    Ctx c = {NULL, conn, NULL, NULL, NULL};
    PyObject *handlers = NULL, *log = NULL, *t = NULL;
    long done = 0;
    int err = 0;
    if ((c.srv = PyObject_GetAttr(conn, S_srv)) == NULL || (handlers = PyObject_GetAttr(c.srv, S_handlers)) == NULL ||
            (t = PyObject_GetAttr(handlers, S_read_only)) == NULL) {
        err = 1;
        goto out;
    }
    int ro = PyObject_IsTrue(t);
    Py_CLEAR(t);
    if (ro != 0 || (t = PyObject_GetAttr(c.srv, S_closed)) == NULL) {
        err = ro < 0 || PyErr_Occurred();
        goto out;
    }
    int closed = PyObject_IsTrue(t);
    if (closed != 0 || (c.q = PyObject_GetAttr(c.srv, S_queue)) == NULL ||
            (log = PyObject_GetAttr(c.q, S_log)) == NULL) {
        err = closed < 0 || PyErr_Occurred();
        goto out;
    }
    /* the queue logs through this server's _log_record (else: a test's logger, or no log: the Python path) */
    if (!PyMethod_Check(log) || PyMethod_GET_FUNCTION(log) != C_log_func || PyMethod_GET_SELF(log) != c.srv)
        goto out;
    if ((c.table = PyObject_GetAttr(c.q, S_table)) == NULL || (c.clock = PyObject_GetAttr(c.srv, S_clock)) == NULL) {
        err = 1;
        goto out;
    }
    if (!Py_IS_TYPE(c.table, C_JobTable))
        goto out;                           /* a PyJobTable (a field past 64 bits): the Python path */
    const unsigned char *s = (const unsigned char *)PyByteArray_AS_STRING(buf);
    Py_ssize_t n = PyByteArray_GET_SIZE(buf);
    long long scan = get_ll(conn, S_scan);
    if (scan < 0 && PyErr_Occurred()) {
        err = 1;
        goto out;
    }
    Py_ssize_t from = scan > pos && scan <= n ? (Py_ssize_t)scan : pos;
    while (done < turn && pos < n) {
        long long ob = get_ll(conn, S_out_bytes);
        if (ob < 0 && PyErr_Occurred()) {
            err = 1;
            break;
        }
        if (ob >= OUT_HIGH_C)
            break;
        Py_ssize_t end;
        int r = one(&c, s, n, pos, from, &end);
        if (r < 0) {
            err = 1;
            break;
        }
        if (r == 0)
            break;
        done++;
        from = pos = end;
        if (set_ll(conn, S_pos, pos) < 0 || set_ll(conn, S_scan, pos) < 0) {
            err = 1;
            break;
        }
    }
out:
    Py_XDECREF(c.srv), Py_XDECREF(handlers), Py_XDECREF(log), Py_XDECREF(t), Py_XDECREF(c.q), Py_XDECREF(c.table);
    Py_XDECREF(c.clock);
    if (err && PyErr_Occurred())
        return -1;
    PyErr_Clear();
    return done;
}

static PyObject *p_core_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyByteArray_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "core_run(conn, buf: bytearray, pos, turn)");
        return NULL;
    }
    if (C_Entry == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "core_run: core_init() not called");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[2]), turn = PyLong_AsSsize_t(args[3]);
    if ((pos == -1 || turn == -1) && PyErr_Occurred())
        return NULL;
    long done = core_run_c(args[0], args[1], pos, turn);
    return done < 0 ? NULL : PyLong_FromLong(done);
}

/* ---------------------------------------------------------------- the lone connection's turn
 *
 * lone_turn(conn, data): Conn.data_received of the only connection, when nothing else is pending (the common
 * case of one client waiting for each reply): the read appended to conn.buf, core_run over it, and when the core
 * took all of it, the tail of Conn.process done here too — the turn's records written with one write(2) to the
 * current segment (Server._commit -> _append under interval / os: the add's row located), the replies handed to
 * the transport with one write (Server._release -> Conn.flush_out) and the loop timer left alone unless the
 * earliest live deadline moved earlier (Server.after_change). Returns 0 when it took nothing (conn and server
 * untouched: the Python path), 1 when the read is answered, 2 when it took the read but the core stopped before
 * its end (declined or incomplete request): conn.buf holds the rest, srv.inline stays True, and Conn.process (the
 * Python path) goes on with the same inline turn. Anything but the plain case calls the Python method that would
 * have run: -cmdlog-sync always (Server._commit: the fsync and its spinner), a roll-over, a segment not yet
 * written, an appender whose append was replaced (a test's fault injection), a segment number not yet known,
 * replies past OUT_HIGH, a stale timer on top of the heap. A write error is handed to Server._append_failed as
 * _commit does (the segment cut back to its last complete record first, as Appender.repair_tail does): the
 * records stay pending, nothing is acknowledged, the circuit breaker opens.
 *
 * The group turn: a read of one of several connections (or of one while a commit is pending), idle between
 * requests as above, is taken the same way, but its turn is not inline (Conn.process's ``inline`` is False there):
 * the core's records go to Server.pending for the loop iteration's group commit, which the core schedules
 * (Server._tick: commit_tick below, the plain case of Server._commit_tick in C: lone_commit's write, release_c,
 * lone_after_change); its replies leave now only when the first is durable already (lone_flush), and the loop
 * timer is looked at now only when no commit is coming. With 16 connections this took the Python frames of
 * Conn.process, Server._commit, _append, _release and Conn.flush_out off every request (bench_serve_inproc.py
 * --conns 16 --lone: 11.5 -> 9.0 us of CPU a request; docs/serve.md).
 *
 * Why this shape (the turn's tail in C, the event loop still delivering each read) and not a C loop of its own for
 * the lone connection (poll / recv / send behind uvloop's back). The profile of one connection, add -> lease ->
 * complete on the wire with the core on (perf record of the server, 3 s, load 7): uvloop's own code 1.9 % of the
 * samples, the kernel 48 % (sockets, the log write, and the scheduler: the reply's send wakes the client, which
 * preempts the server in that very write), the interpreter 43 % — and cProfile in process put that interpreter time
 * in the frames around the core: Conn.data_received -> process -> _process, Server._commit -> _append -> located,
 * _release -> flush_out, after_change -> next_deadline, a dozen Python frames per request. A C loop of its own
 * would save uvloop's 2 % and its epoll_wait (a poll in its place), and take on uvloop's read and write states,
 * signal delivery, timers and the other connections' accept behind its back; the frames are nearly all of what
 * is ours to cut, and lone_turn cuts them where they run. After it, one request takes one Python frame
 * (Conn.data_received) but for the first add of a queue, an add's row (LiveQueue.located) and a deadline that
 * moved (Server.after_change). Measured: bench_serve_inproc.py --lone, bench_serve_sched.py (docs/serve.md). */

#include <errno.h>
#include <sys/stat.h>

static PyObject *L_closing, *L_blocked, *L_in_process, *L_resume_scheduled, *L_paused_read, *L_paused_write,
    *L_eof, *L_req, *L_buf, *L_conns, *L_last_active, *L_appender, *L_fd, *L_size, *L_segment_size, *L_head_due,
    *L_ap_seq, *L_bytes_written, *L_records_written, *L_metrics, *L_records, *L_commit, *L_flush_out,
    *L_after_change, *L_timer_at, *L_t, *L_write, *L_is_closing, *L_partial_since, *L_lone_write, *L_segs,
    *L_located, *L_append_failed, *L_release, *L_pop, *L_clear, *L_core, *L_lone, *L_commit_tick;
static PyObject *C_ap_append, *C_heappop;
static Py_ssize_t TURN_C, K_SEG_C, K_OFF_C;
static PyObject *C_queue_mod, *L_RECENT, *L_RECENT_BODY;
static unsigned long long lone_turns_n, lone_commits_n, group_turns_n, ticks_n;

static int lone_init(PyObject *cfg)
{
    if ((C_ap_append = cfg_obj(cfg, "Appender_append")) == NULL || cfg_int(cfg, "TURN", &TURN_C) < 0 ||
            cfg_int(cfg, "K_SEG", &K_SEG_C) < 0 || cfg_int(cfg, "K_OFF", &K_OFF_C) < 0 ||
            (C_queue_mod = cfg_obj(cfg, "queue_module")) == NULL)
        return -1;
    PyObject *hq = PyImport_ImportModule("_heapq");
    if (hq == NULL)
        return -1;
    C_heappop = PyObject_GetAttrString(hq, "heappop");
    Py_DECREF(hq);
    if (C_heappop == NULL)
        return -1;
#define I(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return -1
    I(L_closing, "closing"); I(L_blocked, "blocked"); I(L_in_process, "in_process");
    I(L_resume_scheduled, "resume_scheduled"); I(L_paused_read, "paused_read"); I(L_paused_write, "paused_write");
    I(L_eof, "eof"); I(L_req, "req"); I(L_buf, "buf"); I(L_conns, "conns"); I(L_last_active, "last_active");
    I(L_appender, "appender"); I(L_fd, "fd"); I(L_size, "size"); I(L_segment_size, "segment_size");
    I(L_head_due, "_head_due"); I(L_ap_seq, "seq"); I(L_bytes_written, "bytes_written");
    I(L_records_written, "records_written"); I(L_metrics, "metrics"); I(L_records, "records");
    I(L_commit, "_commit"); I(L_flush_out, "flush_out"); I(L_after_change, "after_change");
    I(L_timer_at, "_timer_at"); I(L_t, "t"); I(L_write, "write"); I(L_is_closing, "is_closing");
    I(L_partial_since, "partial_since"); I(L_lone_write, "lone_write"); I(L_segs, "_segs");
    I(L_located, "located"); I(L_append_failed, "_append_failed"); I(L_release, "_release");
    I(L_pop, "pop"); I(L_clear, "clear"); I(L_core, "core"); I(L_RECENT, "RECENT");
    I(L_lone, "lone"); I(L_commit_tick, "_commit_tick");
    I(L_RECENT_BODY, "RECENT_BODY");
#undef I
    return 0;
}

/* 1: o.name is v (identity), 0: not, -1: error */
static int attr_is(PyObject *o, PyObject *name, PyObject *v)
{
    PyObject *x = PyObject_GetAttr(o, name);
    if (x == NULL)
        return -1;
    int r = x == v;
    Py_DECREF(x);
    return r;
}

/* the length of o.name, or -1 with an error */
static Py_ssize_t attr_len(PyObject *o, PyObject *name)
{
    PyObject *x = PyObject_GetAttr(o, name);
    if (x == NULL)
        return -1;
    Py_ssize_t n = PyObject_Size(x);
    Py_DECREF(x);
    return n;
}

static int call0(PyObject *o, PyObject *name)
{
    PyObject *r = PyObject_CallMethodNoArgs(o, name);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

static PyObject *monotonic_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return PyFloat_FromDouble((double)ts.tv_sec + (double)ts.tv_nsec * 1e-9);
}

/* LiveQueue.located(e, seg, off) on the kernel's job table: the row gets the segment and offset, the body is no
 * longer held (kept among the recent ones when small). 0 or -1; another table: the Python method. */
static int located_c(PyObject *q, PyObject *e, PyObject *seg, long long off)
{
    int r = -1;
    PyObject *jobs = NULL, *table = NULL, *row = NULL, *lst = NULL, *tup = NULL, *o = NULL, *unw = NULL,
             *body = NULL, *recent = NULL, *pair2 = NULL;
    if ((table = PyObject_GetAttr(q, S_table)) == NULL || (jobs = PyObject_GetAttr(q, S_jobs)) == NULL ||
            (unw = PyObject_GetAttr(q, S_unwritten)) == NULL || (recent = PyObject_GetAttr(q, S_recent)) == NULL)
        goto out;
    if (!Py_IS_TYPE(table, C_JobTable) || !PyDict_CheckExact(jobs) || !PyDict_CheckExact(unw) ||
            !PyDict_CheckExact(recent)) {
        PyObject *a = PyLong_FromLongLong(off), *rr = NULL;
        if (a != NULL)
            rr = PyObject_CallMethodObjArgs(q, L_located, e, seg, a, NULL);
        Py_XDECREF(a);
        if (rr != NULL) {
            Py_DECREF(rr);
            r = 0;
        }
        goto out;
    }
    PyObject *id = SLOT(e, O_ID);
    PyObject *cur = PyDict_GetItemWithError(jobs, id);
    if (cur != e) {                         /* gone, or another job with the same id now */
        r = PyErr_Occurred() ? -1 : 0;
        goto out;
    }
    if ((row = PyObject_CallMethodOneArg(table, S_get_row, id)) == NULL || (lst = PySequence_List(row)) == NULL ||
            (o = PyLong_FromLongLong(off)) == NULL)
        goto out;
    Py_INCREF(seg);
    if (PyList_SetItem(lst, K_SEG_C, seg) < 0)
        goto out;
    if (PyList_SetItem(lst, K_OFF_C, o) < 0) {
        o = NULL;
        goto out;
    }
    o = NULL;
    if ((tup = PyList_AsTuple(lst)) == NULL)
        goto out;
    {
        PyObject *rr = PyObject_CallMethodObjArgs(table, S_put, id, tup, NULL);
        if (rr == NULL)
            goto out;
        Py_DECREF(rr);
    }
    body = PyDict_GetItemWithError(unw, id);
    if (body == NULL) {
        r = PyErr_Occurred() ? -1 : 0;
        goto out;
    }
    Py_INCREF(body);
    if (PyDict_DelItem(unw, id) < 0)
        goto out;
    /* queue.RECENT and RECENT_BODY read where LiveQueue.located reads them: the module's globals */
    long long recent_n = get_ll(C_queue_mod, L_RECENT), recent_body = get_ll(C_queue_mod, L_RECENT_BODY);
    if (PyErr_Occurred())
        goto out;
    if (PyBytes_Check(body) && PyBytes_GET_SIZE(body) <= recent_body) {
        if (PyDict_Contains(recent, id) == 1 && PyDict_DelItem(recent, id) < 0)
            goto out;
        if ((pair2 = PyTuple_Pack(2, e, body)) == NULL || PyDict_SetItem(recent, id, pair2) < 0)
            goto out;
        if (PyDict_GET_SIZE(recent) > recent_n) {
            Py_ssize_t p = 0;
            PyObject *k, *v;
            if (PyDict_Next(recent, &p, &k, &v)) {
                Py_INCREF(k);
                int d = PyDict_DelItem(recent, k);
                Py_DECREF(k);
                if (d < 0)
                    goto out;
            }
        }
    } else if (!PyBytes_Check(body)) {      /* (a body is bytes; anything else: as Python's len() would) */
        if (PyObject_Size(body) < 0)
            goto out;
    }
    r = 0;
out:
    Py_XDECREF(jobs), Py_XDECREF(table), Py_XDECREF(row), Py_XDECREF(lst), Py_XDECREF(tup), Py_XDECREF(o);
    Py_XDECREF(unw), Py_XDECREF(body), Py_XDECREF(recent), Py_XDECREF(pair2);
    return r;
}

/* Server._commit under interval / os without a roll-over: 1 done (here; the caller releases the replies), 2 the
 * write failed and Server._append_failed took it (the records stay pending; Server._commit releases nothing then),
 * 0 not the plain case (nothing changed: the caller runs Server._commit), -1 error */
static int lone_commit(PyObject *srv)
{
    int ok = -1;
    PyObject *ap = NULL, *pending = NULL, *t = NULL, *joined = NULL, *adds = NULL, *metrics = NULL, *q = NULL;
    if ((t = PyObject_GetAttr(srv, L_lone_write)) == NULL)
        return -1;
    int lw = PyObject_IsTrue(t);
    Py_CLEAR(t);
    if (lw <= 0)
        return lw;
    int cl = attr_is(srv, S_closed, Py_False);
    if (cl <= 0)
        return cl;
    if ((ap = PyObject_GetAttr(srv, L_appender)) == NULL || (pending = PyObject_GetAttr(srv, S_pending)) == NULL)
        goto out;
    ok = 0;
    if (!PyList_CheckExact(pending) || ap == Py_None)
        goto out;
    Py_ssize_t n = PyList_GET_SIZE(pending);
    if (n == 0)
        goto out;
    /* Appender.append not replaced on the instance (a test's fault injection), the segment open and written */
    if ((t = PyObject_GetAttr(ap, S_append)) == NULL)
        goto err;
    int plain = PyMethod_Check(t) && PyMethod_GET_FUNCTION(t) == C_ap_append;
    Py_CLEAR(t);
    if (!plain)
        goto out;
    int r = attr_is(ap, L_head_due, Py_False);
    if (r <= 0)
        goto done_r;
    if ((t = PyObject_GetAttr(ap, L_fd)) == NULL)
        goto err;
    if (!PyLong_Check(t))
        goto out;
    int fd = (int)PyLong_AsLong(t);
    Py_CLEAR(t);
    long long size = get_ll(ap, L_size), limit = get_ll(ap, L_segment_size), seq = get_ll(ap, L_ap_seq);
    if (PyErr_Occurred())
        goto err;
    long long total = 0, last = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *rec = PyList_GET_ITEM(pending, i);
        if (!PyBytes_CheckExact(rec))
            goto out;
        last = PyBytes_GET_SIZE(rec);
        total += last;
    }
    if (size + total - last >= limit)        /* Appender.append would roll over before the last record */
        goto out;
    /* a segment number for an add's row (Server._segs): known, or the Python path finds it */
    if ((adds = PyObject_GetAttr(srv, S_adds)) == NULL)
        goto err;
    Py_ssize_t nadds = PyObject_Size(adds);
    if (nadds < 0)
        goto err;
    PyObject *segno = NULL;
    if (nadds) {
        PyObject *segs = PyObject_GetAttr(srv, L_segs), *k = PyLong_FromLongLong(seq);
        if (segs != NULL && k != NULL)
            segno = PyDict_GetItemWithError(segs, k);
        Py_XDECREF(segs), Py_XDECREF(k);
        if (segno == NULL) {
            if (PyErr_Occurred())
                goto err;
            goto out;
        }
    }
    /* Server._commit: the commit no longer scheduled, the records written with one write(2) */
    if (PyObject_SetAttr(srv, S_commit_scheduled, Py_False) < 0)
        goto err;
    const char *p;
    if (n == 1) {
        p = PyBytes_AS_STRING(PyList_GET_ITEM(pending, 0));
    } else {
        if ((joined = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total)) == NULL)
            goto err;
        char *w = PyBytes_AS_STRING(joined);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *rec = PyList_GET_ITEM(pending, i);
            memcpy(w, PyBytes_AS_STRING(rec), (size_t)PyBytes_GET_SIZE(rec));
            w += PyBytes_GET_SIZE(rec);
        }
        p = PyBytes_AS_STRING(joined);
    }
    long long left = total;
    while (left > 0) {
        ssize_t w = write(fd, p, (size_t)left);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            /* Appender._write_run -> repair_tail: the segment cut back to its last complete record (best
             * effort); Server._commit: the records stay pending, Server._append_failed opens the breaker */
            int e = errno;
            struct stat st;
            if (fstat(fd, &st) == 0 && st.st_size > size)
                (void)!ftruncate(fd, (off_t)size);
            errno = e;
            PyErr_SetFromErrno(PyExc_OSError);
            PyObject *et, *ev, *tb;
            PyErr_Fetch(&et, &ev, &tb);
            PyErr_NormalizeException(&et, &ev, &tb);
            Py_XDECREF(et), Py_XDECREF(tb);
            PyObject *rr = ev != NULL ? PyObject_CallMethodOneArg(srv, L_append_failed, ev) : NULL;
            Py_XDECREF(ev);
            if (rr == NULL)
                goto err;
            Py_DECREF(rr);
            ok = 2;             /* Server._commit returns here: no _release */
            goto out;
        }
        p += w, left -= w;
    }
    if (set_ll(ap, L_size, size + total) < 0)
        goto err;
    long long bw = get_ll(ap, L_bytes_written), rw = get_ll(ap, L_records_written);
    if (PyErr_Occurred() || set_ll(ap, L_bytes_written, bw + total) < 0 || set_ll(ap, L_records_written, rw + n) < 0)
        goto err;
    /* Server._append's finally: each add's row gets its segment and offset (LiveQueue.located) */
    if (nadds) {
        if ((q = PyObject_GetAttr(srv, S_queue)) == NULL)
            goto err;
        long long off = size;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *rec = PyList_GET_ITEM(pending, i);
            PyObject *id = PyLong_FromVoidPtr(rec);
            if (id == NULL)
                goto err;
            PyObject *e = PyObject_CallMethodObjArgs(adds, L_pop, id, Py_None, NULL);
            Py_DECREF(id);
            if (e == NULL)
                goto err;
            if (e != Py_None && located_c(q, e, segno, off) < 0) {
                Py_DECREF(e);
                goto err;
            }
            Py_DECREF(e);
            off += PyBytes_GET_SIZE(rec);
        }
    }
    if ((metrics = PyObject_GetAttr(srv, L_metrics)) == NULL)
        goto err;
    {
        PyObject *m = PyObject_GetItem(metrics, L_records), *m2 = NULL, *nn = PyLong_FromSsize_t(n);
        if (m != NULL && nn != NULL)
            m2 = PyNumber_Add(m, nn);
        int bad = m2 == NULL || PyObject_SetItem(metrics, L_records, m2) < 0;
        Py_XDECREF(m), Py_XDECREF(m2), Py_XDECREF(nn);
        if (bad)
            goto err;
    }
    if (PyList_SetSlice(pending, 0, n, NULL) < 0)
        goto err;
    {
        long long lsn = get_ll(srv, S_lsn);
        if (PyErr_Occurred() || set_ll(srv, S_durable_lsn, lsn) < 0)
            goto err;
    }
    lone_commits_n++;
    ok = 1;
    goto out;
done_r:
    ok = r;
    goto out;
err:
    ok = -1;
out:
    Py_XDECREF(ap), Py_XDECREF(pending), Py_XDECREF(t), Py_XDECREF(joined), Py_XDECREF(adds), Py_XDECREF(metrics);
    Py_XDECREF(q);
    return ok;
}

/* Server.after_change: nothing when the earliest timer is live and not earlier than the loop timer armed (the
 * usual case); else the Python method (it drops stale timers and re-arms). 0 or -1 */
static int lone_after_change(PyObject *srv)
{
    PyObject *q = PyObject_GetAttr(srv, S_queue), *heap = NULL, *at = NULL, *lim = NULL;
    int r = -1, python = 1;
    if (q == NULL || (heap = PyObject_GetAttr(q, S_heap)) == NULL)
        goto out;
    if (!PyList_CheckExact(heap))
        goto decided;
    PyObject *k;
    for (;;) {
        if (PyList_GET_SIZE(heap) == 0) {      /* next_deadline() is None */
            python = 0;
            goto decided;
        }
        PyObject *top = PyList_GET_ITEM(heap, 0);
        if (!PyTuple_CheckExact(top) || PyTuple_GET_SIZE(top) != 2 || !PyLong_CheckExact(PyTuple_GET_ITEM(top, 0)))
            goto decided;
        k = PyTuple_GET_ITEM(top, 0);
        PyObject *obj = PyTuple_GET_ITEM(top, 1);
        if (!Py_IS_TYPE(obj, C_Entry))
            goto decided;
        unsigned long long low = PyLong_AsUnsignedLongLongMask(k);
        if (low == (unsigned long long)-1 && PyErr_Occurred())
            goto out;
        int rank = (int)((low >> SEQ_BITS_C) & 7);
        PyObject *cur = rank == R_TTL_C ? SLOT(obj, O_TTL_SEQ) : rank == R_TTR_C ? SLOT(obj, O_TTR_SEQ) : NULL;
        if (cur == NULL)
            goto decided;
        int live = PyObject_RichCompareBool(cur, k, Py_EQ);
        if (live < 0)
            goto out;
        if (live)
            break;
        /* LiveQueue.next_deadline: a stale timer on top is dropped (and counted off _stale) */
        PyObject *a[1] = {heap}, *popped = PyObject_Vectorcall(C_heappop, a, 1, NULL);
        if (popped == NULL)
            goto out;
        Py_DECREF(popped);
        long long stale = get_ll(q, S_stale);
        if (stale < 0 && PyErr_Occurred())
            goto out;
        if (stale && set_ll(q, S_stale, stale - 1) < 0)
            goto out;
    }
    if ((at = PyObject_GetAttr(srv, L_timer_at)) == NULL || at == Py_None)
        goto decided;
    long long a = PyLong_AsLongLong(at);
    if (a == -1 && PyErr_Occurred())
        goto out;
    if (a < 0 || (lim = timer_key(a, 0, 0)) == NULL)
        goto decided;
    int later = PyObject_RichCompareBool(k, lim, Py_GE);
    if (later < 0)
        goto out;
    python = !later;
decided:
    PyErr_Clear();
    r = python ? call0(srv, L_after_change) : 0;
out:
    Py_XDECREF(q), Py_XDECREF(heap), Py_XDECREF(at), Py_XDECREF(lim);
    return r;
}

/* Conn.flush_out of a lone turn: every reply queued is durable and they are below OUT_HIGH: one write to the
 * transport here (else Conn.flush_out). 0 or -1 */
static int lone_flush(PyObject *srv, PyObject *conn, PyObject *now)
{
    PyObject *out = PyObject_GetAttr(conn, S_out), *t = NULL, *data = NULL, *dirty = NULL;
    int r = -1;
    if (out == NULL)
        return -1;
    Py_ssize_t n = PyObject_Size(out);
    if (n < 0)
        goto out;
    if (n == 0) {
        r = 0;
        goto out;
    }
    long long durable = get_ll(srv, S_durable_lsn), ob = get_ll(conn, S_out_bytes);
    if (PyErr_Occurred())
        goto out;
    int plain = ob < OUT_HIGH_C;
    PyObject *items[64];
    if (n > 64)
        plain = 0;
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; plain && i < n; i++) {
        PyObject *it = PySequence_GetItem(out, i);     /* (a deque: borrowed below, kept alive by out) */
        if (it == NULL)
            goto out;
        Py_DECREF(it);
        items[i] = it;
        if (!PyTuple_CheckExact(it) || PyTuple_GET_SIZE(it) != 2 || !PyBytes_CheckExact(PyTuple_GET_ITEM(it, 1))) {
            plain = 0;
            break;
        }
        long long l = PyLong_AsLongLong(PyTuple_GET_ITEM(it, 0));
        if (l == -1 && PyErr_Occurred())
            goto out;
        if (l > durable)
            plain = 0;
        total += PyBytes_GET_SIZE(PyTuple_GET_ITEM(it, 1));
    }
    if (!plain) {
        if (durable >= 0 && n > 0) {       /* Conn.process: flush_out when the first reply is durable */
            PyObject *first = PySequence_GetItem(out, 0);
            if (first == NULL)
                goto out;
            long long l = PyTuple_Check(first) ? PyLong_AsLongLong(PyTuple_GET_ITEM(first, 0)) : 0;
            Py_DECREF(first);
            if (l == -1 && PyErr_Occurred())
                goto out;
            if (l > durable) {
                r = 0;
                goto out;
            }
        }
        r = call0(conn, L_flush_out);
        goto out;
    }
    if (n == 1) {
        data = Py_NewRef(PyTuple_GET_ITEM(items[0], 1));
    } else {
        if ((data = PyBytes_FromStringAndSize(NULL, total)) == NULL)
            goto out;
        char *w = PyBytes_AS_STRING(data);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *c = PyTuple_GET_ITEM(items[i], 1);
            memcpy(w, PyBytes_AS_STRING(c), (size_t)PyBytes_GET_SIZE(c));
            w += PyBytes_GET_SIZE(c);
        }
    }
    if (call0(out, L_clear) < 0 || set_ll(conn, S_out_bytes, ob - total) < 0 ||
            PyObject_SetAttr(conn, L_last_active, now) < 0)
        goto out;
    /* Server._release: this connection is no longer dirty */
    if ((dirty = PyObject_GetAttr(srv, S_dirty)) == NULL || PySet_Discard(dirty, conn) < 0)
        goto out;
    if ((t = PyObject_GetAttr(conn, L_t)) == NULL)
        goto out;
    if (t != Py_None) {
        PyObject *c = PyObject_CallMethodNoArgs(t, L_is_closing);
        if (c == NULL)
            goto out;
        int closing = PyObject_IsTrue(c);
        Py_DECREF(c);
        if (closing < 0)
            goto out;
        if (!closing && (c = PyObject_CallMethodOneArg(t, L_write, data)) == NULL)
            goto out;
        if (!closing)
            Py_DECREF(c);
    }
    r = 0;
out:
    Py_XDECREF(out), Py_XDECREF(t), Py_XDECREF(data), Py_XDECREF(dirty);
    return r;
}

/* lone_turn(conn, data) -> 0 / 1 / 2 (above) */
static PyObject *p_lone_turn(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyBytes_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "lone_turn(conn, data: bytes)");
        return NULL;
    }
    if (C_Entry == NULL || C_ap_append == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "lone_turn: core_init() not called");
        return NULL;
    }
    PyObject *conn = args[0], *data = args[1], *srv = NULL, *buf = NULL, *now = NULL;
    long res = 0;
    int e = 0;
    if ((srv = PyObject_GetAttr(conn, S_srv)) == NULL)
        return NULL;
    /* lone: the only connection, no commit pending, nothing written but not yet sent (the commit is this turn's);
     * group: other connections, or a commit pending (Conn.process's turn is not inline: the commit is the loop
     * iteration's, Server._tick) */
    Py_ssize_t nc = attr_len(srv, L_conns), np = attr_len(srv, S_pending), nd = attr_len(srv, S_dirty);
    if (nc < 0 || np < 0 || nd < 0) {
        e = -1;
        goto out;
    }
    int sched0 = attr_is(srv, S_commit_scheduled, Py_True);
    if (sched0 < 0) {
        e = -1;
        goto out;
    }
    int lone = nc == 1 && np == 0 && nd == 0 && !sched0;
    if (!lone && nc <= 1 && !sched0)        /* (one connection with records pending and no commit: Python's) */
        goto out;
    if ((e = attr_is(srv, S_inline, Py_False)) <= 0 || (e = attr_is(srv, S_retry_handle, Py_None)) <= 0)
        goto out;
    if ((e = attr_is(srv, L_core, Py_None)) != 0) {       /* Server.core None: all of it the Python path's */
        e = e < 0 ? -1 : 0;
        goto out;
    }
    /* the connection idle between requests: nothing buffered, blocked, paused, closing or owed */
    static PyObject **const is_false[] = {&L_closing, &L_in_process, &L_resume_scheduled, &L_paused_read,
                                         &L_paused_write, &L_eof};
    for (size_t i = 0; i < sizeof is_false / sizeof *is_false; i++)
        if ((e = attr_is(conn, *is_false[i], Py_False)) <= 0)
            goto out;
    if ((e = attr_is(conn, L_blocked, Py_None)) <= 0 || (e = attr_is(conn, L_req, Py_None)) <= 0)
        goto out;
    if ((buf = PyObject_GetAttr(conn, L_buf)) == NULL) {
        e = -1;
        goto out;
    }
    if (!PyByteArray_CheckExact(buf) || PyByteArray_GET_SIZE(buf) != 0 || get_ll(conn, S_pos) != 0 ||
            get_ll(conn, S_out_bytes) != 0 || PyErr_Occurred()) {
        e = PyErr_Occurred() ? -1 : 0;
        goto out;
    }
    /* taken: Conn.data_received and Conn.process from here */
    Py_ssize_t dn = PyBytes_GET_SIZE(data);
    if (PyByteArray_Resize(buf, dn) < 0) {
        e = -1;
        goto out;
    }
    memcpy(PyByteArray_AS_STRING(buf), PyBytes_AS_STRING(data), (size_t)dn);
    if ((now = monotonic_now()) == NULL || PyObject_SetAttr(conn, L_last_active, now) < 0 ||
            (lone && PyObject_SetAttr(srv, S_inline, Py_True) < 0) ||
            PyObject_SetAttr(conn, L_in_process, Py_True) < 0) {
        e = -1;
        goto out;
    }
    res = 1;
    long k = core_run_c(conn, buf, 0, TURN_C);
    long long pos = k < 0 ? 0 : get_ll(conn, S_pos);
    if (k < 0 || PyErr_Occurred() || pos < PyByteArray_GET_SIZE(buf)) {
        /* the rest is Conn.process's, inside the same inline turn (an error: its finally's work, then raised) */
        e = k < 0 || PyErr_Occurred() ? -1 : 0;
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        if (PyObject_SetAttr(conn, L_in_process, Py_False) < 0)
            e = -1;
        if (e < 0 && lone) {
            PyObject_SetAttr(srv, S_inline, Py_False);
            int sched = attr_is(srv, S_commit_scheduled, Py_True);
            if (sched > 0)
                call0(srv, L_commit);
        }
        if (ev != NULL || et != NULL)
            PyErr_Restore(et, ev, tb);
        res = 2;
        goto out;
    }
    /* the end of Conn._process with everything handled, then the rest of Conn.process */
    if (PyByteArray_Resize(buf, 0) < 0 || set_ll(conn, S_pos, 0) < 0 || set_ll(conn, S_scan, 0) < 0 ||
            PyObject_SetAttr(conn, L_partial_since, Py_None) < 0 || PyObject_SetAttr(conn, L_in_process, Py_False) < 0 ||
            (lone && PyObject_SetAttr(srv, S_inline, Py_False) < 0)) {
        e = -1;
        goto out;
    }
    int sched = attr_is(srv, S_commit_scheduled, Py_True);
    if (sched < 0) {
        e = -1;
        goto out;
    }
    if (!lone) {
        /* Conn.process: the replies sent now only when the first is durable already (a reply that made no
         * record), else by the tick's release; the loop timer re-armed now only when no commit is coming */
        group_turns_n++;
        if (lone_flush(srv, conn, now) < 0 || (!sched && lone_after_change(srv) < 0))
            e = -1;
        goto out;
    }
    lone_turns_n++;
    if (sched) {
        int c = lone_commit(srv);
        if (c < 0 || (c == 0 && call0(srv, L_commit) < 0)) {
            e = -1;
            goto out;
        }
    }
    if (lone_flush(srv, conn, now) < 0) {
        e = -1;
        goto out;
    }
    if ((sched = attr_is(srv, S_commit_scheduled, Py_False)) < 0 || (sched && lone_after_change(srv) < 0)) {
        e = -1;
        goto out;
    }
out:
    Py_XDECREF(srv), Py_XDECREF(buf), Py_XDECREF(now);
    if (e < 0)
        return NULL;
    return PyLong_FromLong(res);
}

static PyObject *p_lone_counts(PyObject *self, PyObject *unused)
{
    return Py_BuildValue("(KKKK)", lone_turns_n, lone_commits_n, group_turns_n, ticks_n);
}

/* Server._release: every dirty connection's durable replies handed to its transport (lone_flush; a closing
 * connection, or one without a transport, through Conn.flush_out), and those still owed a reply that is not
 * durable kept dirty. 0 or -1 */
static int release_c(PyObject *srv)
{
    PyObject *dirty = PyObject_GetAttr(srv, S_dirty), *fresh = NULL, *it = NULL, *c = NULL, *now = NULL;
    int r = -1;
    if (dirty == NULL)
        return -1;
    if (!PySet_CheckExact(dirty)) {
        r = call0(srv, L_release);
        goto out;
    }
    if (PySet_GET_SIZE(dirty) == 0) {
        r = 0;
        goto out;
    }
    if ((fresh = PySet_New(NULL)) == NULL || PyObject_SetAttr(srv, S_dirty, fresh) < 0 ||
            (now = monotonic_now()) == NULL || (it = PyObject_GetIter(dirty)) == NULL)
        goto out;
    while ((c = PyIter_Next(it)) != NULL) {
        int open = attr_is(c, L_closing, Py_False), no_t = open > 0 ? attr_is(c, L_t, Py_None) : 0;
        if (open < 0 || no_t < 0)
            goto out;
        if ((!open || no_t ? call0(c, L_flush_out) : lone_flush(srv, c, now)) < 0)
            goto out;
        /* still owed a reply that is not durable: dirty again */
        PyObject *owed = PyObject_GetAttr(c, S_out);
        if (owed == NULL)
            goto out;
        Py_ssize_t n = PyObject_Size(owed);
        long long l = 0;
        if (n > 0) {
            PyObject *first = PySequence_GetItem(owed, 0);
            l = first != NULL && PyTuple_Check(first) ? PyLong_AsLongLong(PyTuple_GET_ITEM(first, 0)) : -1;
            Py_XDECREF(first);
        }
        Py_DECREF(owed);
        if (n < 0 || PyErr_Occurred())
            goto out;
        if (n > 0) {
            long long durable = get_ll(srv, S_durable_lsn);
            PyObject *d = PyErr_Occurred() ? NULL : PyObject_GetAttr(srv, S_dirty);
            int bad = d == NULL || (l > durable && PySet_Add(d, c) < 0);
            Py_XDECREF(d);
            if (bad)
                goto out;
        }
        Py_CLEAR(c);
    }
    r = PyErr_Occurred() ? -1 : 0;
out:
    Py_XDECREF(dirty), Py_XDECREF(fresh), Py_XDECREF(it), Py_XDECREF(c), Py_XDECREF(now);
    return r;
}

/* commit_tick(srv): Server._commit_tick (the group commit of a loop iteration, then the loop timer) with the plain
 * case in C: the records written by lone_commit, the replies released by release_c, the timer by
 * lone_after_change. Anything else, and a server whose turn in C is off (srv.lone None), is the Python
 * method's. */
static PyObject *p_commit_tick(PyObject *self, PyObject *srv)
{
    int off = attr_is(srv, L_lone, Py_None);
    if (off < 0)
        return NULL;
    if (off || C_ap_append == NULL) {
        if (call0(srv, L_commit_tick) < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    int c = lone_commit(srv);
    if (c < 0 || (c == 0 && call0(srv, L_commit) < 0) || (c == 1 && release_c(srv) < 0) ||
            lone_after_change(srv) < 0)
        return NULL;
    ticks_n++;
    Py_RETURN_NONE;
}
