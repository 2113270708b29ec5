/* wqtool.server.workq._proto: the request-line parser of wire.py in C (parse_line, parse_uuid, parse_uint,
 * parse_int), byte for byte the Python reference's results (tests/server/test_proto_c.py proves it with hypothesis;
 * WQTOOL_PURE_PYTHON=1 runs the reference). Upstream: int/prot/prot.go ParseCmd (tokens split on spaces, flags
 * "-key=value"), strconv.ParseUint / ParseInt / Atoi, satori/go.uuid v1.0.0 FromString (see wire.py).
 *
 * record(unix_ns, payload): one framed command-log record, fastpath.encode_record(GoTime.from_unix_ns(unix_ns),
 * payload) in C (TIME || SIZE || PAYLOAD || CRC-32C big-endian over the three; the time in UTC, Go's binary form).
 * add_record / short_record: the whole record of one command, its payload built here too (server.add_record_py and
 * short_record_py are the reference: the engine's encode_payload, in formats.workq's field order; test_proto_c.py
 * compares every byte, tests/server/test_hot_path.py whole request sequences). Sizes and opcodes come from the
 * generated header.
 *
 * init(Request, commands, errors) hands over what the Python module owns: the Request class, the command table
 * {name: (exact or None, minimum, size index or None)} and the five error replies (E_FLAGS, E_UNKNOWN, E_ARGS,
 * E_PAYLOAD_SIZE, E_RESULT_SIZE). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>
/* the workq kernel's constants (generated from wqtool/formats/ by scripts/gen_kernel_header.py) and CRC-32C */
#include "../../engine/workq/kernel/consts.h"
#include "../../engine/workq/kernel/crc.c"

static PyObject *RequestType, *Commands, *E_FLAGS, *E_UNKNOWN, *E_ARGS, *E_PAYLOAD_SIZE, *E_RESULT_SIZE;

#define MAX_BODY 1048576

static PyObject *p_init(PyObject *self, PyObject *args)
{
    PyObject *req, *cmds, *errs;
    if (!PyArg_ParseTuple(args, "OO!O!:init", &req, &PyDict_Type, &cmds, &PyTuple_Type, &errs))
        return NULL;
    if (PyTuple_GET_SIZE(errs) != 5) {
        PyErr_SetString(PyExc_ValueError, "init: five error replies expected");
        return NULL;
    }
    Py_XSETREF(RequestType, Py_NewRef(req));
    Py_XSETREF(Commands, Py_NewRef(cmds));
    Py_XSETREF(E_FLAGS, Py_NewRef(PyTuple_GET_ITEM(errs, 0)));
    Py_XSETREF(E_UNKNOWN, Py_NewRef(PyTuple_GET_ITEM(errs, 1)));
    Py_XSETREF(E_ARGS, Py_NewRef(PyTuple_GET_ITEM(errs, 2)));
    Py_XSETREF(E_PAYLOAD_SIZE, Py_NewRef(PyTuple_GET_ITEM(errs, 3)));
    Py_XSETREF(E_RESULT_SIZE, Py_NewRef(PyTuple_GET_ITEM(errs, 4)));
    Py_RETURN_NONE;
}

/* The magnitude of an ASCII-digit string (wire._digits): 0 = not digits (empty, or any other byte); 1 = the value
 * in *v; 2 = too big for 64 bits (wire._digits' 1 << 70: out of every range used). */
static int digits(const unsigned char *s, Py_ssize_t n, uint64_t *v)
{
    if (n <= 0)
        return 0;
    uint64_t x = 0;
    int big = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned d = (unsigned)s[i] - '0';
        if (d > 9)
            return 0;
        if (!big) {
            if (x > (UINT64_MAX - d) / 10)
                big = 1;
            else
                x = x * 10 + d;
        }
    }
    *v = x;
    return big ? 2 : 1;
}

/* strconv.ParseInt(s, 10, bits): 1 with *out, or 0 (wire.parse_int's None). */
static int parse_int_c(const unsigned char *s, Py_ssize_t n, int bits, int64_t *out)
{
    int neg = 0;
    if (n > 0 && (s[0] == '+' || s[0] == '-')) {
        neg = s[0] == '-';
        s++;
        n--;
    }
    uint64_t m;
    int r = digits(s, n, &m);
    if (r != 1)
        return 0;
    uint64_t lim = (uint64_t)1 << (bits - 1);
    if (neg) {
        if (m > lim)
            return 0;
        *out = m == lim ? INT64_MIN >> (64 - bits) : -(int64_t)m;
    } else {
        if (m >= lim)
            return 0;
        *out = (int64_t)m;
    }
    return 1;
}

static PyObject *p_parse_int(PyObject *self, PyObject *args)
{
    Py_buffer b;
    int bits;
    if (!PyArg_ParseTuple(args, "y*i:parse_int", &b, &bits))
        return NULL;
    int64_t v;
    int ok = bits >= 1 && bits <= 64 && parse_int_c(b.buf, b.len, bits, &v);
    PyBuffer_Release(&b);
    if (!ok)
        Py_RETURN_NONE;
    return PyLong_FromLongLong(v);
}

static PyObject *p_parse_uint(PyObject *self, PyObject *args)
{
    Py_buffer b;
    int bits;
    if (!PyArg_ParseTuple(args, "y*i:parse_uint", &b, &bits))
        return NULL;
    uint64_t v;
    int r = digits(b.buf, b.len, &v);
    PyBuffer_Release(&b);
    if (r != 1 || bits < 1 || bits > 64 || (bits < 64 && v >> bits))
        Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong(v);
}

static int hexval(unsigned c)
{
    if (c - '0' <= 9)
        return (int)(c - '0');
    c |= 0x20;
    if (c - 'a' <= 5)
        return (int)(c - 'a' + 10);
    return -1;
}

/* satori/go.uuid v1.0.0 FromString as wire.parse_uuid: 1 with out[16], or 0. */
static int parse_uuid_c(const unsigned char *t, Py_ssize_t n, unsigned char *out)
{
    static const int groups[5] = {8, 4, 4, 4, 12};
    if (n < 32)
        return 0;
    if (n >= 9 && memcmp(t, "urn:uuid:", 9) == 0) {
        t += 9;
        n -= 9;
    } else if (t[0] == '{') {
        t++;
        n--;
    }
    Py_ssize_t pos = 0;
    int k = 0;
    for (int g = 0; g < 5; g++) {
        if (pos >= n)
            return 0;
        if (t[pos] == '-')
            pos++;
        if (n - pos < groups[g])
            return 0;
        for (int i = 0; i < groups[g]; i += 2) {
            int hi = hexval(t[pos + i]), lo = hexval(t[pos + i + 1]);
            if (hi < 0 || lo < 0)
                return 0;
            out[k++] = (unsigned char)(hi << 4 | lo);
        }
        pos += groups[g];
    }
    return 1;
}

static PyObject *p_parse_uuid(PyObject *self, PyObject *arg)
{
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0)
        return NULL;
    unsigned char out[16];
    int ok = parse_uuid_c(b.buf, b.len, out);
    PyBuffer_Release(&b);
    if (!ok)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)out, 16);
}

static inline void idle_bump(void);

/* wire.parse_line: a Request, or the error reply (a new reference either way). */
static PyObject *p_parse_line(PyObject *self, PyObject *arg)
{
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "parse_line: bytes expected");
        return NULL;
    }
    if (RequestType == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "parse_line: init() not called");
        return NULL;
    }
    idle_bump();                        /* traffic: the idle spinner keeps a CPU awake (below) */
    const unsigned char *s = (const unsigned char *)PyBytes_AS_STRING(arg);
    Py_ssize_t n = PyBytes_GET_SIZE(arg);
    PyObject *name = NULL, *args = NULL, *flags = NULL, *res = NULL;
    /* the command name: the first space-separated token, empty when the line starts with a space */
    Py_ssize_t e = 0;
    while (e < n && s[e] != ' ')
        e++;
    name = PyBytes_FromStringAndSize((const char *)s, e);
    args = PyList_New(0);
    flags = PyDict_New();
    if (name == NULL || args == NULL || flags == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n;) {
        if (s[i] == ' ') {
            i++;
            continue;
        }
        Py_ssize_t j = i;
        const unsigned char *eq = NULL;
        while (j < n && s[j] != ' ') {
            if (s[j] == '=' && eq == NULL)
                eq = s + j;
            j++;
        }
        if (s[i] == '-' && eq != NULL) {                 /* -key=value[=ignored...] */
            const unsigned char *k = s + i + 1, *v = eq + 1, *end = s + j;
            const unsigned char *ve = memchr(v, '=', (size_t)(end - v));
            if (ve == NULL)
                ve = end;
            if (eq == k || ve == v) {
                res = Py_NewRef(E_FLAGS);
                goto done;
            }
            PyObject *key = PyBytes_FromStringAndSize((const char *)k, eq - k);
            if (key == NULL)
                goto fail;
            int has = PyDict_Contains(flags, key);
            if (has != 0) {
                Py_DECREF(key);
                if (has < 0)
                    goto fail;
                res = Py_NewRef(E_FLAGS);
                goto done;
            }
            PyObject *val = PyBytes_FromStringAndSize((const char *)v, ve - v);
            if (val == NULL || PyDict_SetItem(flags, key, val) < 0) {
                Py_DECREF(key);
                Py_XDECREF(val);
                goto fail;
            }
            Py_DECREF(key);
            Py_DECREF(val);
        } else {
            PyObject *tok;
            if (i == 0 && PyList_GET_SIZE(args) == 0) {
                tok = Py_NewRef(name);
            } else {
                tok = PyBytes_FromStringAndSize((const char *)s + i, j - i);
                if (tok == NULL)
                    goto fail;
            }
            int r = PyList_Append(args, tok);
            Py_DECREF(tok);
            if (r < 0)
                goto fail;
        }
        i = j;
    }
    PyObject *spec = PyDict_GetItemWithError(Commands, name);
    if (spec == NULL) {
        if (PyErr_Occurred())
            goto fail;
        res = Py_NewRef(E_UNKNOWN);
        goto done;
    }
    PyObject *exact = PyTuple_GET_ITEM(spec, 0), *size_at = PyTuple_GET_ITEM(spec, 2);
    Py_ssize_t minimum = PyLong_AsSsize_t(PyTuple_GET_ITEM(spec, 1)), na = PyList_GET_SIZE(args);
    if ((exact != Py_None && na != PyLong_AsSsize_t(exact)) || na < minimum) {
        res = Py_NewRef(E_ARGS);
        goto done;
    }
    PyObject *size;
    if (size_at == Py_None) {
        size = Py_NewRef(Py_None);
    } else {
        PyObject *tok = PyList_GET_ITEM(args, PyLong_AsSsize_t(size_at));
        int64_t v;
        if (!parse_int_c((const unsigned char *)PyBytes_AS_STRING(tok), PyBytes_GET_SIZE(tok), 64, &v) || v < 0 ||
                v > MAX_BODY) {
            int fail_cmd = PyBytes_GET_SIZE(name) == 4 && memcmp(PyBytes_AS_STRING(name), "fail", 4) == 0;
            res = Py_NewRef(fail_cmd ? E_RESULT_SIZE : E_PAYLOAD_SIZE);
            goto done;
        }
        size = PyLong_FromLongLong(v);
        if (size == NULL)
            goto fail;
    }
    PyObject *rest = PyList_GetSlice(args, 1, na);
    if (rest == NULL) {
        Py_DECREF(size);
        goto fail;
    }
    res = PyObject_CallFunctionObjArgs(RequestType, name, rest, flags, size, NULL);
    Py_DECREF(rest);
    Py_DECREF(size);
done:
    Py_XDECREF(name);
    Py_XDECREF(args);
    Py_XDECREF(flags);
    return res;
fail:
    res = NULL;
    goto done;
}

/* formats._common.ZONE_UTC (-1: no zone offset, written FF FF); test_proto_c.py compares every byte with the
 * reference encoder */
#define ZONE_UTC_U16 0xFFFFu
/* (crc.c's Python entry points belong to the kernel module) */
static void *const crc_entries[] __attribute__((unused)) = {(void *)k_crc32c, (void *)k_crc32c_sw};

/* Go's time.Time MarshalBinary v1: GO_TIME_VERSION, seconds since year 1 (i64 BE), nanoseconds (i32 BE), zone */
static void put_go_time(unsigned char *o, uint64_t s, uint32_t n)
{
    o[0] = GO_TIME_VERSION;
    for (int i = 0; i < 8; i++)
        o[1 + i] = (unsigned char)(s >> (56 - 8 * i));
    for (int i = 0; i < 4; i++)
        o[9 + i] = (unsigned char)(n >> (24 - 8 * i));
    o[GO_TIME_SIZE - 2] = (unsigned char)(ZONE_UTC_U16 >> 8);
    o[GO_TIME_SIZE - 1] = (unsigned char)ZONE_UTC_U16;
}

/* Go's MarshalBinary v1 of the instant unix_ns, in UTC (GO_TIME_SIZE bytes at o) */
static void put_time(unsigned char *o, long long ns)
{
    long long sec = ns / NS, nsec = ns % NS;
    if (nsec < 0) {
        nsec += NS;
        sec -= 1;
    }
    put_go_time(o, (uint64_t)(sec + UNIX_TO_INTERNAL), (uint32_t)nsec);
}

static Py_ssize_t uvarint_len(uint64_t v)
{
    Py_ssize_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static unsigned char *put_uvarint(unsigned char *o, uint64_t v)
{
    while (v >= 0x80) {
        *o++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *o++ = (unsigned char)v;
    return o;
}

/* A record of a plen-byte payload: TIME || SIZE || PAYLOAD || CRC-32C big-endian over the three, in one new bytes
 * object; the caller writes the payload at *payload, then seal() the CRC */
static PyObject *framed(long long ns, Py_ssize_t plen, unsigned char **payload)
{
    Py_ssize_t h = GO_TIME_SIZE + uvarint_len((uint64_t)plen);
    PyObject *out = PyBytes_FromStringAndSize(NULL, h + plen + 4);
    if (out == NULL)
        return NULL;
    unsigned char *o = (unsigned char *)PyBytes_AS_STRING(out);
    put_time(o, ns);
    put_uvarint(o + GO_TIME_SIZE, (uint64_t)plen);
    *payload = o + h;
    return out;
}

static void seal(PyObject *out)
{
    unsigned char *o = (unsigned char *)PyBytes_AS_STRING(out);
    Py_ssize_t n = PyBytes_GET_SIZE(out) - 4;
    uint32_t c = crc32c(o, (size_t)n);
    o[n] = (unsigned char)(c >> 24);
    o[n + 1] = (unsigned char)(c >> 16);
    o[n + 2] = (unsigned char)(c >> 8);
    o[n + 3] = (unsigned char)c;
}

static PyObject *p_record(PyObject *self, PyObject *args)
{
    long long ns;
    Py_buffer p;
    if (!PyArg_ParseTuple(args, "Ly*:record", &ns, &p))
        return NULL;
    unsigned char *o;
    PyObject *out = framed(ns, p.len, &o);
    if (out != NULL) {
        memcpy(o, p.buf, (size_t)p.len);
        seal(out);
    }
    PyBuffer_Release(&p);
    return out;
}

/* framed() with the payload's first fields written: CMD || JOB_ID; *o is past them */
static PyObject *framed_cmd(long long ns, Py_ssize_t plen, int cmd, const void *jid, unsigned char **o)
{
    PyObject *out = framed(ns, plen, o);
    if (out != NULL) {
        *(*o)++ = (unsigned char)cmd;
        memcpy(*o, jid, JOB_ID_SIZE);
        *o += JOB_ID_SIZE;
    }
    return out;
}

/* The add / schedule record (add_record below, and the request core's add): zero for the Go zero time, else t */
static PyObject *build_add_record(long long ns, int cmd, const void *jid, const void *name, Py_ssize_t nlen,
                                  unsigned long long ttr, unsigned long long ttl, long long prio,
                                  unsigned long long ma, unsigned long long mf, const void *body, Py_ssize_t blen,
                                  int zero, long long t, long long created)
{
    uint64_t zz = ((uint64_t)prio << 1) ^ (uint64_t)(prio >> 63);
    Py_ssize_t plen = 1 + JOB_ID_SIZE + uvarint_len((uint64_t)nlen) + nlen + uvarint_len(ttr)
        + uvarint_len(ttl) + uvarint_len(zz) + uvarint_len(ma) + uvarint_len(mf)
        + uvarint_len((uint64_t)blen) + blen + 2 * GO_TIME_SIZE;
    unsigned char *o;
    PyObject *out = framed_cmd(ns, plen, cmd, jid, &o);
    if (out == NULL)
        return NULL;
    o = put_uvarint(o, (uint64_t)nlen);
    memcpy(o, name, (size_t)nlen);
    o += nlen;
    o = put_uvarint(o, ttr);
    o = put_uvarint(o, ttl);
    o = put_uvarint(o, zz);
    o = put_uvarint(o, ma);
    o = put_uvarint(o, mf);
    o = put_uvarint(o, (uint64_t)blen);
    memcpy(o, body, (size_t)blen);
    o += blen;
    if (zero)
        put_go_time(o, 0, 0);           /* GO_ZERO_TIME: second 0 of year 1 */
    else
        put_time(o, t);
    put_time(o + GO_TIME_SIZE, created);
    seal(out);
    return out;
}

/* The record of complete / fail (with their result, rlen >= 0) or of another short command (rlen < 0) */
static PyObject *build_short_record(long long ns, int cmd, const void *jid, const void *res, Py_ssize_t rlen)
{
    Py_ssize_t plen = 1 + JOB_ID_SIZE + (rlen < 0 ? 0 : uvarint_len((uint64_t)rlen) + rlen);
    unsigned char *o;
    PyObject *out = framed_cmd(ns, plen, cmd, jid, &o);
    if (out == NULL)
        return NULL;
    if (rlen >= 0) {
        o = put_uvarint(o, (uint64_t)rlen);
        memcpy(o, res, (size_t)rlen);
    }
    seal(out);
    return out;
}

/* add_record(unix_ns, cmd, job_id, name, ttr, ttl, priority, max_attempts, max_fails, body, time_ns, created_ns):
 * the framed record of an add (cmd CMD_ADD) or schedule (CMD_SCHEDULE) command, time_ns None for the Go zero time:
 * encode_record(GoTime.from_unix_ns(unix_ns), encode_payload(Command(...))) in C (the field order of
 * formats.workq's payload schema; test_proto_c.py compares every byte). OverflowError for an instant or a field
 * out of 64 bits (the caller then takes the reference encoder). */
static PyObject *p_add_record(PyObject *self, PyObject *args)
{
    long long ns, prio, created;
    int cmd;
    unsigned long long ttr, ttl, ma, mf;
    Py_buffer jid, name, body;
    PyObject *when;
    if (!PyArg_ParseTuple(args, "Liy*y*KKLKKy*OL:add_record", &ns, &cmd, &jid, &name, &ttr, &ttl, &prio, &ma, &mf,
                          &body, &when, &created))
        return NULL;
    PyObject *out = NULL;
    long long t = 0;
    int zero = when == Py_None;
    if (cmd != CMD_ADD && cmd != CMD_SCHEDULE) {
        PyErr_SetString(PyExc_ValueError, "add_record: an add or schedule command expected");
        goto done;
    }
    if (jid.len != JOB_ID_SIZE) {
        PyErr_SetString(PyExc_ValueError, "add_record: job_id must be JOB_ID_SIZE bytes");
        goto done;
    }
    if (!zero) {
        t = PyLong_AsLongLong(when);
        if (t == -1 && PyErr_Occurred())
            goto done;
    }
    out = build_add_record(ns, cmd, jid.buf, name.buf, name.len, ttr, ttl, prio, ma, mf, body.buf, body.len, zero, t,
                           created);
done:
    PyBuffer_Release(&jid);
    PyBuffer_Release(&name);
    PyBuffer_Release(&body);
    return out;
}

/* short_record(unix_ns, cmd, job_id, result): the framed record of complete / fail (with their result) or of
 * delete, expire, start-attempt, timeout-attempt (result None): CMD || JOB_ID [|| uvarint(len) || result] */
static PyObject *p_short_record(PyObject *self, PyObject *args)
{
    long long ns;
    int cmd;
    Py_buffer jid;
    PyObject *res;
    if (!PyArg_ParseTuple(args, "Liy*O:short_record", &ns, &cmd, &jid, &res))
        return NULL;
    PyObject *out = NULL;
    if (cmd < CMD_COMPLETE || cmd > CMD_MAX || jid.len != JOB_ID_SIZE
            || ((cmd == CMD_COMPLETE || cmd == CMD_FAIL) != (res != Py_None)) || (res != Py_None && !PyBytes_Check(res))) {
        PyErr_SetString(PyExc_ValueError, "short_record: a command past schedule, a JOB_ID_SIZE id, and a result "
                                          "(bytes) for complete and fail only");
        goto done;
    }
    out = build_short_record(ns, cmd, jid.buf, res == Py_None ? NULL : PyBytes_AS_STRING(res),
                             res == Py_None ? -1 : PyBytes_GET_SIZE(res));
done:
    PyBuffer_Release(&jid);
    return out;
}

/* spin_start / spin_stop: a C thread of this module spins while the caller waits in fsync (spin.py's
 * Spinner without the GIL: the Python spinner had to take the GIL to see that the fsync had returned, and every
 * request paid the lock's hand-overs between the two threads — 8 futex calls per fsync under strace). The thread
 * (named wqtool-fsync-sp) loops on sched_yield() from spin_start until spin_stop, never longer than limit_ns;
 * it is made at the first call and parks on a condition variable in between. Measured (1 connection, add -> lease
 * -> complete under -cmdlog-sync always, four alternating rounds at load average 4.9-5.3, median latency per
 * request): sched_yield 221-275 us, nanosleep(0) 316-584 us, a pause-instruction busy loop 648-3925 us, no spinner
 * 272-575 us; workq-server 235-282 us.
 */
#include <pthread.h>
#include <time.h>
#include <sched.h>

static pthread_mutex_t spin_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t spin_cv = PTHREAD_COND_INITIALIZER;
static unsigned long spin_gen;          /* under spin_mu: the fsync asked for */
static int64_t spin_end;                /* under spin_mu: when that one's spinning stops at the latest */
static unsigned long spin_active;       /* atomic: the fsync in flight (0: none) */
static int spin_thread_ok;              /* under the GIL: the thread runs */

static int64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void *spin_main(void *arg)
{
    (void)arg;
    unsigned long seen = 0;
    for (;;) {
        pthread_mutex_lock(&spin_mu);
        while (spin_gen == seen)
            pthread_cond_wait(&spin_cv, &spin_mu);
        seen = spin_gen;
        int64_t end = spin_end;
        pthread_mutex_unlock(&spin_mu);
        while (__atomic_load_n(&spin_active, __ATOMIC_ACQUIRE) == seen && mono_ns() < end)
            sched_yield();
    }
    return NULL;
}

/* a child forked while the thread ran has no thread (and perhaps the mutex held by it): it starts its own */
static void spin_atfork_child(void)
{
    pthread_mutex_init(&spin_mu, NULL);
    pthread_cond_init(&spin_cv, NULL);
    spin_gen = 0;
    spin_active = 0;
    spin_thread_ok = 0;
}

/* spin_start(limit_ns): the thread spins from now until spin_stop(), limit_ns at most; False when it could not be
 * started. spin.py's Spinner calls them around the fsync (made by the caller, which releases the GIL in it). */
static PyObject *p_spin_start(PyObject *self, PyObject *arg)
{
    long long limit = PyLong_AsLongLong(arg);
    if (limit == -1 && PyErr_Occurred())
        return NULL;
    if (!spin_thread_ok) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&a, 65536);
        spin_thread_ok = pthread_create(&t, &a, spin_main, NULL) == 0;
        if (spin_thread_ok)             /* (named here: it is named when this returns, not when it first runs) */
            pthread_setname_np(t, "wqtool-fsync-sp");
        pthread_attr_destroy(&a);
        if (!spin_thread_ok)
            Py_RETURN_FALSE;
    }
    pthread_mutex_lock(&spin_mu);
    unsigned long g = ++spin_gen;
    spin_end = mono_ns() + limit;
    __atomic_store_n(&spin_active, g, __ATOMIC_RELEASE);
    pthread_cond_signal(&spin_cv);
    pthread_mutex_unlock(&spin_mu);
    Py_RETURN_TRUE;
}

static PyObject *p_spin_stop(PyObject *self, PyObject *unused)
{
    __atomic_store_n(&spin_active, 0, __ATOMIC_RELEASE);
    Py_RETURN_NONE;
}

/* The idle spinner: the server's answer to a halted vCPU. Between two requests of a client the loop thread parks
 * in epoll_wait; on an otherwise idle VM its vCPU then halts (cpuidle haltpoll) and the next request pays the
 * wake-up of a halted vCPU (an exit to the hypervisor and back): measured 6,900 ops/s against workq-server's
 * 19,540 with one connection under -cmdlog-sync interval, on an idle machine. workq-server does not pay it
 * because Go's runtime spins (an M looks at the run queues and the net poller before it parks: runtime/proc.go
 * findRunnable / stopm), which keeps its vCPU out of halt. The spinner does the same for the server: with policy
 * SCHED_IDLE (it runs only on a CPU that nothing else wants, and any other task's wake-up preempts it) it
 * busy-waits (a plain loop: no pause instruction, which a hypervisor may trap as a spinning lock-waiter's) while
 * traffic is recent, and parks on a futex once `window' ns pass
 * with no request. The loop thread tells it of traffic in parse_line (one atomic add per request line: no system
 * call and no clock read on the hot path) and wakes it (one FUTEX_WAKE) only on the first request after it
 * parked. It backs off while the 1-minute load average says the machine is busy (idle_loop), and is a process of its own by default (idle_clone: its
 * CPU time is then not charged to the server's autogroup). Started by idle_spin_start(window_ns, process)
 * (spin.py's idle_start: WQTOOL_SERVE_SPIN_US, WQTOOL_SERVE_SPIN_AS); window 0: never. docs/serve.md has the
 * measurements. */
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>
#include <fcntl.h>

/* The spinner makes its system calls itself (no libc): as a process it shares this process's memory (CLONE_VM:
 * no page-table copy, no copy-on-write of the server's pages, as a fork would cost) and so its thread-local
 * storage too, where libc keeps errno. */
#if defined(__x86_64__)
#define IDLE_RAW 1
static inline long rsys(long n, long a, long b, long c, long d, long e, long f)
{
    long ret;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                         : "rcx", "r11", "memory");
    return ret;
}
#elif defined(__aarch64__)
#define IDLE_RAW 1
static inline long rsys(long n, long a, long b, long c, long d, long e, long f)
{
    register long x8 __asm__("x8") = n;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    register long x3 __asm__("x3") = d;
    register long x4 __asm__("x4") = e;
    register long x5 __asm__("x5") = f;
    __asm__ __volatile__("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory");
    return x0;
}
#else
#define IDLE_RAW 0                      /* (no process: the spinner is a thread, through libc's syscall()) */
static inline long rsys(long n, long a, long b, long c, long d, long e, long f)
{
    return syscall(n, a, b, c, d, e, f);
}
#endif
#define RS1(n, a) rsys(n, (long)(a), 0, 0, 0, 0, 0)
#define RS2(n, a, b) rsys(n, (long)(a), (long)(b), 0, 0, 0, 0)
#define RS3(n, a, b, c) rsys(n, (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define RS4(n, a, b, c, d) rsys(n, (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)

/* what the loop thread and the spinner share (one memory, thread or CLONE_VM process: FUTEX_PRIVATE works) */
static uint32_t idle_act;               /* atomic: bumped per request line (the futex word) */
static uint32_t idle_parked;            /* atomic: the spinner sleeps (or is about to) on idle_act */
static int64_t idle_window;             /* ns of no traffic before the spinner parks */
static int idle_ncpu;                   /* CPUs online */
static pid_t idle_parent;               /* the server's pid (a process checks it still has it for parent) */
static int idle_started;                /* under the GIL: 1 a thread, 2 a process */

static inline void idle_bump(void)
{
    /* (seq_cst: the store of idle_act is ordered before the load of idle_parked; the spinner publishes idle_parked
     * before its last look at idle_act: one of the two sees the other) */
    __atomic_add_fetch(&idle_act, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&idle_parked, __ATOMIC_SEQ_CST) && __atomic_exchange_n(&idle_parked, 0, __ATOMIC_SEQ_CST))
        syscall(SYS_futex, &idle_act, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static inline void cpu_relax(void)
{
    __asm__ __volatile__("" ::: "memory");
}

/* (libc's clock_gettime: the vDSO's, no system call; CLOCK_MONOTONIC cannot fail, so errno is never written) */
static int64_t idle_now(void)
{
    return mono_ns();
}

/* /proc/loadavg's 1-minute load average, its whole part in *load1; -1 when it cannot be read */
static int load_average(int fd, int *load1)
{
    char b[128];
    long n = rsys(SYS_pread64, fd, (long)b, sizeof b - 1, 0, 0, 0);
    if (n <= 0)
        return -1;
    b[n] = 0;
    int i = 0;
    *load1 = 0;
    while (i < n && b[i] >= '0' && b[i] <= '9' && *load1 < 1000000)
        *load1 = *load1 * 10 + (b[i++] - '0');
    return i > 0 && i < n && b[i] == '.' ? 0 : -1;
}

#define IDLE_PROBE_NS 500000            /* a look at the load average every 0.5 ms of spinning */
#define IDLE_BACKOFF_NS 100000000       /* a busy machine: no spinning for 100 ms */

/* The spinner (a thread's or a process's; returns only when SCHED_IDLE is refused): SCHED_IDLE, then its name (the
 * name says the policy is set); no libc call but the vDSO's clock, no lock, no allocation. */
static void idle_loop(void)
{
    struct sched_param sp = {0};
    if (RS3(SYS_sched_setscheduler, 0, SCHED_IDLE, &sp) != 0)  /* (0: the calling thread) */
        return;                         /* never spin at a priority that takes CPU from anybody */
    RS2(SYS_prctl, PR_SET_NAME, "wqtool-idle-sp");
    int lfd = (int)RS4(SYS_openat, AT_FDCWD, "/proc/loadavg", O_RDONLY | O_CLOEXEC, 0);
    int64_t window = idle_window;
    uint32_t seen = __atomic_load_n(&idle_act, __ATOMIC_ACQUIRE);
    for (;;) {
        int64_t last = idle_now(), probe = last;   /* (a first look at once) */
        int backoff = 0;
        for (unsigned i = 1;; i++) {
            cpu_relax();
            uint32_t a = __atomic_load_n(&idle_act, __ATOMIC_RELAXED);
            if (a != seen) {
                seen = a;
                i = 0;
                last = idle_now();
                continue;
            }
            if (i & 63)
                continue;
            int64_t now = idle_now();
            if (now - last >= window)
                break;
            /* a busy machine has no vCPU to halt: spinning then only takes CPU time that somebody wants */
            if (lfd >= 0 && now >= probe) {
                probe = now + IDLE_PROBE_NS;
                /* (the 1-minute load average, not the run queue's instant count: a client and a server taking
                 * turns on 2 CPUs, with the Go client's spinning threads, fill the run queue half the time and the
                 * spinner backed off at 0.69x against 0.95x without, one connection at load 1.3) */
                int load1 = 0;
                if (load_average(lfd, &load1) == 0 && load1 >= 2 * idle_ncpu) {
                    backoff = 1;                /* a machine busy for a minute */
                    break;
                }
            }
        }
        if (backoff) {                  /* (idle_parked stays 0: the loop thread makes no system call for it) */
            struct timespec ts = {0, IDLE_BACKOFF_NS};
            RS4(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, NULL);
            uint32_t a = __atomic_load_n(&idle_act, __ATOMIC_ACQUIRE);
            if (a != seen) {            /* requests came meanwhile: look again */
                seen = a;
                continue;
            }                           /* none: park (an idle server's spinner sleeps, busy machine or not) */
        }
        __atomic_store_n(&idle_parked, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&idle_act, __ATOMIC_SEQ_CST) == seen)
            rsys(SYS_futex, (long)&idle_act, FUTEX_WAIT_PRIVATE, seen, 0, 0, 0);
        __atomic_store_n(&idle_parked, 0, __ATOMIC_SEQ_CST);
        seen = __atomic_load_n(&idle_act, __ATOMIC_ACQUIRE);
    }
}

static void *idle_main(void *arg)
{
    (void)arg;
    idle_loop();
    return NULL;
}

#if IDLE_RAW
/* The spinner as a process of its own (idle_spin_start(window, True)): clone(CLONE_VM) without CLONE_THREAD, in a
 * session of its own, so that with autogroups (sched_autogroup_enabled) its CPU time is charged to its own group
 * (at nice 19: weight 15 against a nice-0 group's 1024, ~1.5 % of a CPU at most on a busy machine) and not to the
 * server's, whose share of a busy machine it would otherwise spend (measured: as a thread it took 10-20 % of the
 * server's CPU at load 4-6); it closes the descriptors it was given a copy of (the listening socket, the log's
 * locks; its stdin/out/err become /dev/null) and dies with the server (PR_SET_PDEATHSIG). */
static int idle_child(void *arg)
{
    (void)arg;
    RS2(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL);
    if (RS1(SYS_getppid, 0) != idle_parent)
        return 0;
    RS1(SYS_setsid, 0);
    long ag = RS4(SYS_openat, AT_FDCWD, "/proc/self/autogroup", O_WRONLY | O_CLOEXEC, 0);
    if (ag >= 0) {
        RS3(SYS_write, ag, "19", 2);    /* (no autogroups: SCHED_IDLE alone) */
        RS1(SYS_close, ag);
    }
    long kact[4] = {0, 0, 0, 0};        /* SIG_DFL (both kernel sigaction layouts: handler first, zeros after) */
    static const int sigs[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM};
    for (unsigned k = 0; k < sizeof sigs / sizeof sigs[0]; k++)
        RS4(SYS_rt_sigaction, sigs[k], kact, NULL, 8);
    long nul = RS4(SYS_openat, AT_FDCWD, "/dev/null", O_RDWR, 0);
    for (int fd = 0; fd < 3 && nul >= 0; fd++)
        RS3(SYS_dup3, nul, fd, 0);
    if (RS3(SYS_close_range, 3, ~0U, 0) != 0)
        for (int fd = 3; fd < 65536; fd++)
            RS1(SYS_close, fd);
    idle_loop();
    return 0;
}

#define IDLE_STACK (64 * 1024)

static pid_t idle_clone(void)
{
    char *stack = mmap(NULL, IDLE_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED)
        return -1;
    idle_parent = getpid();
    pid_t pid = clone(idle_child, stack + IDLE_STACK, CLONE_VM | SIGCHLD, NULL);
    if (pid < 0)
        munmap(stack, IDLE_STACK);      /* (once running, its stack is never freed: it ends with the server) */
    return pid;
}
#endif

/* idle_spin_start(window_ns, process): start the idle spinner (once per process; later calls change nothing): a
 * process of its own (process true) or a thread of this one; its pid (a process), 0 (a thread), or None when
 * window_ns is 0 or it could not be started. */
static PyObject *p_idle_spin_start(PyObject *self, PyObject *args)
{
    long long w;
    int proc;
    if (!PyArg_ParseTuple(args, "Lp:idle_spin_start", &w, &proc))
        return NULL;
    if (idle_started || w <= 0)
        Py_RETURN_NONE;
    idle_window = w;
    idle_ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
#if IDLE_RAW
    if (proc) {
        pid_t pid = idle_clone();
        if (pid > 0) {
            idle_started = 2;
            return PyLong_FromLong((long)pid);
        }
    }
#endif
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, 65536);
    int ok = pthread_create(&t, &a, idle_main, NULL) == 0;
    pthread_attr_destroy(&a);
    if (!ok)
        Py_RETURN_NONE;
    idle_started = 1;
    return PyLong_FromLong(0);
}

/* a child forked from the server has no spinner (its own first idle_spin_start makes one) */
static void idle_atfork_child(void)
{
    idle_started = 0;
    idle_parked = 0;
}

/* sched_slice(tid, ns) -> the thread's slice (ns) after the call: EEVDF's custom slice (Linux 6.12 and later:
 * sched_setattr's sched_runtime for a SCHED_OTHER / SCHED_BATCH thread; the kernel clamps it to 0.1-100 ms). ns > 0
 * asks for that slice, 0 gives the default back, -1 only reads it. The thread's policy and nice value are kept (read
 * with sched_getattr first); a thread of another policy is left alone. An older kernel ignores sched_runtime for
 * these policies and reports no slice: then the result is 0. busy.py says when and why the server asks. */
struct wq_sched_attr {                  /* SCHED_ATTR_SIZE_VER0 (48 bytes): glibc 2.36 has no wrapper */
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
};

static PyObject *p_sched_slice(PyObject *self, PyObject *args)
{
    int tid;
    long long ns;
    if (!PyArg_ParseTuple(args, "iL", &tid, &ns))
        return NULL;
    struct wq_sched_attr a;
    memset(&a, 0, sizeof a);
    if (syscall(SYS_sched_getattr, tid, &a, (unsigned)sizeof a, 0) != 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    if (ns >= 0 && (a.policy == SCHED_OTHER || a.policy == SCHED_BATCH)) {
        a.size = sizeof a;
        a.flags = 0;
        a.runtime = (uint64_t)ns;
        a.deadline = a.period = 0;
        if (syscall(SYS_sched_setattr, tid, &a, 0) != 0)
            return PyErr_SetFromErrno(PyExc_OSError);
        memset(&a, 0, sizeof a);
        if (syscall(SYS_sched_getattr, tid, &a, (unsigned)sizeof a, 0) != 0)
            return PyErr_SetFromErrno(PyExc_OSError);
    }
    return PyLong_FromUnsignedLongLong(a.policy == SCHED_OTHER || a.policy == SCHED_BATCH ? a.runtime : 0);
}

/* accept_live(listen_fd, max_live, max_total) -> (live descriptors, closed, errno): the connections waiting on a
 * listening socket, accepted (accept4, close-on-exec) until max_live of them are live, max_total were taken, or
 * none is left. One whose peer closed (or reset) it before sending a byte, which a 1-byte MSG_PEEK | MSG_DONTWAIT
 * recv reads as 0 or an error, is closed here at once: there is nothing to serve on it. A client opening and
 * dropping connections in a loop (a TCP health check does the same) filled the accept queue with thousands, and a
 * new client waited behind them, each one a Python socket, a task and a transport (the first probe of
 * bench_serve_peer.py's hostile row: 230-300 ms). early.accept_live is the Python reference; errno: the accept
 * error that stopped it (0: the queue is empty, or a limit was reached). */
#include <sys/socket.h>
static PyObject *p_accept_live(PyObject *self, PyObject *args)
{
    int lfd, max_live, max_total;
    if (!PyArg_ParseTuple(args, "iii", &lfd, &max_live, &max_total))
        return NULL;
    PyObject *live = PyList_New(0);
    if (live == NULL)
        return NULL;
    int closed = 0, err = 0;
    char c;
    for (int taken = 0; taken < max_total && PyList_GET_SIZE(live) < max_live;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR)
                continue;
            if (errno == ECONNABORTED) {
                taken++;
                continue;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                err = errno;
            break;
        }
        taken++;
        ssize_t n;
        do
            n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
            close(fd);
            closed++;
            continue;
        }
        PyObject *o = PyLong_FromLong(fd);
        if (o == NULL || PyList_Append(live, o) < 0) {
            Py_XDECREF(o);
            close(fd);
            for (Py_ssize_t i = 0; i < PyList_GET_SIZE(live); i++)      /* (none is handed out: none stays open) */
                close((int)PyLong_AsLong(PyList_GET_ITEM(live, i)));
            Py_DECREF(live);
            return NULL;
        }
        Py_DECREF(o);
    }
    return Py_BuildValue("(Nii)", live, closed, err);
}

/* the request core (add / lease / complete / fail in C over the live queue's objects): its own file */
#include "_core.c"

static PyMethodDef methods[] = {
    {"core_init", p_core_init, METH_O, "core_init(config): the live queue's classes and constants (server.py)."},
    {"core_run", (PyCFunction)(void (*)(void))p_core_run, METH_FASTCALL, "core_run(conn, buf, pos, turn): requests "
                                                                     "handled in C from pos on (conn.pos moved)."},
    {"core_handled", p_core_handled, METH_NOARGS, "core_handled(): requests the core has answered, in all."},
    {"lone_turn", (PyCFunction)(void (*)(void))p_lone_turn, METH_FASTCALL, "lone_turn(conn, data): a lone "
     "connection's read answered in C (1), not taken (0), or taken and left to Conn.process (2)."},
    {"lone_counts", p_lone_counts, METH_NOARGS, "lone_counts(): (reads answered by lone_turn alone, the commits it "
     "wrote, reads of one of several connections answered by it, commit_tick's group commits in C)."},
    {"commit_tick", p_commit_tick, METH_O, "commit_tick(server): Server._commit_tick, the plain case in C."},
    {"idle_spin_start", p_idle_spin_start, METH_VARARGS, "idle_spin_start(window_ns, process): a SCHED_IDLE spinner "
                                                         "keeps a CPU awake while requests come (spin.py)."},
    {"spin_start", p_spin_start, METH_O, "spin_start(limit_ns): a C thread spins until spin_stop() (spin.py)."},
    {"spin_stop", p_spin_stop, METH_NOARGS, "spin_stop(): the spinning thread parks."},
    {"sched_slice", p_sched_slice, METH_VARARGS, "sched_slice(tid, ns): set (ns > 0), reset (0) or read (-1) the "
     "thread's EEVDF slice; returns it in ns (0: the kernel has none)."},
    {"accept_live", p_accept_live, METH_VARARGS, "accept_live(listen_fd, max_live, max_total): (live descriptors, "
     "connections closed by their peer before a byte, accept errno) (early.accept_live in C)."},
    {"record", p_record, METH_VARARGS, "record(unix_ns, payload): fastpath.encode_record in C."},
    {"add_record", p_add_record, METH_VARARGS, "add_record(unix_ns, cmd, job_id, name, ttr, ttl, priority, "
                                               "max_attempts, max_fails, body, time_ns, created_ns): an add or "
                                               "schedule command's record."},
    {"short_record", p_short_record, METH_VARARGS, "short_record(unix_ns, cmd, job_id, result): any other "
                                                   "command's record."},
    {"init", p_init, METH_VARARGS, "init(Request, commands, (E_FLAGS, E_UNKNOWN, E_ARGS, E_PAYLOAD_SIZE, "
                                   "E_RESULT_SIZE)): what parse_line returns."},
    {"parse_line", p_parse_line, METH_O, "wire.parse_line in C."},
    {"parse_uuid", p_parse_uuid, METH_O, "wire.parse_uuid in C."},
    {"parse_uint", p_parse_uint, METH_VARARGS, "wire.parse_uint in C."},
    {"parse_int", p_parse_int, METH_VARARGS, "wire.parse_int in C."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "wqtool.server.workq._proto",
    "Optional C implementation of wire.py's request-line parser (the Python one is the reference).", -1, methods,
};

PyMODINIT_FUNC PyInit__proto(void)
{
    crc_init();
    pthread_atfork(NULL, NULL, spin_atfork_child);
    pthread_atfork(NULL, NULL, idle_atfork_child);
#if HAVE_HW_CRC
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) {
        crc32c = crc32c_hw;
        hw_crc = 1;
    }
#endif
    return PyModule_Create(&moddef);
}
