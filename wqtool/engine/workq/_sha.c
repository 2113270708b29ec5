/*
 * wqtool.engine.workq._sha: SHA-256 whose running state can leave the process and be taken up elsewhere.
 *
 * The workq state digest is one sha256 over every job's line in job-id order (replay.digest_start / digest_line),
 * and its bytes are pinned. A log's jobs split by id range into consecutive shares (FastReplay's id_range) can
 * hash their lines one after another in different processes only if a share hands its running state to the next
 * one: hashlib keeps it inside OpenSSL's EVP context, out of reach. This object is OpenSSL's own SHA-256
 * (libcrypto's SHA256_Init/Update/Final: the same block function as hashlib's, SHA-NI where the CPU has it), with
 * state() -> 112 bytes and Sha256(state) to go on from them. The digest equals hashlib.sha256's over the same
 * bytes (tests/engine/workq/test_sha.py's property test).
 *
 * Optional, as the other kernels: where libcrypto's headers are missing it is not built and the fleet keeps a
 * log whole in one task.
 */
#define PY_SSIZE_T_CLEAN
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <Python.h>
#include <openssl/sha.h>
#include <stdint.h>
#include <string.h>

#define STATE_SIZE 112            /* "WQS1", h[8], Nl, Nh, num (big-endian u32), then the 64-byte block buffer */

typedef struct {
    PyObject_HEAD
    SHA256_CTX ctx;
} Sha256;

static PyTypeObject Sha256Type;

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static int sha_init(Sha256 *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"state", NULL};
    Py_buffer st = {0};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|y*:Sha256", kwlist, &st))
        return -1;
    SHA256_Init(&self->ctx);
    if (st.buf == NULL)
        return 0;
    int bad = 0;
    const unsigned char *p = st.buf;
    if (st.len != STATE_SIZE || memcmp(p, "WQS1", 4) != 0)
        bad = 1;
    else {
        for (int i = 0; i < 8; i++)
            self->ctx.h[i] = get32(p + 4 + 4 * i);
        self->ctx.Nl = get32(p + 36);
        self->ctx.Nh = get32(p + 40);
        uint32_t num = get32(p + 44);
        if (num >= SHA256_CBLOCK)
            bad = 1;
        else {
            self->ctx.num = num;
            memcpy(self->ctx.data, p + 48, SHA256_CBLOCK);
        }
    }
    PyBuffer_Release(&st);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "Sha256: not a state() of this type (112 bytes, 'WQS1')");
        return -1;
    }
    return 0;
}

static PyObject *sha_update(Sha256 *self, PyObject *arg)
{
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0)
        return NULL;
    if (b.len >= 65536) {
        Py_BEGIN_ALLOW_THREADS
        SHA256_Update(&self->ctx, b.buf, (size_t)b.len);
        Py_END_ALLOW_THREADS
    } else
        SHA256_Update(&self->ctx, b.buf, (size_t)b.len);
    PyBuffer_Release(&b);
    Py_RETURN_NONE;
}

static PyObject *sha_state(Sha256 *self, PyObject *Py_UNUSED(ignored))
{
    unsigned char out[STATE_SIZE];
    memset(out, 0, sizeof out);
    memcpy(out, "WQS1", 4);
    for (int i = 0; i < 8; i++)
        put32(out + 4 + 4 * i, self->ctx.h[i]);
    put32(out + 36, self->ctx.Nl);
    put32(out + 40, self->ctx.Nh);
    put32(out + 44, self->ctx.num);
    memcpy(out + 48, self->ctx.data, self->ctx.num);     /* only the buffered bytes mean anything */
    return PyBytes_FromStringAndSize((const char *)out, STATE_SIZE);
}

static PyObject *sha_hexdigest(Sha256 *self, PyObject *Py_UNUSED(ignored))
{
    SHA256_CTX c = self->ctx;       /* the object can go on: finish a copy */
    unsigned char md[SHA256_DIGEST_LENGTH];
    char hex[2 * SHA256_DIGEST_LENGTH];
    static const char digits[] = "0123456789abcdef";
    SHA256_Final(md, &c);
    for (int i = 0; i < SHA256_DIGEST_LENGTH; i++) {
        hex[2 * i] = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 15];
    }
    return PyUnicode_FromStringAndSize(hex, sizeof hex);
}

static PyMethodDef sha_methods[] = {
    {"update", (PyCFunction)sha_update, METH_O, "Hash the bytes of a buffer (as hashlib's update)."},
    {"state", (PyCFunction)sha_state, METH_NOARGS,
     "The running state (112 bytes): Sha256(state) goes on from here, in this process or another."},
    {"hexdigest", (PyCFunction)sha_hexdigest, METH_NOARGS, "The digest of the bytes so far, as hex (as hashlib's)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject Sha256Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "wqtool.engine.workq._sha.Sha256",
    .tp_basicsize = sizeof(Sha256),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Sha256(state=None): SHA-256 whose running state() can be taken up by Sha256(state) elsewhere.",
    .tp_methods = sha_methods,
    .tp_init = (initproc)sha_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "wqtool.engine.workq._sha", "SHA-256 with a portable running state (libcrypto).", -1,
    NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__sha(void)
{
    if (PyType_Ready(&Sha256Type) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (m == NULL)
        return NULL;
    Py_INCREF(&Sha256Type);
    if (PyModule_AddObject(m, "Sha256", (PyObject *)&Sha256Type) < 0 ||
        PyModule_AddIntConstant(m, "STATE_SIZE", STATE_SIZE) < 0) {
        Py_DECREF(&Sha256Type);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
