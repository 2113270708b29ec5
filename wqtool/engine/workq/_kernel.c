/*
 * wqtool.engine.workq._kernel — optional C implementation of FastReplay._scan (fastreplay.py).
 *
 * scan(fr, data, end, path, index, seg_no) -> int does exactly what FastReplay._scan_py does, in the same
 * order: same Bail conditions (raises wqtool.engine.workq.fastreplay.Bail, looked up at call time), same packed
 * job states in fr.jobs, same fr.results / fr.locs (keep mode), same findings (built by calling
 * fastreplay.unknown_job_finding / fastreplay.expired_finding), same fr.applied and index accounting, same
 * partition rule. tests/engine/test_kernel_c.py compares both on random and hostile input.
 *
 * Where the Python loop reads a byte it may not need (a varint of an add running past the 30 time bytes),
 * the Python version is bound to bail later without any side effect in between; this one bails at once
 * instead of reading, so it never reads past `end` (nor past pend - 30 inside an add).
 *
 * digest_text(jobs) -> bytes is b"".join(replay.digest_line(j) for j in jobs), byte for byte (state_digest feeds
 * sha256 with it in chunks); tests/engine/test_digest_c.py compares both.
 *
 * CRC-32C: SSE4.2 crc32 instructions when the CPU has them (runtime check), else slice-by-8 tables.
 * Needs __int128 (times in ns since year 1 overflow int64); where it is missing the build fails and the
 * package falls back to the pure-Python loop (setup.py builds this extension with optional=True).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#ifndef __SIZEOF_INT128__
#error "wqtool.engine.workq._kernel needs __int128; the pure-Python kernel is used instead"
#endif

typedef __int128 i128;
typedef unsigned __int128 u128;

/* must equal wqtool.formats.workq (checked by the tests through _kernel.CONSTANTS) */
#define SIZE_CAP (2 * 1024 * 1024)
#define MAX_RESULT_BYTES 1048576
#define MAX_PAYLOAD_BYTES 1048576
#define MAX_TTR_MS 86400000ULL
#define MAX_TTL_MS 2592000000ULL
#define UNIX_TO_INTERNAL 62135596800LL
#define NS 1000000000LL

/* ------------------------------------------------------------------------------------------- CRC-32C */

static uint32_t crc_tab[8][256];

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_tab[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = crc_tab[0][i];
        for (int t = 1; t < 8; t++) {
            c = crc_tab[0][c & 0xFF] ^ (c >> 8);
            crc_tab[t][i] = c;
        }
    }
}

static uint32_t crc32c_sw(const unsigned char *p, size_t n)
{
    uint32_t crc = 0xFFFFFFFFu;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    while (n && ((uintptr_t)p & 7)) {
        crc = crc_tab[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
        n--;
    }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= crc;
        uint32_t hi = (uint32_t)(w >> 32), lo = (uint32_t)w;
        crc = crc_tab[7][lo & 0xFF] ^ crc_tab[6][(lo >> 8) & 0xFF] ^ crc_tab[5][(lo >> 16) & 0xFF] ^
              crc_tab[4][lo >> 24] ^ crc_tab[3][hi & 0xFF] ^ crc_tab[2][(hi >> 8) & 0xFF] ^
              crc_tab[1][(hi >> 16) & 0xFF] ^ crc_tab[0][hi >> 24];
        p += 8;
        n -= 8;
    }
#endif
    while (n--)
        crc = crc_tab[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_HW_CRC 1
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(const unsigned char *p, size_t n)
{
    uint64_t crc = 0xFFFFFFFFu;
    while (n && ((uintptr_t)p & 7)) {
        crc = __builtin_ia32_crc32qi((uint32_t)crc, *p++);
        n--;
    }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        crc = __builtin_ia32_crc32di(crc, w);
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = __builtin_ia32_crc32qi((uint32_t)crc, *p++);
    return ~(uint32_t)crc;
}
#else
#define HAVE_HW_CRC 0
#endif

static uint32_t (*crc32c)(const unsigned char *, size_t) = crc32c_sw;
static int hw_crc = 0;

/* ------------------------------------------------------------------------------------------- helpers */

/* fastreplay._uvarint(data, p, end): at most 10 bytes, never at or past end; 0 ok, -1 bail */
static inline int uvar(const unsigned char *d, Py_ssize_t p, Py_ssize_t end, uint64_t *out, Py_ssize_t *np)
{
    uint64_t r = 0;
    int shift = 0;
    for (int i = 0; i < 10; i++) {
        if (p >= end)
            return -1;
        unsigned c = d[p++];
        if (c < 0x80) {
            if (i == 9 && c > 1)
                return -1;
            *out = r | ((uint64_t)c << shift);
            *np = p;
            return 0;
        }
        r |= (uint64_t)(c & 0x7F) << shift;
        shift += 7;
    }
    return -1;
}

/* the inline varints of an add: continuation stops after shift 56 (value < 2**63); reading at lim or beyond
   means the Python loop bails later (p + 30 != pend), so bail now. 0 ok, -1 bail */
static inline int ivar(const unsigned char *d, Py_ssize_t *pp, Py_ssize_t lim, uint64_t *out)
{
    Py_ssize_t p = *pp;
    if (p >= lim)
        return -1;
    uint64_t n = d[p++];
    if (n >= 0x80) {
        n &= 0x7F;
        int sh = 7;
        for (;;) {
            if (p >= lim)
                return -1;
            unsigned b = d[p++];
            n |= (uint64_t)(b & 0x7F) << sh;
            if (b < 0x80)
                break;
            sh += 7;
            if (sh > 56)
                return -1;
        }
    }
    *out = n;
    *pp = p;
    return 0;
}

static unsigned char name_ok_tab[256];

static void name_init(void)
{
    for (int c = 0; c < 256; c++)
        name_ok_tab[c] = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                         c == '_' || c == '.' || c == '-';
}

/* NAME_RE.match(name) with NAME_RE = [A-Za-z0-9_.\-]{1,255}\Z (as Go's ^...$: the whole name) */
static int name_ok(const unsigned char *s, Py_ssize_t n)
{
    if (n < 1 || n > 255)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (!name_ok_tab[s[i]])
            return 0;
    return 1;
}

static inline uint32_t be32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static inline int64_t be64s(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return (int64_t)v;
}

static inline int32_t be32s(const unsigned char *p) { return (int32_t)be32(p); }

static PyObject *pylong_i128(i128 x)
{
    if (x >= (i128)INT64_MIN && x <= (i128)INT64_MAX)
        return PyLong_FromLongLong((long long)x);
    int neg = x < 0;
    u128 u = neg ? (u128)0 - (u128)x : (u128)x;
    PyObject *hi = PyLong_FromUnsignedLongLong((unsigned long long)(u >> 64));
    PyObject *lo = PyLong_FromUnsignedLongLong((unsigned long long)u);
    PyObject *sh = PyLong_FromLong(64);
    PyObject *t = NULL, *r = NULL;
    if (hi && lo && sh && (t = PyNumber_Lshift(hi, sh)) != NULL)
        r = PyNumber_Or(t, lo);
    Py_XDECREF(hi);
    Py_XDECREF(lo);
    Py_XDECREF(sh);
    Py_XDECREF(t);
    if (r && neg) {
        PyObject *m = PyNumber_Negative(r);
        Py_DECREF(r);
        r = m;
    }
    return r;
}

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

static void set_bail(Ctx *cx)
{
    PyObject *m = ctx_mod(cx);
    if (m == NULL)
        return;
    PyObject *b = PyObject_GetAttrString(m, "Bail");
    if (b == NULL)
        return;
    PyErr_SetNone(b);
    Py_DECREF(b);
}

/* out((seg_no, ctor(path, pos, index, _CMDS[c], [log_exp,] jid))); 0 ok, -1 error */
static int add_finding(Ctx *cx, PyObject *findings, const char *ctor, PyObject *path, Py_ssize_t pos,
                       long long index, int c, PyObject *log_exp, PyObject *jid, PyObject *seg_no)
{
    int rc = -1;
    PyObject *fn = NULL, *cmds = NULL, *co = NULL, *cmd = NULL, *po = NULL, *io = NULL, *f = NULL, *t = NULL;
    if (cx->limit >= 0 && PyList_GET_SIZE(findings) >= cx->limit) {
        /* over the cap: only counted (CappedFindings.over), the Finding is never built */
        PyObject *r = PyObject_CallMethod(findings, "over", "s",
                                          log_exp ? "WQ-ADD-EXPIRED" : "WQ-UNKNOWN-JOB");
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

/* a packed job state: 0 ok, -1 error, 1 does not fit int64 (never for a real log: bail) */
static inline int get_v(PyObject *o, long long *v)
{
    int ovf = 0;
    *v = PyLong_AsLongLongAndOverflow(o, &ovf);
    if (ovf)
        return 1;
    if (*v == -1 && PyErr_Occurred())
        return -1;
    return 0;
}

static inline int set_v(PyObject *jobs, PyObject *key, long long v)
{
    PyObject *o = PyLong_FromLongLong(v);
    if (o == NULL)
        return -1;
    int r = PyDict_SetItem(jobs, key, o);
    Py_DECREF(o);
    return r;
}

static PyObject *attr_dict(PyObject *fr, const char *name)
{
    PyObject *o = PyObject_GetAttrString(fr, name);
    if (o && !PyDict_Check(o)) {
        PyErr_Format(PyExc_TypeError, "FastReplay.%s must be a dict", name);
        Py_CLEAR(o);
    }
    return o;
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

/* ------------------------------------------------------------------------------------------- scan */

PyDoc_STRVAR(scan_doc,
"scan(fr, data, end, path, index, seg_no) -> int\n\n"
"FastReplay._scan in C: frame, check and replay the records of data[8:end]; raises fastreplay.Bail.");

static PyObject *k_scan(PyObject *self, PyObject *args)
{
    PyObject *fr, *data, *path, *seg_no;
    Py_ssize_t end;
    long long index;
    if (!PyArg_ParseTuple(args, "OOnOLO:scan", &fr, &data, &end, &path, &index, &seg_no))
        return NULL;

    Ctx cx = {NULL, -1};
    Py_buffer view;
    view.obj = NULL;
    PyObject *jobs = NULL, *results = NULL, *locs = NULL, *findings = NULL, *keep_o = NULL, *asof_o = NULL;
    PyObject *key = NULL, *ret = NULL;
    long long applied = 0;
    int err = 0;

    if (!(jobs = attr_dict(fr, "jobs")) || !(results = attr_dict(fr, "results")) || !(locs = attr_dict(fr, "locs")) ||
        !(findings = PyObject_GetAttrString(fr, "findings")) || !(keep_o = PyObject_GetAttrString(fr, "keep")) ||
        !(asof_o = PyObject_GetAttrString(fr, "as_of_ns")))
        goto fail;
    int keep = PyObject_IsTrue(keep_o);
    if (keep < 0)
        goto fail;
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
    if (err)
        goto fail;
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
    if (end > view.len) {
        PyErr_SetString(PyExc_ValueError, "end is past the end of data");
        goto fail;
    }
    const unsigned char *d = (const unsigned char *)view.buf;
    Py_ssize_t pos = 8;

    while (pos < end) {
        if (end - pos < 20 || d[pos] != 1)
            goto bail;
        uint64_t s = d[pos + 15];
        Py_ssize_t q;
        if (s < 0x80) {
            q = pos + 16;
        } else {
            if (uvar(d, pos + 15, pos + 19, &s, &q) < 0 || s > SIZE_CAP)
                goto bail;
        }
        Py_ssize_t pend = q + (Py_ssize_t)s;
        Py_ssize_t nxt = pend + 4;
        if (nxt > end || s < 17)
            goto bail;
        if (nparts > 1 && (long long)d[q + 16] % nparts != part) {
            index++;
            pos = nxt;
            continue;
        }
        if (crc32c(d + pos, (size_t)(pend - pos)) != be32(d + pend) || d[pos + 13] != 255 || d[pos + 14] != 255)
            goto bail;
        int c = d[q];
        if (c >= 5) {
            if (c > 8 || s != 17)
                goto bail;
            if (!(key = PyBytes_FromStringAndSize((const char *)d + q + 1, 16)))
                goto fail;
            PyObject *vo = PyDict_GetItemWithError(jobs, key);
            if (vo == NULL) {
                if (PyErr_Occurred() ||
                    add_finding(&cx, findings, "unknown_job_finding", path, pos, index, c, NULL, key, seg_no) < 0)
                    goto fail;
            } else if (c <= 6) {                      /* delete, expire */
                if (PyDict_DelItem(jobs, key) < 0)
                    goto fail;
                applied++;
            } else {
                long long v;
                int g = get_v(vo, &v);
                if (g < 0)
                    goto fail;
                if (g > 0)
                    goto bail;
                long long st = v & 7, ma = (v >> 4) & 255;
                if (c == 7) {                         /* start-attempt */
                    if (st == 4 || st == 1 || st == 2)
                        goto bail;
                    if (ma && (v >> 12) >= ma)
                        goto bail;
                    long long nv;
                    if (__builtin_add_overflow((v & ~7LL) | 4, 1LL << 12, &nv))
                        goto bail;
                    if (set_v(jobs, key, nv) < 0)
                        goto fail;
                    applied++;
                } else {                              /* timeout-attempt */
                    applied++;
                    if (st != 1 && st != 2) {
                        if (ma && (v >> 12) >= ma) {
                            if (set_v(jobs, key, (v & ~7LL) | 2) < 0)
                                goto fail;
                            if (keep) {
                                PyObject *e = PyBytes_FromStringAndSize(NULL, 0);
                                if (e == NULL)
                                    goto fail;
                                int r = PyDict_SetItem(results, key, e);
                                Py_DECREF(e);
                                if (r < 0)
                                    goto fail;
                            }
                        } else if (set_v(jobs, key, (v & ~7LL) | 3) < 0) {
                            goto fail;
                        }
                    }
                }
            }
        } else if (c >= 3) {                          /* complete, fail */
            uint64_t r = d[q + 17];
            Py_ssize_t rs;
            if (r < 0x80) {
                rs = q + 18;
            } else if (uvar(d, q + 17, pend, &r, &rs) < 0) {
                goto bail;
            }
            if (rs > pend || r != (uint64_t)(pend - rs) || r > MAX_RESULT_BYTES)
                goto bail;
            const unsigned char *j = d + q + 1;
            if ((j[6] >> 4) != 4 || (j[8] & 0xC0) != 0x80)
                goto bail;
            if (!(key = PyBytes_FromStringAndSize((const char *)j, 16)))
                goto fail;
            PyObject *vo = PyDict_GetItemWithError(jobs, key);
            if (vo == NULL) {
                if (PyErr_Occurred() ||
                    add_finding(&cx, findings, "unknown_job_finding", path, pos, index, c, NULL, key, seg_no) < 0)
                    goto fail;
            } else {
                long long v;
                int g = get_v(vo, &v);
                if (g < 0)
                    goto fail;
                if (g > 0)
                    goto bail;
                long long st = v & 7;
                if (st == 1 || st == 2)
                    goto bail;
                if (set_v(jobs, key, (v & ~7LL) | (c == 3 ? 1 : 2)) < 0)
                    goto fail;
                if (keep) {
                    PyObject *res = PyBytes_FromStringAndSize((const char *)d + rs, (Py_ssize_t)r);
                    if (res == NULL)
                        goto fail;
                    int rr = PyDict_SetItem(results, key, res);
                    Py_DECREF(res);
                    if (rr < 0)
                        goto fail;
                }
                applied++;
            }
        } else if (c >= 1) {                          /* add, schedule */
            Py_ssize_t lim = pend - 30;               /* where the two times must start */
            Py_ssize_t p = q + 17;
            uint64_t n, ttr, ttl, zz, ma, mf, plen;
            if (ivar(d, &p, lim, &n) < 0)
                goto bail;
            if (n > (uint64_t)(lim - p))              /* p only grows: p + 30 != pend */
                goto bail;
            Py_ssize_t pname = p;
            p += (Py_ssize_t)n;
            if (ivar(d, &p, lim, &ttr) < 0 || ivar(d, &p, lim, &ttl) < 0 || ivar(d, &p, lim, &zz) < 0 ||
                ivar(d, &p, lim, &ma) < 0 || ivar(d, &p, lim, &mf) < 0 || ivar(d, &p, lim, &plen) < 0)
                goto bail;
            if (plen != (uint64_t)(lim - p))
                goto bail;
            p = lim;
            if (d[p] != 1 || d[p + 15] != 1)
                goto bail;
            i128 tsec = be64s(d + p + 1), tnsec = be32s(d + p + 9);
            i128 csec = be64s(d + p + 16), cnsec = be32s(d + p + 24);
            const i128 unix_ns = (i128)UNIX_TO_INTERNAL * NS;
            i128 created = csec * NS - unix_ns + cnsec;
            i128 sched = tsec * NS - unix_ns + tnsec;
            i128 log_exp = (c == 1 ? created : sched) + (i128)ttl * 1000000;
            const unsigned char *j = d + q + 1;
            if (!(key = PyBytes_FromStringAndSize((const char *)j, 16)))
                goto fail;
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
                PyObject *le = pylong_i128(log_exp);
                if (le == NULL)
                    goto fail;
                int r = add_finding(&cx, findings, "expired_finding", path, pos, index, c, le, key, seg_no);
                Py_DECREF(le);
                if (r < 0)
                    goto fail;
            } else {
                /* prio = (zz >> 1) ^ -(zz & 1), zz < 2**63 */
                long long prio = (long long)(zz >> 1) ^ -(long long)(zz & 1);
                if ((j[6] >> 4) != 4 || (j[8] & 0xC0) != 0x80 || !name_ok(d + pname, (Py_ssize_t)n) || ttr < 1 ||
                    ttr > MAX_TTR_MS || ttl < 1 || ttl > MAX_TTL_MS || plen > MAX_PAYLOAD_BYTES ||
                    prio < -2147483648LL || prio > 2147483647LL || ma > 255)
                    goto bail;
                int has = PyDict_Contains(jobs, key);
                if (has < 0)
                    goto fail;
                if (has)
                    goto bail;
                if (set_v(jobs, key, ((long long)(c - 1) << 3) | ((long long)ma << 4)) < 0)
                    goto fail;
                if (keep) {
                    has = PyDict_Contains(results, key);
                    if (has < 0 || (has && PyDict_DelItem(results, key) < 0))
                        goto fail;
                    Py_ssize_t pl0 = pend - 30 - (Py_ssize_t)plen;
                    PyObject *tup = PyTuple_New(13);
                    if (tup == NULL)
                        goto fail;
                    Py_INCREF(path);
                    PyTuple_SET_ITEM(tup, 0, path);
                    PyTuple_SET_ITEM(tup, 1, PyLong_FromSsize_t(pos));
                    PyTuple_SET_ITEM(tup, 2, PyBytes_FromStringAndSize((const char *)d + pname, (Py_ssize_t)n));
                    PyTuple_SET_ITEM(tup, 3, PyLong_FromUnsignedLongLong(ttr));
                    PyTuple_SET_ITEM(tup, 4, PyLong_FromUnsignedLongLong(ttl));
                    PyTuple_SET_ITEM(tup, 5, PyLong_FromLongLong(prio));
                    PyTuple_SET_ITEM(tup, 6, PyLong_FromUnsignedLongLong(ma));
                    PyTuple_SET_ITEM(tup, 7, PyLong_FromUnsignedLongLong(mf));
                    PyTuple_SET_ITEM(tup, 8, PyLong_FromUnsignedLongLong(plen));
                    PyTuple_SET_ITEM(tup, 9, PyLong_FromUnsignedLong(crc32c(d + pl0, (size_t)plen)));
                    PyTuple_SET_ITEM(tup, 10, pylong_i128(created));
                    if (c == 1) {
                        Py_INCREF(Py_None);
                        PyTuple_SET_ITEM(tup, 11, Py_None);
                    } else {
                        PyTuple_SET_ITEM(tup, 11, pylong_i128(sched));
                    }
                    PyTuple_SET_ITEM(tup, 12, pylong_i128(log_exp));
                    int ok = 1;
                    for (int i = 0; i < 13; i++)
                        if (PyTuple_GET_ITEM(tup, i) == NULL)
                            ok = 0;
                    if (!ok || PyDict_SetItem(locs, key, tup) < 0) {
                        Py_DECREF(tup);
                        goto fail;
                    }
                    Py_DECREF(tup);
                }
                applied++;
            }
        } else {
            goto bail;
        }
        Py_CLEAR(key);
        index++;
        pos = nxt;
    }

    PyBuffer_Release(&view);
    {
        PyObject *a0 = PyObject_GetAttrString(fr, "applied"), *ao = NULL, *a1 = NULL;
        if (a0 && (ao = PyLong_FromLongLong(applied)) && (a1 = PyNumber_Add(a0, ao)) &&
            PyObject_SetAttrString(fr, "applied", a1) == 0)
            ret = PyLong_FromLongLong(index);
        Py_XDECREF(a0);
        Py_XDECREF(ao);
        Py_XDECREF(a1);
    }
    goto done;

bail:
    set_bail(&cx);
fail:
    if (view.obj)
        PyBuffer_Release(&view);
done:
    Py_XDECREF(key);
    Py_XDECREF(jobs);
    Py_XDECREF(results);
    Py_XDECREF(locs);
    Py_XDECREF(findings);
    Py_XDECREF(keep_o);
    Py_XDECREF(asof_o);
    Py_XDECREF(cx.mod);
    return ret;
}

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

static const char hexd[] = "0123456789abcdef";

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

/* ------------------------------------------------------------------------------------------- crc entry points */

static PyObject *crc_entry(PyObject *arg, uint32_t (*fn)(const unsigned char *, size_t))
{
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0)
        return NULL;
    uint32_t v = fn((const unsigned char *)b.buf, (size_t)b.len);
    PyBuffer_Release(&b);
    return PyLong_FromUnsignedLong(v);
}

static PyObject *k_crc32c(PyObject *self, PyObject *arg) { return crc_entry(arg, crc32c); }
static PyObject *k_crc32c_sw(PyObject *self, PyObject *arg) { return crc_entry(arg, crc32c_sw); }

static PyMethodDef methods[] = {
    {"scan", k_scan, METH_VARARGS, scan_doc},
    {"digest_text", k_digest_text, METH_O, digest_text_doc},
    {"crc32c", k_crc32c, METH_O, "CRC-32C of a buffer (the implementation scan uses)."},
    {"crc32c_sw", k_crc32c_sw, METH_O, "CRC-32C of a buffer with the slice-by-8 tables."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "wqtool.engine.workq._kernel",
    "Optional C implementation of FastReplay._scan (see fastreplay.py) and of replay.digest_line over many jobs.", -1, methods, NULL, NULL, NULL, NULL,
};

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
    PyObject *m = PyModule_Create(&moddef);
    if (m == NULL)
        return NULL;
    PyObject *consts = Py_BuildValue("{s:i,s:i,s:i,s:K,s:K,s:L}", "SIZE_CAP", SIZE_CAP, "MAX_RESULT_BYTES",
                                     MAX_RESULT_BYTES, "MAX_PAYLOAD_BYTES", MAX_PAYLOAD_BYTES, "MAX_TTR_MS",
                                     (unsigned long long)MAX_TTR_MS, "MAX_TTL_MS", (unsigned long long)MAX_TTL_MS,
                                     "UNIX_TO_INTERNAL", (long long)UNIX_TO_INTERNAL);
    if (consts == NULL || PyModule_AddObject(m, "CONSTANTS", consts) < 0 ||
        PyModule_AddIntConstant(m, "HW_CRC", hw_crc) < 0) {
        Py_XDECREF(consts);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
