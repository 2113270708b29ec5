/* record_columns: dump's record rows as Arrow column buffers (the Spark workq source's batches) (part of
 * wqtool.engine.workq._kernel: a unity build, included by ../_kernel.c after rows.c) */

/*
 * record_columns(data, pos, end, base, index, payload, max_rows, max_bytes) -> (pos, index, rows, why, columns)
 *
 * The rows encode_records writes (serialize.record_to_jsonable) of the records at data[pos:end], as Arrow buffers
 * instead of JSON text: the same framing, check and decoding (rec_decode). It stops before the first record it
 * refuses and says why (`why`, else None), after max_rows rows, or once its string data passes max_bytes.
 * `base`: the file's base name as UTF-8 (the "at" column's prefix); payload: 0 none, 1 hex, 2 base64, 3 text.
 * columns, in RC_* order: (validity bitmap or None, values, offsets or None) per column — int64 / uint64 values, or
 * int32 offsets and UTF-8 data of a string column; "cmd" is one uint8 code per row (CMD_LABEL's index).
 * The Python side (wqtool/spark/workq_source.py) makes pyarrow arrays of them; tests/spark/test_workq_source.py
 * holds the rows equal to the reference reader's.
 */

enum {
    RC_OFFSET, RC_LENGTH, RC_INDEX, RC_PRIORITY, RC_PAYLOAD_LEN, RC_RESULT_LEN,         /* int64 */
    RC_TTR, RC_TTL, RC_MAX_ATTEMPTS, RC_MAX_FAILS,                                      /* uint64 */
    RC_AT, RC_TIME, RC_JOB_ID, RC_NAME, RC_SCHEDULED, RC_CREATED, RC_PAYLOAD, RC_RESULT, RC_CRC,   /* string */
    RC_CMD,                                                                             /* uint8 */
    RC_N
};
#define RC_FIRST_U64 RC_TTR
#define RC_FIRST_STR RC_AT

typedef struct {
    uint8_t *valid;     /* bitmap, max_rows bits */
    char *vals;         /* fixed-width values (max_rows of them) or the int32 offsets (max_rows + 1) */
    Buf data;           /* a string column's bytes */
    int nulls;
} RCol;

/* bytes.decode("latin-1") as UTF-8 */
static char *w_latin1_raw(char *p, const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned c = s[i];
        if (c < 0x80) {
            *p++ = (char)c;
        } else {
            *p++ = (char)(0xC0 | (c >> 6));
            *p++ = (char)(0x80 | (c & 0x3F));
        }
    }
    return p;
}

/* bytes.decode("utf-8", "backslashreplace") as UTF-8 (a byte that is not UTF-8 as the 4 characters \xNN) */
static char *w_text_raw(char *p, const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c < 0x80) {
            *p++ = (char)c;
            i++;
            continue;
        }
        size_t len = utf8_len(s + i, n - i);
        if (len) {
            memcpy(p, s + i, len);
            p += len;
            i += len;
        } else {
            *p++ = '\\';
            *p++ = 'x';
            *p++ = hexd[c >> 4];
            *p++ = hexd[c & 15];
            i++;
        }
    }
    return p;
}

static inline void rc_set(RCol *col, Py_ssize_t row, int valid)
{
    if (valid)
        col->valid[row >> 3] |= (uint8_t)(1u << (row & 7));
    else
        col->nulls = 1;
}

static inline void rc_i64(RCol *col, Py_ssize_t row, int valid, int64_t v)
{
    ((int64_t *)col->vals)[row] = valid ? v : 0;
    rc_set(col, row, valid);
}

static inline void rc_u64(RCol *col, Py_ssize_t row, int valid, uint64_t v)
{
    ((uint64_t *)col->vals)[row] = valid ? v : 0;
    rc_set(col, row, valid);
}

/* a string cell: room for `need` bytes at *out (NULL: no memory), closed by rc_end */
static inline char *rc_begin(RCol *col, size_t need)
{
    if (buf_room(&col->data, need + 1) < 0)     /* + 1: an empty cell still has a buffer to point into */
        return NULL;
    return col->data.p + col->data.n;
}

static inline void rc_end(RCol *col, Py_ssize_t row, int valid, char *o)
{
    if (valid)
        col->data.n = (size_t)(o - col->data.p);
    ((int32_t *)col->vals)[row + 1] = (int32_t)col->data.n;
    rc_set(col, row, valid);
}

static inline void rc_null(RCol *col, Py_ssize_t row)
{
    ((int32_t *)col->vals)[row + 1] = (int32_t)col->data.n;
    rc_set(col, row, 0);
}

/* render_bytes(b, mode) as raw text (mode 0: null) */
static int rc_bytes(RCol *col, Py_ssize_t row, const uint8_t *s, size_t n, int mode)
{
    if (mode == 0) {
        rc_null(col, row);
        return 0;
    }
    char *o = rc_begin(col, bytes_room(n, mode));
    if (o == NULL)
        return -1;
    if (mode == 1)
        o = w_hex(o, s, n);
    else if (mode == 2)
        o = w_b64(o, s, n);
    else
        o = w_text_raw(o, s, n);
    rc_end(col, row, 1, o);
    return 0;
}

static int rc_time(RCol *col, Py_ssize_t row, int valid, i128 ns)
{
    if (!valid) {
        rc_null(col, row);
        return 0;
    }
    char *o = rc_begin(col, 64);
    if (o == NULL)
        return -1;
    rc_end(col, row, 1, w_time(o, ns));
    return 0;
}

PyDoc_STRVAR(record_columns_doc,
"record_columns(data, pos, end, base, index, payload, max_rows, max_bytes) -> (pos, index, rows, why, columns)\n\n"
"dump's record rows (record_to_jsonable) of the records at data[pos:end] as Arrow column buffers, in C; stops\n"
"before the first record it refuses (why: the reason, else None).");

static PyObject *k_record_columns(PyObject *self, PyObject *args)
{
    PyObject *data;
    Py_ssize_t pos, end, max_rows, max_bytes, base_len;
    long long index;
    int mode;
    const char *base;
    if (!PyArg_ParseTuple(args, "Onny#Linn:record_columns", &data, &pos, &end, &base, &base_len, &index, &mode,
                          &max_rows, &max_bytes))
        return NULL;
    if (mode < 0 || mode > 3) {
        PyErr_SetString(PyExc_ValueError, "payload mode is 0..3");
        return NULL;
    }
    if (max_rows < 1 || max_rows > (1 << 24) || max_bytes < 1 || max_bytes > (1 << 30)) {
        PyErr_SetString(PyExc_ValueError, "max_rows is 1..2**24, max_bytes 1..2**30");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    RCol cols[RC_N];
    memset(cols, 0, sizeof cols);
    PyObject *ret = NULL, *out = NULL;
    const char *why = NULL;
    Py_ssize_t rows = 0;
    if (end > view.len || pos < 0) {
        PyErr_SetString(PyExc_ValueError, "end is past the end of data");
        goto done;
    }
    for (int k = 0; k < RC_N; k++) {
        size_t width = k == RC_CMD ? 1 : k >= RC_FIRST_STR ? 4 : 8;
        cols[k].valid = PyMem_Calloc((size_t)(max_rows + 8) / 8, 1);
        cols[k].vals = PyMem_Calloc((size_t)max_rows + 1, width);
        if (cols[k].valid == NULL || cols[k].vals == NULL) {
            PyErr_NoMemory();
            goto done;
        }
    }
    const uint8_t *d = (const uint8_t *)view.buf;
    size_t strbytes = 0;
    while (pos < end && rows < max_rows && (Py_ssize_t)strbytes < max_bytes) {
        RecF r;
        if ((why = rec_decode(d, pos, end, &r)) != NULL)
            break;
        int c = r.c, job = c <= 2, res = c == 3 || c == 4;
        Py_ssize_t row = rows;
        char *o;
        rc_i64(&cols[RC_OFFSET], row, 1, (int64_t)pos);
        rc_i64(&cols[RC_LENGTH], row, 1, (int64_t)(r.nxt - pos));
        rc_i64(&cols[RC_INDEX], row, 1, (int64_t)index);
        rc_i64(&cols[RC_PRIORITY], row, job, (int64_t)(r.zz >> 1) ^ -(int64_t)(r.zz & 1));
        rc_i64(&cols[RC_PAYLOAD_LEN], row, job, (int64_t)r.plen);
        rc_i64(&cols[RC_RESULT_LEN], row, res, (int64_t)r.rlen);
        rc_u64(&cols[RC_TTR], row, job, r.ttr);
        rc_u64(&cols[RC_TTL], row, job, r.ttl);
        rc_u64(&cols[RC_MAX_ATTEMPTS], row, job, r.ma);
        rc_u64(&cols[RC_MAX_FAILS], row, job, r.mf);
        ((uint8_t *)cols[RC_CMD].vals)[row] = (uint8_t)c;
        rc_set(&cols[RC_CMD], row, 1);
        if ((o = rc_begin(&cols[RC_AT], (size_t)base_len + 24)) == NULL)    /* offsets.at */
            goto done;
        memcpy(o, base, (size_t)base_len);
        o = w_hex64(W(o + base_len, "@0x"), (uint64_t)pos);
        rc_end(&cols[RC_AT], row, 1, o);
        if (rc_time(&cols[RC_TIME], row, 1, go_time_ns(d + pos)) < 0)
            goto done;
        if ((o = rc_begin(&cols[RC_JOB_ID], 40)) == NULL)
            goto done;
        rc_end(&cols[RC_JOB_ID], row, 1, w_uuid(o, r.jid));
        if (job) {
            if ((o = rc_begin(&cols[RC_NAME], 2 * (size_t)r.n + 1)) == NULL)
                goto done;
            rc_end(&cols[RC_NAME], row, 1, w_latin1_raw(o, d + r.pname, (size_t)r.n));
            const uint8_t *t = d + r.ptime;
            if (rc_time(&cols[RC_SCHEDULED], row, !go_time_is_zero(t), go_time_ns(t)) < 0 ||
                rc_time(&cols[RC_CREATED], row, 1, go_time_ns(t + GO_TIME_SIZE)) < 0 ||
                rc_bytes(&cols[RC_PAYLOAD], row, d + r.ppl, (size_t)r.plen, mode) < 0)
                goto done;
        } else {
            rc_null(&cols[RC_NAME], row);
            rc_null(&cols[RC_SCHEDULED], row);
            rc_null(&cols[RC_CREATED], row);
            rc_null(&cols[RC_PAYLOAD], row);
        }
        if (res) {
            if (rc_bytes(&cols[RC_RESULT], row, d + r.pres, (size_t)r.rlen, mode) < 0)
                goto done;
        } else {
            rc_null(&cols[RC_RESULT], row);
        }
        if ((o = rc_begin(&cols[RC_CRC], 8)) == NULL)
            goto done;
        rc_end(&cols[RC_CRC], row, 1, w_x08(o, r.stored));
        strbytes = 0;
        for (int k = RC_FIRST_STR; k < RC_CMD; k++)
            strbytes += cols[k].data.n;
        rows++;
        index++;
        pos = r.nxt;
    }
    out = PyTuple_New(RC_N);
    if (out == NULL)
        goto done;
    for (int k = 0; k < RC_N; k++) {
        size_t width = k == RC_CMD ? 1 : k >= RC_FIRST_STR ? 4 : 8;
        PyObject *valid = cols[k].nulls ? PyBytes_FromStringAndSize((char *)cols[k].valid, (rows + 7) / 8)
                                        : Py_NewRef(Py_None);
        PyObject *item;
        if (k >= RC_FIRST_STR && k < RC_CMD)
            item = Py_BuildValue("(Ny#y#)", valid, cols[k].data.p ? cols[k].data.p : "", (Py_ssize_t)cols[k].data.n,
                                 cols[k].vals, (Py_ssize_t)(width * (size_t)(rows + 1)));
        else
            item = Py_BuildValue("(Ny#O)", valid, cols[k].vals, (Py_ssize_t)(width * (size_t)rows), Py_None);
        if (valid == NULL || item == NULL) {
            Py_XDECREF(item);
            goto done;
        }
        PyTuple_SET_ITEM(out, k, item);
    }
    if (why != NULL)
        ret = Py_BuildValue("(nLnsO)", pos, index, rows, why, out);
    else
        ret = Py_BuildValue("(nLnOO)", pos, index, rows, Py_None, out);
done:
    Py_XDECREF(out);
    for (int k = 0; k < RC_N; k++) {
        PyMem_Free(cols[k].valid);
        PyMem_Free(cols[k].vals);
        PyMem_Free(cols[k].data.p);
    }
    PyBuffer_Release(&view);
    return ret;
}
