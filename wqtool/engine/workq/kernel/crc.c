/* CRC-32C: SSE4.2 crc32 instructions when the CPU has them (runtime check), else slice-by-8 tables (part of wqtool.engine.workq._kernel: a unity build, included by ../_kernel.c in order) */

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
