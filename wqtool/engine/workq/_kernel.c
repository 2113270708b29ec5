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
#include "../_cgrow.h"
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
    uint8_t id[16];
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
        } else if (memcmp(t->jobs[s - 1].id, id, 16) == 0) {
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

static int names_reindex(JobTable *t)
{
    size_t cap = 16;
    while (cap < t->nnames * 4)
        cap *= 2;
    uint32_t *s = PyMem_Calloc(cap, sizeof(uint32_t));
    if (s == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    PyMem_Free(t->nslots);
    t->nslots = s;
    t->nmask = cap - 1;
    for (size_t k = 0; k < t->nnames; k++) {
        size_t i = (size_t)t->names[k].hash & t->nmask;
        while (s[i])
            i = (i + 1) & t->nmask;
        s[i] = (uint32_t)(k + 1);
    }
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
    memcpy(j->id, id, 16);
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
    if (!PyBytes_Check(o) || PyBytes_GET_SIZE(o) != 16) {
        PyErr_SetString(PyExc_TypeError, "a job id is 16 bytes");
        return -1;
    }
    *id = (const uint8_t *)PyBytes_AS_STRING(o);
    return 0;
}

static int jt_contains(JobTable *t, PyObject *key)
{
    if (!PyBytes_Check(key) || PyBytes_GET_SIZE(key) != 16)
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
        PyObject *b = PyBytes_FromStringAndSize((const char *)t->jobs[k].id, 16);
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
        PyObject *b = PyBytes_FromStringAndSize((const char *)t->jobs[t->order[k]].id, 16);
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
        PyObject *id = row ? PyBytes_FromStringAndSize((const char *)t->jobs[k].id, 16) : NULL;
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

/* ---- text helpers (the caller reserved room) */
static const char DIGITS2[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static inline char *w_u64(char *p, uint64_t u)
{
    char tmp[24];
    int i = 24;
    while (u >= 100) {
        uint64_t q = u / 100;
        unsigned r = (unsigned)(u - q * 100);
        i -= 2;
        memcpy(tmp + i, DIGITS2 + 2 * r, 2);
        u = q;
    }
    if (u >= 10) {
        i -= 2;
        memcpy(tmp + i, DIGITS2 + 2 * u, 2);
    } else {
        tmp[--i] = (char)('0' + u);
    }
    memcpy(p, tmp + i, (size_t)(24 - i));
    return p + 24 - i;
}

static inline char *w_i64(char *p, int64_t v)
{
    if (v < 0) {
        *p++ = '-';
        return w_u64(p, 0ULL - (uint64_t)v);
    }
    return w_u64(p, (uint64_t)v);
}

static char *w_i128(char *p, i128 v)
{
    if (v >= (i128)INT64_MIN && v <= (i128)INT64_MAX)
        return w_i64(p, (int64_t)v);
    u128 u = v < 0 ? (u128)0 - (u128)v : (u128)v;
    if (v < 0)
        *p++ = '-';
    char tmp[48];
    int i = 48;
    do {
        tmp[--i] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    memcpy(p, tmp + i, (size_t)(48 - i));
    return p + 48 - i;
}

#define W(p, lit) (memcpy((p), (lit), sizeof(lit) - 1), (p) + sizeof(lit) - 1)

static inline char *w_x08(char *p, uint32_t v)
{
    for (int i = 7; i >= 0; i--) {
        p[i] = hexd[v & 15];
        v >>= 4;
    }
    return p + 8;
}

static inline char *w_hex(char *p, const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        *p++ = hexd[s[i] >> 4];
        *p++ = hexd[s[i] & 15];
    }
    return p;
}

static inline char *w_uuid(char *p, const uint8_t *id)
{
    p = w_hex(p, id, 4);
    *p++ = '-';
    p = w_hex(p, id + 4, 2);
    *p++ = '-';
    p = w_hex(p, id + 6, 2);
    *p++ = '-';
    p = w_hex(p, id + 8, 2);
    *p++ = '-';
    return w_hex(p, id + 10, 6);
}

static inline char *w_2(char *p, int v)
{
    p[0] = (char)('0' + v / 10);
    p[1] = (char)('0' + v % 10);
    return p + 2;
}

/* "YYYY-MM-DDTHH:MM:SS" of the last seconds seen, a few slots (times of neighbouring jobs share their second) */
static struct {
    int64_t secs;
    char text[19];
    int valid;
} sec_cache[64];

static void w_seconds(char *p, int64_t secs);

/* engine's format_unix_ns(ns): RFC 3339 UTC with nanoseconds (trailing zeros dropped), or "@<ns>ns" outside
   years 1..9999 (where datetime overflows). At most 48 bytes. */
static char *w_time(char *p, i128 ns)
{
    i128 s = ns / NS, n = ns % NS;
    if (n < 0) {
        n += NS;
        s -= 1;
    }
    if (s < -62135596800LL || s > 253402300799LL) {
        *p++ = '@';
        p = w_i128(p, ns);
        return W(p, "ns");
    }
    int64_t secs = (int64_t)s;
    unsigned slot = (unsigned)((uint64_t)secs & 63);
    if (!sec_cache[slot].valid || sec_cache[slot].secs != secs) {
        w_seconds(sec_cache[slot].text, secs);
        sec_cache[slot].secs = secs;
        sec_cache[slot].valid = 1;
    }
    memcpy(p, sec_cache[slot].text, 19);
    p += 19;
    if (n) {
        char f[9];
        uint32_t v = (uint32_t)n;
        for (int i = 7; i >= 1; i -= 2) {
            memcpy(f + i, DIGITS2 + 2 * (v % 100), 2);
            v /= 100;
        }
        f[0] = (char)('0' + v);
        int len = 9;
        while (f[len - 1] == '0')
            len--;
        *p++ = '.';
        memcpy(p, f, (size_t)len);
        p += len;
    }
    *p++ = 'Z';
    return p;
}

/* a JSON string of w_time; w_time_or_null: null unless `have` */
static inline char *w_qtime(char *p, i128 ns)
{
    *p++ = '"';
    p = w_time(p, ns);
    *p++ = '"';
    return p;
}

static inline char *w_time_or_null(char *p, int have, i128 ns)
{
    return have ? w_qtime(p, ns) : W(p, "null");
}

/* the 19 characters YYYY-MM-DDTHH:MM:SS of secs since the Unix epoch (years 1..9999) */
static void w_seconds(char *p, int64_t secs)
{
    int64_t days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
    int64_t sod = secs - days * 86400;
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t y = yoe + era * 400;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int d = (int)(doy - (153 * mp + 2) / 5 + 1);
    int m = (int)(mp < 10 ? mp + 3 : mp - 9);
    y += m <= 2;
    p[0] = (char)('0' + y / 1000);
    p[1] = (char)('0' + y / 100 % 10);
    p[2] = (char)('0' + y / 10 % 10);
    p[3] = (char)('0' + y % 10);
    p[4] = '-';
    p = w_2(p + 5, m);
    *p++ = '-';
    p = w_2(p, d);
    *p++ = 'T';
    p = w_2(p, (int)(sod / 3600));
    *p++ = ':';
    p = w_2(p, (int)(sod / 60 % 60));
    *p++ = ':';
    w_2(p, (int)(sod % 60));
}

static const char *const KIND_LABEL[3] = {"?", "add", "schedule"};
static const char *const STATE_LABEL[5] = {"new", "completed", "failed", "pending", "leased"};
static const char *const CMD_LABEL[9] = {"?", "add", "schedule", "complete", "fail", "delete", "expire",
                                          "start-attempt", "timeout-attempt"};

static inline char *w_str(char *p, const char *s)
{
    size_t n = strlen(s);
    memcpy(p, s, n);
    return p + n;
}

/* as_of as i128 (OverflowError beyond: the caller takes the Python path) */
static int as_i128(PyObject *o, i128 *out)
{
    if (!PyLong_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "as_of_ns must be an int");
        return -1;
    }
    int ovf = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &ovf);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (!ovf) {
        *out = v;
        return 0;
    }
    unsigned char b[16];
#if PY_VERSION_HEX >= 0x030D0000
    if (_PyLong_AsByteArray((PyLongObject *)o, b, 16, 1, 1, 1) < 0)
#else
    if (_PyLong_AsByteArray((PyLongObject *)o, b, 16, 1, 1) < 0)
#endif
        return -1;
    u128 u = 0;
    for (int i = 15; i >= 0; i--)
        u = (u << 8) | b[i];
    *out = (i128)u;
    return 0;
}

/* one digest line: json.dumps(job.canonical(), sort_keys=True, separators=(",", ":")) + "\n" */
static char *w_digest_line(char *p, JobTable *t, JobRec *j, i128 asof)
{
    NameRec *nm = &t->names[j->name];
    i128 exp = j->kind == 1 ? asof + (i128)j->ttl * 1000000 : (i128)j->logexp;
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
        p = w_i128(p, asof + (i128)j->ttr * 1000000);
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

/* replay's JSON rows (serialize.job_to_jsonable) as json.dumps writes them:
   style 0: json.dumps(row) + "\n" (replay -o jsonl); style 1: json.dumps(row, indent=2) nested two levels deep
   (replay -o json: "    {\n      \"id\": ...\n    }"), rows joined by ",\n" */
static char *w_row(char *p, JobTable *t, JobRec *j, i128 asof, int style)
{
    const char *open = style ? "    {\n      \"" : "{\"";
    const char *sep = style ? ",\n      \"" : ", \"";
    NameRec *nm = &t->names[j->name];
    i128 created = j->created, sched = j->sched, logexp = j->logexp;
    i128 exp = j->kind == 1 ? asof + (i128)j->ttl * 1000000 : logexp;
    i128 lease = asof + (i128)j->ttr * 1000000;
#define KEY(first, k) (p = w_str(p, (first) ? open : sep), p = W(p, k "\": "))
    KEY(1, "id");
    *p++ = '"';
    p = w_uuid(p, j->id);
    *p++ = '"';
    KEY(0, "kind");
    *p++ = '"';
    p = w_str(p, KIND_LABEL[j->kind]);
    *p++ = '"';
    KEY(0, "name");
    *p++ = '"';
    memcpy(p, t->narena + nm->off, nm->len);
    p += nm->len;
    *p++ = '"';
    KEY(0, "state");
    *p++ = '"';
    p = w_str(p, STATE_LABEL[j->state]);
    *p++ = '"';
    KEY(0, "priority");
    p = w_i64(p, j->prio);
    KEY(0, "attempts");
    p = w_u64(p, j->attempts);
    KEY(0, "max_attempts");
    p = w_u64(p, j->ma);
    KEY(0, "max_fails");
    p = w_u64(p, j->mf);
    KEY(0, "ttr_ms");
    p = w_u64(p, j->ttr);
    KEY(0, "ttl_ms");
    p = w_u64(p, j->ttl);
    KEY(0, "created_ns");
    p = w_i64(p, j->created);
    KEY(0, "scheduled_ns");
    p = j->kind == 2 ? w_i64(p, j->sched) : W(p, "null");
    KEY(0, "expires_ns");
    p = w_i128(p, exp);
    KEY(0, "log_expires_ns");
    p = w_i64(p, j->logexp);
    KEY(0, "lease_expires_ns");
    p = j->state == 4 ? w_i128(p, lease) : W(p, "null");
    KEY(0, "payload_len");
    p = w_u64(p, j->plen);
    KEY(0, "payload_crc32c");
    *p++ = '"';
    p = w_x08(p, j->pcrc);
    *p++ = '"';
    KEY(0, "result");
    if (j->has_res) {
        *p++ = '"';
        p = w_hex(p, (const uint8_t *)t->res + j->res_off, j->res_len);
        *p++ = '"';
    } else {
        p = W(p, "null");
    }
    KEY(0, "created");
    p = w_qtime(p, created);
    KEY(0, "scheduled");
    p = w_time_or_null(p, j->kind == 2, sched);
    KEY(0, "expires");
    p = w_qtime(p, exp);
    KEY(0, "log_expires");
    p = w_qtime(p, logexp);
    KEY(0, "lease_expires");
    p = w_time_or_null(p, j->state == 4, lease);
#undef KEY
    return style ? W(p, "\n    }") : W(p, "}\n");
}

PyDoc_STRVAR(jt_encode_rows_doc,
"encode_rows(style, as_of_ns, start, stop) -> str: rows start..stop-1 in job-id order, encoded as replay writes\n"
"them (style \"jsonl\": json.dumps(row) + newline each; \"json\": json.dumps(row, indent=2) two levels deep, joined\n"
"by \",\\n\"). OverflowError when as_of_ns is beyond 128 bits.");

static PyObject *jt_encode_rows(JobTable *t, PyObject *args)
{
    const char *style_s;
    PyObject *asof_o;
    Py_ssize_t start, stop;
    if (!PyArg_ParseTuple(args, "sOnn:encode_rows", &style_s, &asof_o, &start, &stop))
        return NULL;
    int style;
    if (strcmp(style_s, "jsonl") == 0)
        style = 0;
    else if (strcmp(style_s, "json") == 0)
        style = 1;
    else {
        PyErr_SetString(PyExc_ValueError, "style is jsonl or json");
        return NULL;
    }
    i128 asof;
    if (as_i128(asof_o, &asof) < 0 || jt_sort(t) < 0)
        return NULL;
    if (start < 0)
        start = 0;
    if (stop > (Py_ssize_t)t->order_n)
        stop = (Py_ssize_t)t->order_n;
    Buf b = {0};
    for (Py_ssize_t k = start; k < stop; k++) {
        jt_prefetch_sorted(t, (size_t)k + 8);
        JobRec *j = &t->jobs[t->order[k]];
        if (buf_room(&b, line_max(t, j) + 256) < 0) {
            PyMem_Free(b.p);
            return NULL;
        }
        if (style && k > start)
            b.n = (size_t)(W(b.p + b.n, ",\n") - b.p);
        b.n = (size_t)(w_row(b.p + b.n, t, j, asof, style) - b.p);
    }
    PyObject *out = PyUnicode_DecodeASCII(b.p ? b.p : "", (Py_ssize_t)b.n, "strict");
    PyMem_Free(b.p);
    return out;
}

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

/* =========================================================================================== record statistics */

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

static PyObject *ss_u64list(const uint64_t *v)
{
    PyObject *l = PyList_New(9);
    for (int i = 0; l && i < 9; i++) {
        PyObject *o = PyLong_FromUnsignedLongLong(v[i]);
        if (o == NULL) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, i, o);
    }
    return l;
}

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
        uint8_t id[16];
        for (int k = 0; k < 8; k++) {
            id[k] = (uint8_t)(s->ids[i].hi >> (56 - 8 * k));
            id[8 + k] = (uint8_t)(s->ids[i].lo >> (56 - 8 * k));
        }
        PyObject *b = PyBytes_FromStringAndSize((const char *)id, 16);
        if (b == NULL || PySet_Add(out, b) < 0) {
            Py_XDECREF(b);
            Py_CLEAR(out);
            break;
        }
        Py_DECREF(b);
    }
    return out;
}

static PyMethodDef ss_methods[] = {
    {"records", (PyCFunction)ss_records, METH_NOARGS, "Records per command type (index = type, 0 unused)."},
    {"bytes", (PyCFunction)ss_bytes, METH_NOARGS, "Bytes per command type."},
    {"first_ns", (PyCFunction)ss_first, METH_NOARGS, "The earliest record time (ns), or None."},
    {"last_ns", (PyCFunction)ss_last, METH_NOARGS, "The latest record time (ns), or None."},
    {"distinct", (PyCFunction)ss_distinct, METH_NOARGS, "How many distinct job ids."},
    {"ids", (PyCFunction)ss_ids, METH_NOARGS, "The distinct job ids, as a set."},
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

/* =========================================================================================== scan */

/* where the job id of the record at `at` lies (SIZE of 1 or 2 bytes; -1 otherwise or past end), and where the record
   after it starts: for prefetching only (the scan checks every record itself) */
static inline Py_ssize_t peek_id(const unsigned char *d, Py_ssize_t at, Py_ssize_t end, Py_ssize_t *next)
{
    if (at < 0 || end - at < 40)
        return -1;
    size_t s = d[at + 15];
    Py_ssize_t q = at + 16;
    if (s >= 0x80) {
        if (d[at + 16] >= 0x80)
            return -1;
        s = (s & 0x7F) | ((size_t)d[at + 16] << 7);
        q++;
    }
    if (s < 17 || (size_t)(end - q) < s + 4)
        return -1;
    *next = q + (Py_ssize_t)s + 4;
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
"scan(fr, data, end, path, index, seg_no) -> int\n\n"
"FastReplay._scan in C: frame, check and replay the records of data[8:end] into fr.jobs (a JobTable) and\n"
"fr.stats (a ScanStats, or None); raises fastreplay.Bail.");

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
    PyObject *jobs_o = NULL, *stats_o = NULL, *findings = NULL, *keep_o = NULL, *asof_o = NULL;
    PyObject *key = NULL, *ret = NULL;
    long long applied = 0;
    int err = 0;

    if (!(jobs_o = PyObject_GetAttrString(fr, "jobs")) || !(stats_o = PyObject_GetAttrString(fr, "stats")) ||
        !(findings = PyObject_GetAttrString(fr, "findings")) || !(keep_o = PyObject_GetAttrString(fr, "keep")) ||
        !(asof_o = PyObject_GetAttrString(fr, "as_of_ns")))
        goto fail;
    if (!PyObject_TypeCheck(jobs_o, &JobTableType)) {
        PyErr_SetString(PyExc_TypeError, "FastReplay.jobs must be a _kernel.JobTable");
        goto fail;
    }
    if (stats_o != Py_None && !PyObject_TypeCheck(stats_o, &ScanStatsType)) {
        PyErr_SetString(PyExc_TypeError, "FastReplay.stats must be None or a _kernel.ScanStats");
        goto fail;
    }
    JobTable *t = (JobTable *)jobs_o;
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
    const i128 unix_ns = (i128)UNIX_TO_INTERNAL * NS;
    /* the index is the scan's cost (cache misses): the slot of the job two records ahead and the record of the
       job one ahead are loaded while this one is worked on; `hnext` carries the next record's id hash */
    uint64_t hcur = 0, hnext = 0;
    Py_ssize_t idcur = -1, idnext = -1;

    while (pos < end) {
        hcur = hnext;
        idcur = idnext;
        idnext = -1;
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
        {
            Py_ssize_t n2 = -1, n3;
            idnext = peek_id(d, nxt, end, &n2);
            if (idnext >= 0) {
                hnext = id_hash(d + idnext);
                jt_prefetch_rec(t, hnext);
                Py_ssize_t id2 = peek_id(d, n2, end, &n3);
                if (id2 >= 0)
                    jt_prefetch(t, d + id2);
            }
        }
        if (idcur != q + 1)
            hcur = id_hash(d + q + 1);
        if (crc32c(d + pos, (size_t)(pend - pos)) != be32(d + pend) || d[pos + 13] != 255 || d[pos + 14] != 255)
            goto bail;
        int c = d[q];
        const uint8_t *jid = d + q + 1;
        if (stats != NULL && c >= 1 && c <= 8) {
            i128 tr = (i128)be64s(d + pos + 1) * NS - unix_ns + be32s(d + pos + 9);
            stats->records[c]++;
            stats->bytes[c] += (uint64_t)(nxt - pos);
            if (!stats->have_t || tr < stats->tmin)
                stats->tmin = tr;
            if (!stats->have_t || tr > stats->tmax)
                stats->tmax = tr;
            stats->have_t = 1;
            /* the distinct job ids: added below for adds and for records of jobs not in the table (a job in the
               table came from an add of this pass, whose id is in already) */
        }
        if (c >= 5) {
            if (c > 8 || s != 17)
                goto bail;
            size_t slot;
            Py_ssize_t ix = jt_find_h(t, jid, hcur, &slot);
            if (ix < 0) {
                if ((stats != NULL && ss_add_id(stats, jid) < 0) ||
                    !(key = PyBytes_FromStringAndSize((const char *)jid, 16)) ||
                    add_finding(&cx, findings, "unknown_job_finding", path, pos, index, c, NULL, key, seg_no) < 0)
                    goto fail;
            } else if (c <= 6) {                      /* delete, expire */
                if (jt_delete(t, ix, slot) < 0)
                    goto fail;
                applied++;
            } else {
                JobRec *j = &t->jobs[ix];
                int st = j->state;
                if (c == 7) {                         /* start-attempt */
                    if (st == 4 || st == 1 || st == 2)
                        goto bail;
                    if (j->ma && j->attempts >= j->ma)
                        goto bail;
                    if (j->attempts == 0xFFFFFFFFu)
                        goto bail;
                    j->state = 4;
                    j->attempts++;
                    applied++;
                } else {                              /* timeout-attempt */
                    applied++;
                    if (st != 1 && st != 2) {
                        if (j->ma && j->attempts >= j->ma) {
                            j->state = 2;
                            if (keep && res_set(t, j, "", 0) < 0)
                                goto fail;
                        } else {
                            j->state = 3;
                        }
                    }
                }
                t->ver++;
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
            if ((jid[6] >> 4) != 4 || (jid[8] & 0xC0) != 0x80)
                goto bail;
            size_t slot;
            Py_ssize_t ix = jt_find_h(t, jid, hcur, &slot);
            if (ix < 0) {
                if ((stats != NULL && ss_add_id(stats, jid) < 0) ||
                    !(key = PyBytes_FromStringAndSize((const char *)jid, 16)) ||
                    add_finding(&cx, findings, "unknown_job_finding", path, pos, index, c, NULL, key, seg_no) < 0)
                    goto fail;
            } else {
                JobRec *j = &t->jobs[ix];
                if (j->state == 1 || j->state == 2)
                    goto bail;
                j->state = c == 3 ? 1 : 2;
                if (keep && res_set(t, j, d + rs, (size_t)r) < 0)
                    goto fail;
                t->ver++;
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
            Py_ssize_t pl0 = p;
            p = lim;
            if (d[p] != 1 || d[p + 15] != 1)
                goto bail;
            if (stats != NULL && ss_add_id(stats, jid) < 0)
                goto fail;
            i128 tsec = be64s(d + p + 1), tnsec = be32s(d + p + 9);
            i128 csec = be64s(d + p + 16), cnsec = be32s(d + p + 24);
            i128 created = csec * NS - unix_ns + cnsec;
            i128 sched = tsec * NS - unix_ns + tnsec;
            i128 log_exp = (c == 1 ? created : sched) + (i128)ttl * 1000000;
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
                if (le == NULL || !(key = PyBytes_FromStringAndSize((const char *)jid, 16))) {
                    Py_XDECREF(le);
                    goto fail;
                }
                int r = add_finding(&cx, findings, "expired_finding", path, pos, index, c, le, key, seg_no);
                Py_DECREF(le);
                if (r < 0)
                    goto fail;
            } else {
                /* prio = (zz >> 1) ^ -(zz & 1), zz < 2**63 */
                long long prio = (long long)(zz >> 1) ^ -(long long)(zz & 1);
                if ((jid[6] >> 4) != 4 || (jid[8] & 0xC0) != 0x80 || !name_ok(d + pname, (Py_ssize_t)n) || ttr < 1 ||
                    ttr > MAX_TTR_MS || ttl < 1 || ttl > MAX_TTL_MS || plen > MAX_PAYLOAD_BYTES ||
                    prio < -2147483648LL || prio > 2147483647LL || ma > 255)
                    goto bail;
                size_t slot;
                if (jt_find_h(t, jid, hcur, &slot) >= 0)
                    goto bail;
                /* the compact state keeps times as int64 ns (years 1678..2262): others go the reference way */
                if (created < (i128)INT64_MIN || created > (i128)INT64_MAX || log_exp < (i128)INT64_MIN ||
                    log_exp > (i128)INT64_MAX || (c == 2 && (sched < (i128)INT64_MIN || sched > (i128)INT64_MAX)))
                    goto bail;
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
                j->sched = c == 2 ? (int64_t)sched : 0;
                j->logexp = (int64_t)log_exp;
                j->plen = (uint32_t)plen;
                j->pcrc = keep ? crc32c(d + pl0, (size_t)plen) : 0;   /* the digest's: only a kept state */
                j->seg = (uint32_t)seg;
                j->off = (uint64_t)pos;
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
    Py_XDECREF(jobs_o);
    Py_XDECREF(stats_o);
    Py_XDECREF(findings);
    Py_XDECREF(keep_o);
    Py_XDECREF(asof_o);
    Py_XDECREF(cx.mod);
    return ret;
}

/* =========================================================================================== dump rows */

/*
 * encode_records(data, pos, end, path_json, index, payload, sep, term, max_rows, max_bytes) -> (str, pos, index, rows)
 *
 * dump's JSON rows of the records at data[pos:end]: json.dumps(serialize.record_to_jsonable(rec, payload=mode),
 * ensure_ascii=False) for each, joined by `sep` (dump -o json: ",\n  ") and each followed by `term` (-o jsonl: "\n").
 * For logs the kernel verified: a record that does not frame, check or decode raises ValueError (the file changed
 * under us). payload: 0 none, 1 hex, 2 base64, 3 text. path_json: json.dumps(path, ensure_ascii=False) as UTF-8
 * (surrogatepass). Stops after max_rows rows or once the text passes max_bytes.
 * tests/engine/workq/test_rows_c.py holds it equal to record_to_jsonable + json.dumps on random and hostile records.
 */

static inline char *w_esc_ascii(char *p, unsigned c)
{
    switch (c) {
    case '"': return W(p, "\\\"");
    case '\\': return W(p, "\\\\");
    case '\n': return W(p, "\\n");
    case '\r': return W(p, "\\r");
    case '\t': return W(p, "\\t");
    case '\b': return W(p, "\\b");
    case '\f': return W(p, "\\f");
    default:
        if (c < 0x20) {
            p = W(p, "\\u00");
            *p++ = hexd[c >> 4];
            *p++ = hexd[c & 15];
            return p;
        }
        *p++ = (char)c;
        return p;
    }
}

/* bytes.decode("latin-1") as a JSON string body (ensure_ascii=False, UTF-8 out): at most 6 bytes per byte */
static char *w_latin1(char *p, const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned c = s[i];
        if (c < 0x80) {
            p = w_esc_ascii(p, c);
        } else {
            *p++ = (char)(0xC0 | (c >> 6));
            *p++ = (char)(0x80 | (c & 0x3F));
        }
    }
    return p;
}

/* the length of the valid UTF-8 sequence at s (Python's decoder: no overlongs, no surrogates, <= U+10FFFF), or 0 */
static inline size_t utf8_len(const uint8_t *s, size_t n)
{
    unsigned c = s[0];
    unsigned lo = 0x80, hi = 0xBF;
    size_t len;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return len;
}

/* bytes.decode("utf-8", "backslashreplace") as a JSON string body: at most 6 bytes per byte */
static char *w_text(char *p, const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c < 0x80) {
            p = w_esc_ascii(p, c);
            i++;
            continue;
        }
        size_t len = utf8_len(s + i, n - i);
        if (len) {
            memcpy(p, s + i, len);
            p += len;
            i += len;
        } else {
            p = W(p, "\\\\x");
            *p++ = hexd[c >> 4];
            *p++ = hexd[c & 15];
            i++;
        }
    }
    return p;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *w_b64(char *p, const uint8_t *s, size_t n)
{
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = ((uint32_t)s[i] << 16) | ((uint32_t)s[i + 1] << 8) | s[i + 2];
        p[0] = b64[v >> 18];
        p[1] = b64[(v >> 12) & 63];
        p[2] = b64[(v >> 6) & 63];
        p[3] = b64[v & 63];
        p += 4;
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)s[i] << 16;
        p[0] = b64[v >> 18];
        p[1] = b64[(v >> 12) & 63];
        p[2] = '=';
        p[3] = '=';
        p += 4;
    } else if (n - i == 2) {
        uint32_t v = ((uint32_t)s[i] << 16) | ((uint32_t)s[i + 1] << 8);
        p[0] = b64[v >> 18];
        p[1] = b64[(v >> 12) & 63];
        p[2] = b64[(v >> 6) & 63];
        p[3] = '=';
        p += 4;
    }
    return p;
}

/* render_bytes(b, mode) as a JSON value */
static char *w_bytes(char *p, const uint8_t *s, size_t n, int mode)
{
    if (mode == 0)
        return W(p, "null");
    *p++ = '"';
    if (mode == 1)
        p = w_hex(p, s, n);
    else if (mode == 2)
        p = w_b64(p, s, n);
    else
        p = w_text(p, s, n);
    *p++ = '"';
    return p;
}

static inline size_t bytes_room(size_t n, int mode) { return mode == 3 ? 6 * n : 2 * n + 8; }

/* fastpath._uvarint: Go ReadUvarint, at most 10 bytes; -1 when it ends or overflows */
static inline int rvar(const uint8_t *d, Py_ssize_t *pp, Py_ssize_t end, uint64_t *out)
{
    Py_ssize_t np;
    if (uvar(d, *pp, end, out, &np) < 0)
        return -1;
    *pp = np;
    return 0;
}

static inline i128 go_ns(const uint8_t *t) { return ((i128)be64s(t + 1) - UNIX_TO_INTERNAL) * NS + be32s(t + 9); }

PyDoc_STRVAR(encode_records_doc,
"encode_records(data, pos, end, path_json, index, payload, sep, term, max_rows, max_bytes)\n    -> (str, pos, index, rows)\n\n"
"dump's JSON rows (record_to_jsonable + json.dumps(ensure_ascii=False)) of verified records, in C.");

static PyObject *k_encode_records(PyObject *self, PyObject *args)
{
    PyObject *data;
    Py_ssize_t pos, end, max_rows, max_bytes;
    long long index;
    int mode;
    const char *path_json, *sep, *term;
    Py_ssize_t path_len, sep_len, term_len;
    if (!PyArg_ParseTuple(args, "Onny#Liy#y#nn:encode_records", &data, &pos, &end, &path_json, &path_len, &index,
                          &mode, &sep, &sep_len, &term, &term_len, &max_rows, &max_bytes))
        return NULL;
    if (mode < 0 || mode > 3) {
        PyErr_SetString(PyExc_ValueError, "payload mode is 0..3");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Buf b = {0};
    PyObject *ret = NULL;
    const char *why = NULL;
    Py_ssize_t rows = 0;
    if (end > view.len || pos < 0) {
        PyErr_SetString(PyExc_ValueError, "end is past the end of data");
        goto done;
    }
    const uint8_t *d = (const uint8_t *)view.buf;
    while (pos < end && rows < max_rows && (Py_ssize_t)b.n < max_bytes) {
        /* framing, as the reader does it */
        if (end - pos < 20 || d[pos] != 1) {
            why = "no record here";
            break;
        }
        uint64_t size;
        Py_ssize_t q = pos + 15;
        if (rvar(d, &q, end, &size) < 0 || size > SIZE_CAP || (uint64_t)(end - q) < size + 4) {
            why = "a record does not frame";
            break;
        }
        Py_ssize_t pend = q + (Py_ssize_t)size, nxt = pend + 4;
        uint32_t stored = be32(d + pend);
        if (crc32c(d + pos, (size_t)(pend - pos)) != stored) {
            why = "crc mismatch";
            break;
        }
        /* the payload, as fastpath.decode_payload does it */
        if (size < 17 || d[q] < 1 || d[q] > 8) {
            why = "an undecodable payload";
            break;
        }
        int c = d[q];
        const uint8_t *jid = d + q + 1;
        Py_ssize_t p = q + 17;
        uint64_t n = 0, ttr = 0, ttl = 0, zz = 0, ma = 0, mf = 0, plen = 0, rlen = 0;
        Py_ssize_t pname = 0, ppl = 0, ptime = 0, pres = 0;
        if (c <= 2) {
            if (rvar(d, &p, pend, &n) < 0 || (uint64_t)(pend - p) < n) {
                why = "an undecodable payload";
                break;
            }
            pname = p;
            p += (Py_ssize_t)n;
            if (rvar(d, &p, pend, &ttr) < 0 || rvar(d, &p, pend, &ttl) < 0 || rvar(d, &p, pend, &zz) < 0 ||
                rvar(d, &p, pend, &ma) < 0 || rvar(d, &p, pend, &mf) < 0 || rvar(d, &p, pend, &plen) < 0 ||
                (uint64_t)(pend - p) < plen) {
                why = "an undecodable payload";
                break;
            }
            ppl = p;
            p += (Py_ssize_t)plen;
            if (pend - p != 30 || d[p] != 1 || d[p + 15] != 1) {
                why = "an undecodable payload";
                break;
            }
            ptime = p;
        } else if (c <= 4) {
            if (rvar(d, &p, pend, &rlen) < 0 || (uint64_t)(pend - p) != rlen) {
                why = "an undecodable payload";
                break;
            }
            pres = p;
        } else if (p != pend) {
            why = "an undecodable payload";
            break;
        }
        size_t need = 1024 + (size_t)path_len + (size_t)sep_len + (size_t)term_len + 6 * (size_t)n + bytes_room((size_t)plen, mode) +
                      bytes_room((size_t)rlen, mode);
        if (buf_room(&b, need) < 0)
            goto done;
        char *o = b.p + b.n;
        if (rows) {                                     /* between rows (-o json: ",\n  ") */
            memcpy(o, sep, (size_t)sep_len);
            o += sep_len;
        }
        o = W(o, "{\"file\": ");
        memcpy(o, path_json, (size_t)path_len);
        o += path_len;
        o = W(o, ", \"offset\": ");
        o = w_i64(o, (int64_t)pos);
        o = W(o, ", \"length\": ");
        o = w_i64(o, (int64_t)(nxt - pos));
        o = W(o, ", \"index\": ");
        o = w_i64(o, index);
        o = W(o, ", \"time\": \"");
        o = w_time(o, go_ns(d + pos));
        o = W(o, "\", \"cmd\": \"");
        o = w_str(o, CMD_LABEL[c]);
        o = W(o, "\", \"job_id\": \"");
        o = w_uuid(o, jid);
        o = W(o, "\", \"name\": ");
        if (c <= 2) {
            *o++ = '"';
            o = w_latin1(o, d + pname, (size_t)n);
            o = W(o, "\", \"priority\": ");
            o = w_i64(o, (int64_t)(zz >> 1) ^ -(int64_t)(zz & 1));
            o = W(o, ", \"ttr_ms\": ");
            o = w_u64(o, ttr);
            o = W(o, ", \"ttl_ms\": ");
            o = w_u64(o, ttl);
            o = W(o, ", \"max_attempts\": ");
            o = w_u64(o, ma);
            o = W(o, ", \"max_fails\": ");
            o = w_u64(o, mf);
            o = W(o, ", \"scheduled\": ");
            o = w_time_or_null(o, be64s(d + ptime + 1) != 0 || be32s(d + ptime + 9) != 0, go_ns(d + ptime));
            o = W(o, ", \"created\": \"");
            o = w_time(o, go_ns(d + ptime + 15));
            o = W(o, "\", \"payload_len\": ");
            o = w_u64(o, plen);
            o = W(o, ", \"payload\": ");
            o = w_bytes(o, d + ppl, (size_t)plen, mode);
        } else {
            o = W(o, "null, \"priority\": null, \"ttr_ms\": null, \"ttl_ms\": null, \"max_attempts\": null, "
                     "\"max_fails\": null, \"scheduled\": null, \"created\": null, \"payload_len\": null, "
                     "\"payload\": null");
        }
        o = W(o, ", \"result_len\": ");
        if (c == 3 || c == 4) {
            o = w_u64(o, rlen);
            o = W(o, ", \"result\": ");
            o = w_bytes(o, d + pres, (size_t)rlen, mode);
        } else {
            o = W(o, "null, \"result\": null");
        }
        o = W(o, ", \"crc\": \"");
        o = w_x08(o, stored);
        o = W(o, "\", \"crc_ok\": true, \"error\": null}");
        memcpy(o, term, (size_t)term_len);              /* after each row (-o jsonl: "\n") */
        o += term_len;
        b.n = (size_t)(o - b.p);
        rows++;
        index++;
        pos = nxt;
    }
    if (why != NULL) {
        PyErr_Format(PyExc_ValueError, "%s at offset %zd", why, pos);
        goto done;
    }
    {
        PyObject *s = PyUnicode_DecodeUTF8(b.p ? b.p : "", (Py_ssize_t)b.n, "surrogatepass");
        if (s != NULL)
            ret = Py_BuildValue("(NnLn)", s, pos, index, rows);
    }
done:
    PyMem_Free(b.p);
    PyBuffer_Release(&view);
    return ret;
}

/* the time formatting alone, for the tests: format_unix_ns(ns) */
static PyObject *k_format_ns(PyObject *self, PyObject *arg)
{
    i128 v;
    if (as_i128(arg, &v) < 0)
        return NULL;
    char tmp[64];
    char *e = w_time(tmp, v);
    return PyUnicode_DecodeASCII(tmp, e - tmp, "strict");
}

/* =========================================================================================== module */

static PyMethodDef methods[] = {
    {"scan", k_scan, METH_VARARGS, scan_doc},
    {"digest_text", k_digest_text, METH_O, digest_text_doc},
    {"encode_records", k_encode_records, METH_VARARGS, encode_records_doc},
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
    PyObject *b = os ? PyObject_CallMethod(os, "urandom", "i", 16) : NULL;
    Py_XDECREF(os);
    if (b == NULL || !PyBytes_Check(b) || PyBytes_GET_SIZE(b) != 16) {
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
    if (seed_keys() < 0 || PyType_Ready(&JobTableType) < 0 || PyType_Ready(&ScanStatsType) < 0)
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
    if (consts == NULL || labels == NULL || PyModule_AddObject(m, "CONSTANTS", consts) < 0 ||
        PyModule_AddObject(m, "LABELS", labels) < 0 || PyModule_AddIntConstant(m, "HW_CRC", hw_crc) < 0 ||
        PyModule_AddIntConstant(m, "JOB_RECORD_SIZE", (long)sizeof(JobRec)) < 0 ||
        PyModule_AddObject(m, "JobTable", (PyObject *)&JobTableType) < 0 ||
        PyModule_AddObject(m, "ScanStats", (PyObject *)&ScanStatsType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
