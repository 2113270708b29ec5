/* the JSON row encoders: replay's rows (JobTable.encode_rows) and dump's rows (encode_records) (part of wqtool.engine.workq._kernel: a unity build, included by ../_kernel.c in order) */


/* replay's JSON rows (serialize.job_to_jsonable) as json.dumps writes them:
   style 0: json.dumps(row) + "\n" (replay -o jsonl); style 1: json.dumps(row, indent=2) nested two levels deep
   (replay -o json: "    {\n      \"job_id\": ...\n    }"), rows joined by ",\n" */
static char *w_b64(char *p, const uint8_t *s, size_t n);

static char *w_row(char *p, JobTable *t, JobRec *j, i128 asof, int style)
{
    const char *open = style ? "    {\n      \"" : "{\"";
    const char *sep = style ? ",\n      \"" : ", \"";
    NameRec *nm = &t->names[j->name];
    i128 created = j->created, sched = j->sched, logexp = j->logexp;
    i128 exp = expires_at(j, asof);
    i128 lease = lease_expires_at(asof, j->ttr);
#define KEY(first, k) (p = w_str(p, (first) ? open : sep), p = W(p, k "\": "))
    KEY(1, "job_id");
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
    KEY(0, "result");     /* base64, as every JSON output gives bytes (the digest line keeps hex) */
    if (j->has_res) {
        *p++ = '"';
        p = w_b64(p, (const uint8_t *)t->res + j->res_off, j->res_len);
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
/* v in lower-case hex, no leading zeros ("0" for 0): offsets.hex_offset without its 0x */
static char *w_hex64(char *p, uint64_t v)
{
    char tmp[16];
    int n = 0;
    do {
        tmp[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

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

/* one record at d[pos:end], framed, checked and decoded as encode_records reads it (the reader's framing,
   fastpath.decode_payload's payload): NULL and its fields in *r, else why it is refused */
typedef struct {
    int c;
    const uint8_t *jid;
    uint64_t n, ttr, ttl, zz, ma, mf, plen, rlen;
    Py_ssize_t pname, ppl, ptime, pres, nxt;
    uint32_t stored;
} RecF;

static const char *rec_decode(const uint8_t *d, Py_ssize_t pos, Py_ssize_t end, RecF *r)
{
    if (end - pos < FRAME_MIN || d[pos] != GO_TIME_VERSION)
        return "no record here";
    uint64_t size;
    Py_ssize_t q = pos + GO_TIME_SIZE;
    if (rvar(d, &q, end, &size) < 0 || size > SIZE_CAP || (uint64_t)(end - q) < size + CRC_SIZE)
        return "a record does not frame";
    Py_ssize_t pend = q + (Py_ssize_t)size;
    r->nxt = pend + CRC_SIZE;
    r->stored = be32(d + pend);
    if (crc32c(d + pos, (size_t)(pend - pos)) != r->stored)
        return "crc mismatch";
    if (size < PAYLOAD_MIN || d[q] < CMD_ADD || d[q] > CMD_MAX)
        return "an undecodable payload";
    int c = d[q];
    r->c = c;
    r->jid = d + q + 1;
    Py_ssize_t p = q + PAYLOAD_MIN;
    r->n = r->ttr = r->ttl = r->zz = r->ma = r->mf = r->plen = r->rlen = 0;
    r->pname = r->ppl = r->ptime = r->pres = 0;
    if (c == CMD_ADD || c == CMD_SCHEDULE) {
        if (rvar(d, &p, pend, &r->n) < 0 || (uint64_t)(pend - p) < r->n)
            return "an undecodable payload";
        r->pname = p;
        p += (Py_ssize_t)r->n;
        if (rvar(d, &p, pend, &r->ttr) < 0 || rvar(d, &p, pend, &r->ttl) < 0 || rvar(d, &p, pend, &r->zz) < 0 ||
            rvar(d, &p, pend, &r->ma) < 0 || rvar(d, &p, pend, &r->mf) < 0 || rvar(d, &p, pend, &r->plen) < 0 ||
            (uint64_t)(pend - p) < r->plen)
            return "an undecodable payload";
        r->ppl = p;
        p += (Py_ssize_t)r->plen;
        if (pend - p != 2 * GO_TIME_SIZE || d[p] != GO_TIME_VERSION || d[p + GO_TIME_SIZE] != GO_TIME_VERSION)
            return "an undecodable payload";
        r->ptime = p;
    } else if (c == CMD_COMPLETE || c == CMD_FAIL) {
        if (rvar(d, &p, pend, &r->rlen) < 0 || (uint64_t)(pend - p) != r->rlen)
            return "an undecodable payload";
        r->pres = p;
    } else if (p != pend) {
        return "an undecodable payload";
    }
    return NULL;
}

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
    /* the file's base name as it stands in path_json (a JSON string: the text after its last '/', without the
       closing quote; JSON escapes no '/', and an escape inside the name stays valid in the "at" string) */
    const char *base_json = path_json + 1;
    for (Py_ssize_t k = 1; k + 1 < path_len; k++)
        if (path_json[k] == '/')
            base_json = path_json + k + 1;
    Py_ssize_t base_len = path_len > 1 ? (path_json + path_len - 1) - base_json : 0;
    while (pos < end && rows < max_rows && (Py_ssize_t)b.n < max_bytes) {
        RecF r;
        if ((why = rec_decode(d, pos, end, &r)) != NULL)
            break;
        int c = r.c;
        const uint8_t *jid = r.jid;
        uint64_t n = r.n, ttr = r.ttr, ttl = r.ttl, zz = r.zz, ma = r.ma, mf = r.mf, plen = r.plen, rlen = r.rlen;
        Py_ssize_t pname = r.pname, ppl = r.ppl, ptime = r.ptime, pres = r.pres, nxt = r.nxt;
        uint32_t stored = r.stored;
        size_t need = 1024 + 2 * (size_t)path_len + (size_t)sep_len + (size_t)term_len + 6 * (size_t)n + bytes_room((size_t)plen, mode) +
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
        o = W(o, ", \"at\": \"");                      /* offsets.at: the file's name, @0x, the offset in hex */
        memcpy(o, base_json, (size_t)base_len);
        o += base_len;
        o = W(o, "@0x");
        o = w_hex64(o, (uint64_t)pos);
        *o++ = '"';
        o = W(o, ", \"length\": ");
        o = w_i64(o, (int64_t)(nxt - pos));
        o = W(o, ", \"record_index\": ");
        o = w_i64(o, index);
        o = W(o, ", \"time\": \"");
        o = w_time(o, go_time_ns(d + pos));
        o = W(o, "\", \"cmd\": \"");
        o = w_str(o, CMD_LABEL[c]);
        o = W(o, "\", \"job_id\": \"");
        o = w_uuid(o, jid);
        o = W(o, "\", \"name\": ");
        if (c == CMD_ADD || c == CMD_SCHEDULE) {
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
            o = w_time_or_null(o, !go_time_is_zero(d + ptime), go_time_ns(d + ptime));
            o = W(o, ", \"created\": \"");
            o = w_time(o, go_time_ns(d + ptime + GO_TIME_SIZE));
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
