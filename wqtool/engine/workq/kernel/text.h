/* text writers shared by the digest lines and the JSON rows (the caller reserved room) (part of wqtool.engine.workq._kernel: a unity build, included by ../_kernel.c in order) */

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
