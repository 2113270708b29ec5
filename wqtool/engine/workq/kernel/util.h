/* small helpers: bounded varints, queue names, big-endian loads, 128-bit ints to Python (part of wqtool.engine.workq._kernel: a unity build, included by ../_kernel.c in order) */

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

/* A Go binary time at t (its version checked by the caller), in ns since the Unix epoch: the one conversion of the
   kernel (GoTime.to_unix_ns in wqtool/formats/_common.py) */
static inline i128 go_time_ns(const unsigned char *t)
{
    return ((i128)be64s(t + GO_TIME_SEC_AT) - UNIX_TO_INTERNAL) * NS + be32s(t + GO_TIME_NSEC_AT);
}

/* Go's zero time (seconds and nanoseconds 0): a schedule-job's run-at when it has none */
static inline int go_time_is_zero(const unsigned char *t)
{
    return be64s(t + GO_TIME_SEC_AT) == 0 && be32s(t + GO_TIME_NSEC_AT) == 0;
}

/* whether the time's zone is UTC's (the only zone workq-server writes) */
static inline int go_time_is_utc(const unsigned char *t)
{
    return (int16_t)((t[GO_TIME_ZONE_AT] << 8) | t[GO_TIME_ZONE_AT + 1]) == GO_TIME_ZONE_UTC;
}

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

static const char hexd[] = "0123456789abcdef";
